"""GraSP on MetaQA: build the training pack of the bundled checkpoint, train it (frozen selector or
LoRA), and print the pack's statistics.

    python bench/grasp.py pack  --work /tmp/grasp [--train 800] [--val 50]
    python bench/grasp.py train --work /tmp/grasp --name frozen|lora [--lora] [--budget MIN] [--epochs N] [--device auto]
        [--layout after|interleaved] [--probe-weight W] [--threads N] [--init CHECKPOINT]
        (goes on from WORK/model-NAME where it exists, else starts from --init's weights, else from scratch)
    python bench/grasp.py stats --work /tmp/grasp
    python bench/grasp.py table --work /tmp/grasp   (reads WORK/eval/NAME-rRATIO/eval.json, written by
        `kgqa eval … --out WORK/eval/NAME-rRATIO [--drop-topic-edges RATIO --kb KB]`)

The split is the bundled KGFR checkpoint's: its MetaQA dev validation questions stay out of
training (bench/transfer.py::metaqa_split, seed 11). `kgqa eval --method grasp` on the validation
part gives the final numbers.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/transfer.py: the MetaQA split
STORE = ("oxigraph:///tmp/metaqa-store", "metaqa")
HOPS, PER_HOP = 3, (12, 12, 12)


def pack(work: Path, per_hop: tuple[int, int]) -> None:
    from kgqa.methods.grasp.data import build_pack, save_pack
    from kgqa.methods.kgfr.data import prepare
    from kgqa.methods.kgfr.scorer import BUNDLED_CHECKPOINT
    from kgqa.retrieval.entity_vectors import EntityVectors
    from kgqa.retrieval.store_url import open_store
    from kgqa.retrieval.text import TextEncoder
    from transfer import metaqa_split

    started = time.perf_counter()
    chosen, validation = metaqa_split(BUNDLED_CHECKPOINT, per_hop)
    store = open_store(*STORE)
    prepared = prepare(store, chosen, HOPS, 100, cache_dir=work / "cache")
    print(f"subgraphs: {len(prepared)} in {time.perf_counter() - started:.0f} s", flush=True)
    encoder = TextEncoder()
    examples = build_pack(prepared, EntityVectors(store, encoder), encoder, PER_HOP, validation)
    meta = {"kg": "metaqa", "split": f"MetaQA dev: {per_hop[0]}/hop of the bundled KGFR checkpoint's training part, {per_hop[1]}/hop "
            "of its validation part (seed 11)", "hops": HOPS, "lambda": 100, "per_hop": list(PER_HOP)}
    save_pack(examples, meta, work / "pack.pt")
    print(f"pack: {len(examples)} questions in {time.perf_counter() - started:.0f} s", flush=True)
    stats(work)


def stats(work: Path) -> None:
    from kgqa.methods.grasp.data import load_pack

    examples, meta = load_pack(work / "pack.pt")
    for hop in (1, 2, 3):
        part = [e for e in examples if e.hop == hop]
        if not part:
            continue
        labelled = [e for e in part if e.target]
        print(f"hop {hop}: {len(part)} questions, {len(labelled)} with an answer in the focus graph "
              f"({len(labelled) / len(part):.2f}); entities {sum(len(e.graph.names) for e in part) / len(part):.1f}, "
              f"facts {sum(e.graph.edge_index.shape[1] for e in part) / len(part):.1f}, "
              f"target names {sum(len(e.target or []) for e in labelled) / max(1, len(labelled)):.1f}")


def train(work: Path, name: str, lora: bool, budget: float, epochs: int, device: str, layout: str | None, probe_weight: float,
          start: Path | None) -> None:
    from kgqa.methods.grasp.data import load_pack
    from kgqa.methods.grasp.train import GraspTrainConfig, train as run

    examples, meta = load_pack(work / "pack.pt")
    out = work / f"model-{name}"
    init = str(out) if (out / "config.json").exists() else str(start) if start else None
    config = GraspTrainConfig(lora=lora, epochs=epochs, time_budget=budget * 60, init=init, data=meta, device=device,
                               layout=layout, probe_weight=probe_weight)
    result = run(examples, config, out, log=lambda line: print(f"[{name}] {line}", flush=True))
    print(json.dumps({k: v for k, v in result.items() if k != "history"}), flush=True)


def table(work: Path) -> None:
    """Hits@1 per hop of every evaluated configuration, the whole KG beside the incomplete copies."""
    runs: dict[str, dict[float, dict]] = {}
    for report in sorted((work / "eval").glob("*-r*/eval.json")):
        name, _, ratio = report.parent.name.rpartition("-r")
        runs.setdefault(name, {})[float(ratio)] = json.loads(report.read_text())
    ratios = sorted({r for by_ratio in runs.values() for r in by_ratio})
    head = " | ".join(f"{r:.0%} dropped: 1 / 2 / 3-hop (n)" for r in ratios)
    print(f"| configuration | {head} |")
    print("|---|" + "---|" * len(ratios))
    for name, by_ratio in runs.items():
        cells = []
        for r in ratios:
            groups = by_ratio.get(r, {}).get("groups")
            cells.append(" / ".join(f"{groups[f'{h}-hop']['hits1']:.2f}" for h in (1, 2, 3)) + f" ({groups['1-hop']['questions']})"
                         if groups else "—")
        print(f"| {name} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["pack", "train", "stats", "table"])
    parser.add_argument("--work", type=Path, default=Path("/tmp/grasp"))
    parser.add_argument("--train", type=int, default=800)
    parser.add_argument("--val", type=int, default=50)
    parser.add_argument("--name", default="frozen")
    parser.add_argument("--lora", action="store_true")
    parser.add_argument("--budget", type=float, default=60.0, help="minutes")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--device", default="auto", help="auto | cpu | cuda (the GNN and the selector LLM together)")
    parser.add_argument("--layout", default=None, choices=["after", "interleaved"],
                        help="where the selector reads the soft tokens (default: the checkpoint's it goes on from, else after)")
    parser.add_argument("--probe-weight", type=float, default=0.0, help="the GNN probe's loss beside eq. 9 (kgqa.methods.grasp.train)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--init", type=Path, default=None, help="a checkpoint whose weights a new WORK/model-NAME starts from")
    args = parser.parse_args()
    if args.command == "pack":
        pack(args.work, (args.train, args.val))
    elif args.command == "stats":
        stats(args.work)
    elif args.command == "table":
        table(args.work)
    else:
        if args.threads:
            import torch
            torch.set_num_threads(args.threads)
        train(args.work, args.name, args.lora, args.budget, args.epochs, args.device, args.layout, args.probe_weight, args.init)


if __name__ == "__main__":
    main()
