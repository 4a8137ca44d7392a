"""RAPL on MetaQA: build the training pack of the bundled checkpoint, train it (and the ablations),
and print their validation tables.

    python bench/rapl.py pack  --work /tmp/rapl [--rationaliser encoder|shortest] [--per-hop 4000] [--neighbours 30] [--pack NAME]
    python bench/rapl.py train --work /tmp/rapl --name main [--pack encoder] [--no-lookahead] [--no-step-relation] [--budget MIN] [--epochs N]
                               [--init DIR] [--lr LR]
    python bench/rapl.py table --work /tmp/rapl
    python bench/rapl.py labels --work /tmp/rapl [--pack encoder]

The split is the bundled KGFR checkpoint's: its MetaQA dev validation questions stay out of training;
training takes --per-hop questions per hop of the rest (seed 11; 4,000 by default, 6,000 for the
bundled checkpoint's last stage) and 200 per hop of the validation part are the pack's validation set.
With --per-hop 6000 these are the questions of bench/transfer.py's metaqa-bundle pack, so its
retrieved subgraphs are reused from --cache when present. `kgqa eval --method rapl` on the whole
validation part gives the final numbers; the checkpoint's README lists the stages that trained it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/transfer.py: the MetaQA split
PER_HOP = (4000, 200)
STORE = ("oxigraph:///tmp/metaqa-store", "metaqa")


def pack(work: Path, rationaliser_name: str, cache: Path, name: str, per_hop: int = PER_HOP[0], neighbours: int | None = None) -> None:
    """Writes WORK/NAME.npz and its labelling log WORK/labels-NAME.jsonl."""
    from kgqa.methods.kgfr.data import prepare
    from kgqa.methods.kgfr.scorer import BUNDLED_CHECKPOINT
    from transfer import metaqa_split
    from kgqa.methods.rapl.data import build_pack
    from kgqa.methods.rapl.rationalise import NEIGHBOURS, rationaliser
    from kgqa.retrieval.store_url import open_store
    from kgqa.retrieval.text import TextEncoder

    work.mkdir(parents=True, exist_ok=True)
    base = cache.parent / "today-checkpoint" if (cache.parent / "today-checkpoint").exists() else BUNDLED_CHECKPOINT
    chosen, validation = metaqa_split(base, (per_hop, PER_HOP[1]))
    prepared = prepare(open_store(*STORE), chosen, 3, 100, cache_dir=cache)
    encoder = TextEncoder()
    meta = {"kg": "metaqa", "split": f"MetaQA dev: {per_hop}/hop of the bundled KGFR checkpoint's training part, {PER_HOP[1]}/hop of its "
            "validation part (seed 11)", "hops": 3, "lambda": 100}
    data = build_pack(prepared, encoder, rationaliser(rationaliser_name, encoder), validation, meta, log_path=work / f"labels-{name}.jsonl",
                      neighbours=NEIGHBOURS if neighbours is None else neighbours)
    data.save(work / f"{name}.npz")
    print(f"{name}: {len(data)} questions, {json.loads(data.meta)['labelled']} with a rational path", flush=True)


def train(work: Path, name: str, pack_name: str, lookahead: bool, budget: float, epochs: int, step_relation: bool = True,
          init_from: Path | None = None, lr: float = 1e-3) -> None:
    """Resumes WORK/model-NAME when it holds weights, else starts from `init_from` (or from scratch)."""
    from kgqa.methods.rapl.data import RAPLPack
    from kgqa.methods.rapl.train import RAPLTrainConfig, train as run

    data = RAPLPack.load(work / f"{pack_name}.npz")
    out = work / f"model-{name}"
    init = str(out) if (out / "model.safetensors").exists() else (str(init_from) if init_from else None)
    config = RAPLTrainConfig(lookahead=lookahead, step_relation=step_relation, lr=lr, device="cpu", epochs=epochs, time_budget=budget * 60, init=init,
                             split={"pack": pack_name, **json.loads(data.meta)})
    result = run(data, config, out, log=lambda line: print(f"[{name}] {line}", flush=True))
    (out / "done").write_text(json.dumps({k: v for k, v in result.items() if k != "history"}) + "\n")


def table(work: Path, at_epoch: int | None) -> None:
    """Each run's best epoch, or its epoch `at_epoch` (to compare runs trained for different lengths)."""
    print("| run | labels | look-ahead | step relation | epochs run | val Hits@1 | 1-hop | 2-hop | 3-hop | path answer recall |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|---:|")
    for out in sorted(work.glob("model-*")):
        meta = json.loads((out / "config.json").read_text())
        rows = meta["history"]
        if not rows:
            print(f"| {out.name[6:]} | {meta['train']['split'].get('pack')} | no epoch kept | | 0 | | | | | |")
            continue
        best = rows[at_epoch - 1] if at_epoch and len(rows) >= at_epoch else max(rows, key=lambda r: r.get("val_all", -1))
        print(f"| {out.name[6:]} | {meta['train']['split'].get('pack')} | {meta['model']['lookahead']} | {meta['model'].get('step_relation', False)} | {len(rows)} | {best.get('val_all', float('nan')):.3f} | "
              + " | ".join(f"{best.get(f'val_hop{h}', float('nan')):.3f}" for h in (1, 2, 3)) + f" | {best.get('val_all_recall', float('nan')):.3f} |")


# MetaQA's question types name their hops ("actor_to_movie_to_director"); each hop is one relation read
# forward or backward. Used only to audit labels, never to make them.
QTYPE_RELATION = {
    ("movie", "director"): "directed by", ("director", "movie"): "directed", ("movie", "writer"): "written by",
    ("writer", "movie"): "wrote", ("movie", "actor"): "starred actors", ("actor", "movie"): "starred actors of",
    ("movie", "year"): "release year", ("movie", "genre"): "has genre", ("movie", "language"): "in language",
    ("movie", "tags"): "has tags", ("tag", "movie"): "tags of", ("movie", "imdbrating"): "has imdb rating",
    ("movie", "imdbvotes"): "has imdb votes",
}


def labels(work: Path, pack_name: str) -> None:
    """How often the rationaliser's chain is the one MetaQA's question type names (qa_dev_qtype.txt)."""
    from transfer import SHARED

    expected = {}
    for hop in (1, 2, 3):
        kinds = (SHARED / "metaqa" / f"{hop}-hop" / "qa_dev_qtype.txt").read_text().splitlines()
        for line, kind in enumerate(kinds, 1):
            steps = kind.split("_to_")
            expected[f"{hop}-hop/qa_dev.txt:{line}"] = ", then ".join(QTYPE_RELATION[a, b] for a, b in zip(steps, steps[1:]))
    counts: dict[str, dict[str, int]] = {}
    for row in map(json.loads, (work / f"labels-{pack_name}.jsonl").open(encoding="utf-8")):
        c = counts.setdefault(row["qid"].split("-")[0], {"questions": 0, "candidates": 0, "type_chain_found": 0, "chosen_is_type": 0, "chosen_has_type": 0})
        want, chains = expected[row["qid"]], row.get("chains", [])
        chosen = [chains[i] for i in row.get("chosen", [])]
        c["questions"] += 1
        c["candidates"] += bool(chains)
        c["type_chain_found"] += want in chains
        c["chosen_is_type"] += chosen == [want]
        c["chosen_has_type"] += want in chosen
    print(f"labels-{pack_name}.jsonl against MetaQA's question types (shares of the questions with candidate chains)")
    print("| hop | questions | with candidates | type's chain among candidates | chosen = type's chain | type's chain among chosen |")
    print("|---|---:|---:|---:|---:|---:|")
    for hop, c in sorted(counts.items()):
        n = max(c["candidates"], 1)
        print(f"| {hop} | {c['questions']} | {c['candidates']} | {c['type_chain_found'] / n:.3f} | {c['chosen_is_type'] / n:.3f} | {c['chosen_has_type'] / n:.3f} |")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("step", choices=("pack", "train", "table", "labels"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/rapl"))
    parser.add_argument("--cache", type=Path, default=Path("/tmp/transfer/cache"), help="where retrieved subgraphs are cached")
    parser.add_argument("--rationaliser", default="encoder")
    parser.add_argument("--per-hop", type=int, default=PER_HOP[0], help="pack: training questions per hop (6000: the split of "
                        "bench/transfer.py's metaqa-bundle, whose subgraphs are then read from --cache)")
    parser.add_argument("--name", default="main")
    parser.add_argument("--pack", help="the pack's name: what `pack` writes, what `train` and `labels` read (default: the rationaliser's)")
    parser.add_argument("--neighbours", type=int, help="pack: similar training questions whose coverage supports a chain "
                        "(rationalise.neighbour_support; default 30, 0: none)")
    parser.add_argument("--no-lookahead", action="store_true")
    parser.add_argument("--no-step-relation", action="store_true", help="successors scored by their GCN state alone (an ablation)")
    parser.add_argument("--init", type=Path, help="train: the checkpoint a new run starts from")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--budget", type=float, default=30.0, help="minutes")
    parser.add_argument("--at-epoch", type=int, help="table: each run's validation after this epoch")
    parser.add_argument("--epochs", type=int, default=15, help="at most (ablations: as many as the run they are compared with)")
    args = parser.parse_args(argv)
    np.seterr(all="ignore")
    name = args.pack or args.rationaliser
    if args.step == "pack":
        pack(args.work, args.rationaliser, args.cache, name, args.per_hop, args.neighbours)
    elif args.step == "train":
        train(args.work, args.name, name, not args.no_lookahead, args.budget, args.epochs, not args.no_step_relation, args.init, args.lr)
    elif args.step == "labels":
        labels(args.work, name)
    else:
        table(args.work, args.at_epoch)


if __name__ == "__main__":
    main(sys.argv[1:])
