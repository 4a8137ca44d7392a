"""Load test of the HTTP service: `kgqa serve` (LLM-free kgfr) over a real Virtuoso holding the
MetaQA KB, driven from this (second) process by N concurrent clients for a fixed time on loopback.
Reports req/s, p50/p99 latency, errors by kind, and the service's RSS after warm-up and at the end.
Bounded in time (--seconds) and in count (--max-requests).

    .venv/bin/python bench/service_load.py [--seconds 60] [--clients 32] [--max-concurrent 32]

Prints a Markdown table; saves bench/results/service_load.json.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docker"))
from launchers import KgqaService, VirtuosoServer  # noqa: E402

from kgqa import open_store, open_writer  # noqa: E402
from kgqa.loaders import load_file  # noqa: E402
from kgqa.loaders.qa import read_qa  # noqa: E402

METAQA = ROOT.parent / "shared" / "data" / "metaqa"


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def run_clients(url: str, questions: list[tuple[str, list[str]]], clients: int, seconds: float, max_requests: int) -> dict:
    latencies: list[float] = []
    errors: dict[str, int] = {}
    lock = threading.Lock()
    deadline = time.monotonic() + seconds
    sent = [0]

    def client(seed: int) -> None:
        rng = random.Random(seed)
        with httpx.Client(timeout=120) as http:
            while time.monotonic() < deadline:
                with lock:
                    if sent[0] >= max_requests:
                        return
                    sent[0] += 1
                started = time.perf_counter()
                try:
                    question, topics = rng.choice(questions)
                    r = http.post(url + "/v1/ask", json={"question": question, "topics": topics})
                    kind = None if r.status_code == 200 else f"HTTP {r.status_code}"
                except httpx.HTTPError as error:
                    kind = type(error).__name__
                elapsed = time.perf_counter() - started
                with lock:
                    if kind:
                        errors[kind] = errors.get(kind, 0) + 1
                    else:
                        latencies.append(elapsed)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    ordered = sorted(latencies)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")  # noqa: E731
    return {"requests": len(latencies) + sum(errors.values()), "ok": len(latencies), "errors": errors, "wall_s": wall,
            "req_per_s": len(latencies) / wall, "p50_ms": 1000 * pick(0.50), "p99_ms": 1000 * pick(0.99),
            "mean_ms": 1000 * statistics.mean(latencies) if latencies else float("nan")}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--max-concurrent", type=int, default=32, help="the service's --max-concurrent")
    ap.add_argument("--max-requests", type=int, default=100_000)
    ap.add_argument("--warmup", type=float, default=10)
    ap.add_argument("--service-env", action="append", default=[], metavar="KEY=VALUE", help="extra environment for the service")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "service_load.json")
    args = ap.parse_args()
    if not METAQA.exists():
        print(f"needs {METAQA}", file=sys.stderr)
        return 2
    # each request names its topic entities (as the dev files give them): the load is on retrieval and
    # scoring, not on questions whose entities the linker misses (those get 422 by design)
    questions = [(ex.question, list(ex.topics)) for hop in (1, 2, 3) for ex in read_qa(METAQA / f"{hop}-hop" / "qa_dev.txt")]
    with tempfile.TemporaryDirectory() as tmp, VirtuosoServer(Path(tmp) / "virtuoso") as virtuoso:
        writer = open_writer(virtuoso.writer_url, "metaqa")
        load_file(writer, METAQA / "kb_reconstructed.txt")
        writer.close()
        reader = open_store("sparql+" + virtuoso.sparql_url, "metaqa")
        labels = sorted({t for _, topics in questions for t in topics})
        known = {label for i in range(0, len(labels), 1000) for label, hits in reader.resolve(labels[i:i + 1000]).items() if hits}
        reader.close()
        questions = [(q, topics) for q, topics in questions if topics and all(t in known for t in topics)]
        env = dict(item.split("=", 1) for item in args.service_env)
        with KgqaService("sparql+" + virtuoso.sparql_url, "--max-concurrent", str(args.max_concurrent),
                         kg="metaqa", log_dir=Path(tmp), env=env) as service:
            assert service.proc is not None
            pid = service.proc.pid
            warm = run_clients(service.url, questions, args.clients, args.warmup, args.max_requests)
            rss_start = rss_mb(pid)
            samples: list[float] = []
            stop_sampling = threading.Event()

            def sample() -> None:
                while not stop_sampling.wait(5):
                    samples.append(rss_mb(pid))

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            result = run_clients(service.url, questions, args.clients, args.seconds, args.max_requests)
            stop_sampling.set()
            rss_end = rss_mb(pid)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(service.log_path, args.out.with_suffix(".log"))  # the service's own log, errors included
    result.update({"rss_samples_mb": samples, "service_env": env, "questions_pool": len(questions), "clients": args.clients, "seconds": args.seconds, "max_concurrent": args.max_concurrent,
                   "warmup_requests": warm["requests"], "rss_start_mb": rss_start, "rss_end_mb": rss_end,
                   "rss_growth": (rss_end - rss_start) / rss_start})
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    errors = ", ".join(f"{k}: {v}" for k, v in result["errors"].items()) or "0"
    print(f"`kgqa serve` (kgfr, no LLM) over Virtuoso with the MetaQA KB; {args.clients} clients for {args.seconds:.0f} s "
          f"from a second process on loopback (after {args.warmup:.0f} s warm-up with as many clients; RSS measured after it)\n")
    print("| requests | req/s | p50 ms | p99 ms | p99/p50 | errors | RSS start MB | RSS end MB | RSS growth |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(f"\nRSS every 5 s (MB): {', '.join(f'{x:.0f}' for x in samples)}; service environment: {env or 'default'}\n")
    print(f"| {result['requests']} | {result['req_per_s']:.1f} | {result['p50_ms']:.0f} | {result['p99_ms']:.0f} | "
          f"{result['p99_ms'] / result['p50_ms']:.1f} | {errors} | {rss_start:.0f} | {rss_end:.0f} | {100 * result['rss_growth']:+.1f}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
