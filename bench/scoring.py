"""KGFR scoring throughput: questions/s of batched scoring for 1/2/3-hop APP subgraphs (λ=100) of
MetaQA dev questions (question and relation embeddings precomputed), end to end (link → retrieve →
score) on the embedded store, and peak memory. CPU threads as given (--threads, default all cores);
CUDA too where present. Prints Markdown tables; saves bench/results/scoring.json.

    .venv/bin/python bench/scoring.py [--questions 256] [--checkpoint DIR] [--save-packs DIR]
    python bench/scoring.py --packs DIR          # on a machine without the store (a GPU box)
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from kgqa.methods.kgfr.batch import CPU_EDGE_BUDGET, runs_within
from kgqa.methods.kgfr.pack import PackedQA

ROOT = Path(__file__).resolve().parents[1]
METAQA = ROOT.parent / "shared" / "data" / "metaqa"
REPEATS = 5
BATCH_SIZES = (1, 32, 128)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def scoring_rows(model, packs: dict[int, PackedQA], devices: list[str], cpu_budget: int | None) -> list[dict]:  # type: ignore[no-untyped-def]
    """Questions/s of the model alone (batches already on the device) and with batch assembly. On CPU
    a batch is scored as the engine's scorer does it: in model calls of at most `cpu_budget` edges."""
    rows = []
    for hop, data in packs.items():
        usable = [i for i in range(len(data)) if data.has_subgraph(i)]
        sizes = [int(data.num_nodes[i]) for i in usable]
        edges = [int(data.edge_ptr[i + 1] - data.edge_ptr[i]) for i in usable]
        for device in devices:
            model = model.to(device)
            budget = cpu_budget if device == "cpu" else None
            runs: dict[int, dict] = {}
            for batch_size in BATCH_SIZES:
                chunks = [
                    [chunk[i] for i in run]
                    for start in range(0, len(usable), batch_size)
                    for chunk in [usable[start : start + batch_size]]
                    for run in runs_within([2 * int(data.edge_ptr[i + 1] - data.edge_ptr[i]) for i in chunk], budget)
                ]
                t = time.perf_counter()
                built = [data.batch(c) for c in chunks]
                runs[batch_size] = {"calls": len(chunks), "build_s": time.perf_counter() - t,
                                    "batches": [b.to(device) for b in built], "score_s": float("inf")}
            with torch.no_grad():
                for batch_size in BATCH_SIZES:
                    model(runs[batch_size]["batches"][0])  # warm-up
                # the best of a few passes, the batch sizes taking turns: this VM's speed drifts by ±25 %
                # over seconds, which would otherwise favour whichever size ran in a fast stretch
                for _ in range(REPEATS):
                    for batch_size in BATCH_SIZES:
                        if device == "cuda":
                            torch.cuda.synchronize()
                        t = time.perf_counter()
                        for b in runs[batch_size]["batches"]:
                            model(b)
                        if device == "cuda":
                            torch.cuda.synchronize()
                        runs[batch_size]["score_s"] = min(runs[batch_size]["score_s"], time.perf_counter() - t)
            for batch_size, run in runs.items():
                rows.append({
                    "hops": hop, "device": device, "batch": batch_size, "questions": len(usable), "model_calls": run["calls"],
                    "edge_budget": budget,
                    "nodes_mean": statistics.mean(sizes), "edges_mean": statistics.mean(edges),
                    "q_per_s": len(usable) / run["score_s"], "q_per_s_with_batching": len(usable) / (run["score_s"] + run["build_s"]),
                })
                print(f"hops={hop} {device} batch={batch_size}: {rows[-1]['q_per_s']:,.0f} q/s", file=sys.stderr)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", type=int, default=256, help="questions per hop")
    ap.add_argument("--checkpoint", type=Path, default=None)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--cpu-edge-budget", type=int, default=CPU_EDGE_BUDGET,
                    help="edges per model call on CPU, as the engine's scorer splits a batch (0: no split)")
    ap.add_argument("--save-packs", type=Path, help="also write the per-hop subgraphs as packs here (score-<hop>.npz)")
    ap.add_argument("--packs", type=Path, help="score the packs in this folder only: no store, no encoder (e.g. on a GPU machine)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "scoring.json")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    e2e: list[dict] = []
    if args.packs:  # the store, loaders and encoder are not imported: a GPU box may lack them
        from kgqa.methods.kgfr.scorer import BUNDLED_CHECKPOINT
        from kgqa.methods.kgfr.train import load_checkpoint

        model, _ = load_checkpoint(args.checkpoint or BUNDLED_CHECKPOINT, "cpu")
        rows = scoring_rows(model, {hop: PackedQA.load(args.packs / f"score-{hop}.npz") for hop in (1, 2, 3)}, devices, args.cpu_edge_budget or None)
    else:
        from kgqa.methods.kgfr.answer import KGFRAnswerer
        from kgqa.methods.kgfr.data import prepare
        from kgqa.methods.kgfr.pack import pack
        from kgqa.loaders import load_file
        from kgqa.loaders.qa import read_qa
        from kgqa.sparql.embedded import EmbeddedWriter
        from kgqa.retrieval.text import TextEncoder

        if not METAQA.exists():
            print(f"needs {METAQA}", file=sys.stderr)
            return 2
        with tempfile.TemporaryDirectory() as tmp:
            writer = EmbeddedWriter.open(Path(tmp) / "store", "metaqa")
            load_file(writer, METAQA / "kb_reconstructed.txt")
            store = writer.reader()
            encoder = TextEncoder()
            answerer = KGFRAnswerer(store, args.checkpoint, encoder)
            packs = {}
            for hop in (1, 2, 3):
                examples = random.Random(hop).sample(read_qa(METAQA / f"{hop}-hop" / "qa_dev.txt"), args.questions)
                # subgraphs of the question's own depth (λ=100), not the 3-hop ones training uses
                packs[hop] = pack(prepare(store, examples, hop, 100), encoder)
                if args.save_packs:
                    packs[hop].save(args.save_packs / f"score-{hop}.npz")
                times = {"link": [], "retrieve": [], "score": [], "total": []}
                for e in examples[:64]:
                    result = answerer.answer(e.question)
                    for stage in times:
                        times[stage].append(result.seconds.get(stage, 0.0))
                e2e.append({"hops_of_question": hop, "questions": len(times["total"]), **{f"{k}_ms_p50": 1000 * statistics.median(v) for k, v in times.items()},
                            "q_per_s": len(times["total"]) / sum(times["total"])})
            rows = scoring_rows(answerer.model, packs, devices, args.cpu_edge_budget or None)
    print(f"\n## Batched KGFR scoring (questions/s; {torch.get_num_threads()} CPU threads; embeddings precomputed)\n")
    print("| subgraph hops (λ=100) | device | batch | edge budget per call | model calls | questions | nodes (mean) | edges (mean) | q/s (model) | q/s (incl. batch assembly) |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['hops']} | {r['device']} | {r['batch']} | {r['edge_budget'] or '–'} | {r['model_calls']} | {r['questions']} | {r['nodes_mean']:.0f} | {r['edges_mean']:.0f} | "
              f"{r['q_per_s']:,.0f} | {r['q_per_s_with_batching']:,.0f} |")
    print("\n## End to end on the embedded store (link → retrieve 3 hops → score), one question at a time\n")
    print("| question hops | questions | link ms p50 | retrieve ms p50 | score ms p50 | total ms p50 | q/s |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for r in e2e:
        print(f"| {r['hops_of_question']} | {r['questions']} | {r['link_ms_p50']:.1f} | {r['retrieve_ms_p50']:.1f} | {r['score_ms_p50']:.1f} | {r['total_ms_p50']:.1f} | {r['q_per_s']:.1f} |")
    print(f"\npeak RSS {peak_rss_mb():,.0f} MB")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"scoring": rows, "end_to_end": e2e, "peak_rss_mb": peak_rss_mb()}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
