"""Load test of the HTTP service: `kgqa serve` (LLM-free kgfr) over a real Virtuoso holding the
MetaQA KB, driven from this (second) process by N concurrent clients for a fixed time on loopback.
Reports req/s, p50/p99 latency, errors by kind, and the service's RSS after warm-up and at the end.
Bounded in time (--seconds) and in count (--max-requests).

    .venv/bin/python bench/service_load.py [--seconds 60] [--clients 32] [--max-concurrent N] [--compare REV]

`--compare REV` also runs the service of git revision REV (e.g. the commit before a change) against
the same Virtuoso in the same run, first, so that before and after share the machine's state. Each
service gets its own defaults unless --max-concurrent is given (REV's runs with --max-concurrent 32,
as this bench used to).

It also counts where the CPU went during the measured window (/proc: the service, the store server,
this client process, and the whole machine), as core-ms per answered request, and the ceiling that
puts on req/s: the machine's cores divided by the core-ms all three spend on one request.

Prints Markdown tables; saves bench/results/service_load.json.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import shutil
import subprocess
import tarfile
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


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process, all its threads (/proc/PID/stat fields 14 and 15); NaN
    once it has exited."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy_s() -> float:
    """CPU seconds all cores spent outside idle and iowait since boot (/proc/stat's first line)."""
    user, nice, system, idle, iowait, irq, softirq, steal = (int(v) for v in Path("/proc/stat").read_text().split()[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def run_clients(url: str, questions: list[tuple[str, list[str]]], clients: int, seconds: float, max_requests: int) -> dict:
    latencies: list[float] = []
    errors: dict[str, int] = {}
    examples: dict[str, list[dict]] = {}  # a few failed requests per kind, with what the service said
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
                    said = r.text[:300]
                except httpx.HTTPError as error:
                    kind, said = type(error).__name__, str(error)[:300]
                elapsed = time.perf_counter() - started
                with lock:
                    if kind:
                        errors[kind] = errors.get(kind, 0) + 1
                        if len(examples.setdefault(kind, [])) < 5:
                            examples[kind].append({"question": question, "topics": topics, "reply": said})
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
    return {"requests": len(latencies) + sum(errors.values()), "ok": len(latencies), "errors": errors, "error_examples": examples, "wall_s": wall,
            "req_per_s": len(latencies) / wall, "p50_ms": 1000 * pick(0.50), "p99_ms": 1000 * pick(0.99),
            "mean_ms": 1000 * statistics.mean(latencies) if latencies else float("nan")}


def package_of(rev: str, into: Path) -> Path:
    """REV's source laid out as the installed `kgqa` package (engine/ as kgqa/, with its sparql/,
    cypher/ and loaders/ inside), for PYTHONPATH: it then wins over the editable install."""
    archive = subprocess.run(["git", "archive", rev, "engine", "sparql", "cypher", "loaders"], cwd=ROOT, capture_output=True, check=True).stdout
    src = into / "src"
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(src)
    package = into / "pkg" / "kgqa"
    shutil.copytree(src / "engine", package)
    for sub in ("sparql", "cypher", "loaders"):
        shutil.copytree(src / sub, package / sub)
    return into / "pkg"


def load_service(store: str, store_pid: int, questions: list, args: argparse.Namespace, log_dir: Path, env: dict[str, str],
                 flags: list[str]) -> dict:
    with KgqaService(store, *flags, kg="metaqa", log_dir=log_dir, env=env) as service:
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
        processes = {"service": pid, "store": store_pid, "clients": os.getpid()}
        cpu_before = {name: cpu_s(p) for name, p in processes.items()} | {"machine": machine_busy_s()}
        result = run_clients(service.url, questions, args.clients, args.seconds, args.max_requests)
        cpu_after = {name: cpu_s(p) for name, p in processes.items()} | {"machine": machine_busy_s()}
        stop_sampling.set()
        result["cpu_s"] = {name: cpu_after[name] - cpu_before[name] for name in cpu_after}
        rss_end = rss_mb(pid)
        result.update({"rss_samples_mb": samples, "service_env": env, "flags": flags, "warmup_requests": warm["requests"],
                       "rss_start_mb": rss_start, "rss_end_mb": rss_end, "rss_growth": (rss_end - rss_start) / rss_start,
                       "log": service.log_path.read_text(errors="replace")[-5000:]})
    return result


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--max-concurrent", type=int, default=None, help="the service's --max-concurrent (default: its own)")
    ap.add_argument("--compare", metavar="REV", help="also run the service of this git revision, first, in the same run")
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
        assert virtuoso.proc is not None
        env = dict(item.split("=", 1) for item in args.service_env)
        store = "sparql+" + virtuoso.sparql_url
        runs: dict[str, dict] = {}
        if args.compare:
            old_flags = ["--max-concurrent", str(args.max_concurrent or 32)]
            pythonpath = package_of(args.compare, Path(tmp) / "compare")
            runs[f"before ({args.compare})"] = load_service(store, virtuoso.proc.pid, questions, args, Path(tmp), {**env, "PYTHONPATH": str(pythonpath)}, old_flags)
        flags = ["--max-concurrent", str(args.max_concurrent)] if args.max_concurrent else []
        runs["now"] = load_service(store, virtuoso.proc.pid, questions, args, Path(tmp), env, flags)
    summary = {"questions_pool": len(questions), "clients": args.clients, "seconds": args.seconds, "runs": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=1))
    print(f"`kgqa serve` (kgfr, no LLM) over Virtuoso with the MetaQA KB; {args.clients} clients for {args.seconds:.0f} s "
          f"from a second process on loopback (after {args.warmup:.0f} s warm-up with as many clients; RSS measured after it)\n")
    print("| service | flags | requests | req/s | p50 ms | p99 ms | p99/p50 | errors | RSS start MB | RSS end MB | RSS growth |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in runs.items():
        errors = ", ".join(f"{k}: {v}" for k, v in r["errors"].items()) or "0"
        print(f"| {name} | {' '.join(r['flags']) or 'defaults'} | {r['requests']} | {r['req_per_s']:.1f} | {r['p50_ms']:.0f} | {r['p99_ms']:.0f} | "
              f"{r['p99_ms'] / r['p50_ms']:.1f} | {errors} | {r['rss_start_mb']:.0f} | {r['rss_end_mb']:.0f} | {100 * r['rss_growth']:+.1f}% |")
    cores = len(os.sched_getaffinity(0))
    print(f"\nCPU during the measured window, core-ms per answered request ({cores} cores; the ceiling is {cores} × 1000 ms "
          "over what the service, the store and the clients spend on one request):\n")
    print("| run | service | store (Virtuoso) | clients | all three | whole machine (any process) | machine busy | req/s ceiling | req/s measured |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in runs.items():
        per = {k: 1000 * v / max(1, r["ok"]) for k, v in r["cpu_s"].items()}
        three = per["service"] + per["store"] + per["clients"]
        busy = r["cpu_s"]["machine"] / (cores * r["wall_s"])
        print(f"| {name} | {per['service']:.1f} | {per['store']:.1f} | {per['clients']:.1f} | {three:.1f} | {per['machine']:.1f} | "
              f"{100 * busy:.0f}% | {cores * 1000 / three if three > 0 else float('nan'):.1f} | {r['req_per_s']:.1f} |")
    if len(runs) == 2:
        before, now = runs.values()
        print(f"\nreq/s now / before: {now['req_per_s'] / before['req_per_s']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
