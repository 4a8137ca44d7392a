"""The real BioKG (NCBI Gene's org.Hs.eg.sqlite + GO.sqlite from Debian, `kgqa load --format biokg`) in
each store, measured as bench/scale.py measures its generated KGs: load seconds and facts/s, the
loader's and the server's peak RSS, disk, the first answer in a fresh process, ask p50/p99 through one
warm Engine, linking and Hits@1 on bench/biokg_questions.py's generated questions (per hop) and its
hand-written ones, and APP retrieval p50 from the linked topics.

    .venv/bin/python bench/biokg_stores.py --work DIR [--stores embedded,virtuoso,neo4j] [--per-template 4]
                                           [--first-runs 2] [--keep-stores]

DIR/questions-generated.jsonl and DIR/questions-hand.jsonl hold the questions (answers computed from the
files), DIR/stores/STORE each store (deleted after its row unless --keep-stores), DIR/logs the commands'
output, DIR/results.json a row per store: a store with a row there is skipped when the command is run
again. Hits@1 and linking compare labels (the questions name answers and topics as a store shows them).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import (  # noqa: E402
    STORES,
    _forget_shared_encoder,
    app_times,
    du_bytes,
    fmt,
    kgqa_cache,
    kgqa_command,
    log,
    open_cell_store,
    pct,
    read_jsonl,
    run_measured,
    tail,
    vm_hwm_kb,
)

KG = "biokg"


def questions(work: Path, per_template: int) -> dict[str, list[dict]]:
    generated, hand = work / "questions-generated.jsonl", work / "questions-hand.jsonl"
    if not (generated.exists() and hand.exists()):
        subprocess.run([sys.executable, str(Path(__file__).resolve().parent / "biokg_questions.py"), "--out", str(generated), "--hand", str(hand),
                        "--per-template", str(per_template)], check=True)
    made = read_jsonl(generated)
    return {**{f"generated {h}-hop": [q for q in made if q["hop"] == h] for h in sorted({q["hop"] for q in made})}, "hand-written": read_jsonl(hand)}


def ask_sets(engine, sets: dict[str, list[dict]]) -> tuple[dict[str, dict], list[str]]:  # type: ignore[no-untyped-def]
    """Each set's questions through the warm engine: seconds, linking (a gold topic's label among the
    linked topics'), Hits@1 (the first answer's label among the gold answers); and the linked topics' IRIs."""
    out, topics = {}, []
    for name, qs in sets.items():
        seconds, linked, hits, errors = [], 0, 0, []
        for q in qs:
            started = time.perf_counter()
            try:
                answer = engine.ask(q["question"])
            except Exception as exc:  # a store timeout, say: counted, and the run goes on
                errors.append(f"{q['question']!r}: {type(exc).__name__}: {exc}"[:300])
                continue
            seconds.append(time.perf_counter() - started)
            linked += bool({t.get("label") for t in answer.topics} & set(q["topics"]))
            hits += bool(answer.answers) and answer.answers[0].label in set(q["answers"])
            topics += [t["iri"] for t in answer.topics if t.get("label") in q["topics"]]
        n = len(qs)
        out[name] = {"n": n, "p50_ms": 1000 * pct(seconds, 50) if seconds else None, "p99_ms": 1000 * pct(seconds, 99) if seconds else None,
                     "linking": linked / n if n else None, "hits1": hits / n if n else None, "errors": errors}
    return out, list(dict.fromkeys(topics))


def run_store(store: str, files: list[Path], sets: dict[str, list[dict]], work: Path, args) -> dict:  # type: ignore[no-untyped-def]
    from kgqa import Engine

    cell_dir, logs = work / "stores" / store, work / "logs"
    shutil.rmtree(cell_dir, ignore_errors=True)  # a load that did not finish: anew
    cell_dir.mkdir(parents=True)
    logs.mkdir(exist_ok=True)
    env = {**os.environ, "KGQA_CACHE": str(cell_dir / "cache")}
    warm_up = sets["hand-written"][0]["question"]
    first_questions = [q["question"] for q in sets["hand-written"][: args.first_runs]]
    with ExitStack() as servers:
        writer_url, reader_url, server_pid, disk_paths = open_cell_store(store, cell_dir, servers, args)
        with kgqa_cache(cell_dir / "cache"):
            log(f"{store}: loading {', '.join(f.name for f in files)} into {writer_url}")
            load_log = logs / f"{store}-load.log"
            run = run_measured([*kgqa_command(), "load", *map(str, files), "--kg", KG, "--store", writer_url, "--format", "biokg"], env, load_log)
            if run["rc"] != 0:
                raise RuntimeError(f"kgqa load exited with {run['rc']}:\n{tail(load_log)}")
            held = re.findall(r"now holds ([0-9,]+) facts", tail(load_log, 5000))
            if not held:
                raise RuntimeError(f"{load_log}: kgqa load did not say how many facts the KG holds:\n{tail(load_log)}")
            facts = int(held[-1].replace(",", ""))
            row = {"store": store, "kg": KG, "facts": facts, "load_s": run["seconds"], "facts_per_s": facts / run["seconds"],
                   "loader_rss_mb": run["rss_mb"], "server_rss_load_mb": (vm_hwm_kb(server_pid) or 0) / 1024 if server_pid else None,
                   "disk_mb": du_bytes(*disk_paths) / 2**20}
            log(f"{store}: {facts:,} facts loaded in {run['seconds']:.1f}s, loader peak RSS {run['rss_mb']:,.0f} MB, disk {row['disk_mb']:,.0f} MB")
            first = []
            for question in first_questions:
                run = run_measured([*kgqa_command(), "ask", question, "--store", reader_url, "--kg", KG, "--json"], env, logs / f"{store}-first-answer.log")
                if run["rc"] != 0:
                    raise RuntimeError(f"kgqa ask exited with {run['rc']}:\n{tail(logs / f'{store}-first-answer.log')}")
                first.append(run["seconds"])
                log(f"{store}: first answer in a fresh process: {run['seconds']:.1f}s")
            with Engine(reader_url, kg=KG) as engine:
                engine.ask(warm_up)  # models loaded, caches filled: not timed
                asked, topics = ask_sets(engine, sets)
                row.update(app_times(engine.store, topics[: args.app_topics]))
            _forget_shared_encoder()
        row["server_rss_mb"] = (vm_hwm_kb(server_pid) or 0) / 1024 if server_pid else None
    row.update({"first_answer_s": statistics.median(first) if first else None, "first_answer_runs_s": first, "sets": asked})
    if not args.keep_stores:
        shutil.rmtree(cell_dir, ignore_errors=True)
    return row


def print_table(rows: list[dict]) -> None:
    names = list(rows[0]["sets"]) if rows else []
    print("\n| store | facts | load s | facts/s | loader peak RSS MB | server peak RSS MB (load / all) | disk MB | first answer s | "
          + " | ".join(f"{n}: n, Hits@1, ask p50 ms" for n in names) + " | linking (all) | APP p50 ms (edges) |")
    print("|---|" + "---:|" * (9 + len(names)))
    for r in rows:
        sets = r["sets"]
        linked = sum(s["linking"] * s["n"] for s in sets.values()) / max(1, sum(s["n"] for s in sets.values()))
        server = f"{fmt(r['server_rss_load_mb'])} / {fmt(r['server_rss_mb'])}" if r["server_rss_mb"] else "–"
        print(f"| {r['store']} | {fmt(r['facts'])} | {fmt(r['load_s'], ',.1f')} | {fmt(r['facts_per_s'])} | {fmt(r['loader_rss_mb'])} | {server} | "
              f"{fmt(r['disk_mb'])} | {fmt(r['first_answer_s'], '.1f')} | "
              + " | ".join(f"{s['n']}, {fmt(s['hits1'], '.2f')}, {fmt(s['p50_ms'])}" for s in sets.values())
              + f" | {linked:.2f} | {fmt(r['app_p50_ms'])} ({fmt(r['app_edges_mean'])}) |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--stores", default=",".join(STORES))
    ap.add_argument("--per-template", type=int, default=4, help="generated questions per template (bench/biokg_questions.py)")
    ap.add_argument("--first-runs", type=int, default=2)
    ap.add_argument("--app-topics", type=int, default=40, help="linked topics APP is timed from")
    ap.add_argument("--keep-stores", action="store_true")
    ap.add_argument("--neo4j-heap", default="2g")
    ap.add_argument("--neo4j-page-cache-mb", type=int, default=1024)
    args = ap.parse_args()
    from kgqa.loaders.biokg import fetch

    fetched = fetch()
    files = [fetched.org, fetched.go]
    args.work.mkdir(parents=True, exist_ok=True)
    sets = questions(args.work, args.per_template)
    log("questions: " + ", ".join(f"{name} {len(qs)}" for name, qs in sets.items()))
    results_path = args.work / "results.json"
    rows = json.loads(results_path.read_text())["rows"] if results_path.exists() else []
    for store in args.stores.split(","):
        if any(r["store"] == store for r in rows):
            log(f"{store}: measured before ({results_path}); skipped")
            continue
        rows.append(run_store(store, files, sets, args.work, args))
        results_path.write_text(json.dumps({"rows": rows}, indent=1) + "\n")
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
