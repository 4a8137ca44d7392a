"""Training, export and evaluation of KGFR's cross reader (kgqa.methods.kgfr.cross_reader).

    python bench/cross_reader.py train --data DATA.jsonl... --state STATE.pt [--time-budget MIN] [--freeze 2]
    python bench/cross_reader.py export --state STATE.pt --out CHECKPOINT/cross_reader --weight B [--groups 8] [--sure 1.0]
    python bench/cross_reader.py fuse --store URL --kg NAME --qa FILE[:HOP]... --state STATE.pt [--weights 0.125,0.25] [--groups 8] [--sure 1.0]

`train` reads bench/path_reader.py's `build` rows (answerable ones: the masked question, its groups'
texts, 1 for the best groups) and fine-tunes all-MiniLM-L6-v2's layers above the first --freeze ones
(the embeddings stay frozen) with a linear head, listwise: per question its best groups (up to three)
and --groups minus those of its other groups, drawn anew each step, softmax over them, cross-entropy
with the target spread evenly over the best. Every tenth row is validation (the share of questions
whose top group is a best one); the best weights go to STATE.pt. Run the same command again to go on
from STATE.pt (the optimiser starts afresh).

`export` writes the folder a KGFR checkpoint loads: the trained layers and the head in half precision,
and config.json (β = --weight, K = --groups, the data and the command). `fuse` prints Hits@1 of the
ranking (KGFR, path reader, the two-topic rule and the answer-kind gate, gold topics) with the bundled
checkpoint's reader alone and with the cross reader of STATE.pt at each β of --weights: the place to
choose β, on questions of KGs the cross reader never trained on.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np
import torch

from kgqa.loaders.qa import read_qa
from kgqa.methods.kgfr.cross_reader import CrossConfig, CrossReader, CrossReaderModel


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def answerable_rows(paths: list[str]) -> list[dict]:
    rows = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                row = json.loads(line)
                if not row.get("left_out") and row.get("paths") and row.get("answerable", True):
                    rows.append(row)
    return rows


def drawn(row: dict, size: int, rng: random.Random) -> tuple[list[str], torch.Tensor]:
    right = [i for i, t in enumerate(row["target"]) if t > 0][:3]
    wrong = [i for i, t in enumerate(row["target"]) if t == 0]
    rng.shuffle(wrong)
    chosen = right + wrong[: size - len(right)]
    return [row["paths"][i] for i in chosen], torch.tensor([row["target"][i] for i in chosen])


def listwise_loss(model: CrossReaderModel, rows: list[dict], size: int, rng: random.Random) -> torch.Tensor:
    questions, paths, targets = [], [], []
    for row in rows:
        texts, target = drawn(row, size, rng)
        questions += [row["q"]] * len(texts)
        paths += texts
        targets.append(target)
    scores, loss, at = model(questions, paths), torch.zeros(()), 0
    for target in targets:
        log_p = torch.log_softmax(scores[at:at + target.numel()], 0)
        loss = loss - (log_p * target / target.sum()).sum()
        at += target.numel()
    return loss / len(rows)


@torch.no_grad()
def accuracy(model: CrossReaderModel, rows: list[dict]) -> float:
    model.eval()
    hit = sum(row["target"][int(torch.argmax(model([row["q"]] * len(row["paths"]), row["paths"])))] > 0 for row in rows)
    model.train()
    return hit / max(1, len(rows))


def train(args) -> None:  # type: ignore[no-untyped-def]
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    rows = answerable_rows(args.data)
    validation = [r for i, r in enumerate(rows) if i % 10 == 0][: args.validation]
    training = [r for i, r in enumerate(rows) if i % 10 != 0]
    log(f"{len(training)} questions to train on, {len(validation)} for validation")
    model = CrossReaderModel()
    state = Path(args.state)
    if state.exists():
        model.load_state_dict(torch.load(state))
        log(f"going on from {state}")
    frozen = [model.lm.words, model.lm.positions, model.lm.token_types, *model.lm.layers[: args.freeze]]  # the norm above them trains
    for part in frozen:
        part.requires_grad_(False)
    optimiser = torch.optim.AdamW([
        {"params": [p for n, p in model.named_parameters() if p.requires_grad and not n.startswith("head.")], "lr": args.lr},
        {"params": model.head.parameters(), "lr": 1e-3}])
    model.train()
    deadline = time.time() + 60 * args.time_budget if args.time_budget else float("inf")
    best = accuracy(model, validation)
    log(f"validation accuracy at the start: {best:.3f}")
    step = 0
    for epoch in range(1, args.epochs + 1):
        rng.shuffle(training)
        for start in range(0, len(training), args.batch):
            loss = listwise_loss(model, training[start:start + args.batch], args.groups, rng)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            step += 1
            out_of_time = time.time() > deadline
            if step % 200 == 0 or out_of_time:
                now = accuracy(model, validation)
                log(f"epoch {epoch} step {step}: loss {float(loss):.3f}, validation accuracy {now:.3f}")
                if now > best:
                    best = now
                    torch.save(model.state_dict(), state)
            if out_of_time:
                log(f"time budget spent; best validation accuracy {best:.3f} in {state}: run the same command again to go on")
                return
    log(f"{args.epochs} epochs; best validation accuracy {best:.3f} in {state}")


def export(args) -> None:  # type: ignore[no-untyped-def]
    model = CrossReaderModel()
    model.load_state_dict(torch.load(args.state))
    config = CrossConfig(args.weight, args.groups, 6 - args.freeze, args.sure)
    model.save(Path(args.out), config, {"state": Path(args.state).name, "command": " ".join(sys.argv), "data": args.data or []})
    log(f"wrote {args.out}")


def fuse(args) -> None:  # type: ignore[no-untyped-def]
    from kgqa.methods.kgfr.answer import KGFRAnswerer
    from kgqa.methods.kgfr.confidence import relation_probe
    from kgqa.retrieval.app import retrieve
    from kgqa.retrieval.linking import link_or_resolve
    from kgqa.retrieval.store_url import open_store

    store = open_store(args.store, args.kg)
    kgfr = KGFRAnswerer(store)
    reader = kgfr.scorer.reader
    model = CrossReaderModel()
    model.load_state_dict(torch.load(args.state))
    cross = CrossReader(model.eval(), CrossConfig(0.0, args.groups, 6 - args.freeze))
    weights = [0.0] + [float(w) for w in args.weights.split(",")]
    for spec in args.qa:
        path, _, hop = spec.partition(":")
        examples = read_qa(path, int(hop) if hop else None)
        hits = dict.fromkeys(weights, 0)
        for ex in examples:
            linking = link_or_resolve(store, ex.question, list(ex.topics), kgfr.encoder)
            if not linking.topics:
                continue
            sg = retrieve(store, linking.iris, kgfr.hops, kgfr.lam)
            probe = relation_probe(ex.question, linking.topics_json())
            scored = kgfr.scorer.score(sg, ex.question, None, probe)
            for weight in weights:
                cross.config = CrossConfig(weight, args.groups, 6 - args.freeze, args.sure)
                reader.cross = cross if weight else None
                ranked, _ = kgfr.read(sg, scored, probe)
                hits[weight] += sg.node_labels[int(torch.argmax(ranked.scores))] in set(ex.answers)
        reader.cross = None
        print(f"{spec}: {len(examples)} questions; Hits@1 " + ", ".join(
            f"{'reader alone' if w == 0 else f'β {w}'} {hits[w] / max(1, len(examples)):.3f}" for w in weights), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train")
    t.add_argument("--data", nargs="+", required=True, help="bench/path_reader.py build files")
    t.add_argument("--state", required=True, help="the best weights go here; an existing file is gone on from")
    t.add_argument("--time-budget", type=float, default=None, help="minutes")
    t.add_argument("--epochs", type=int, default=100)
    t.add_argument("--batch", type=int, default=8, help="questions per step")
    t.add_argument("--groups", type=int, default=6, help="groups per question in a step")
    t.add_argument("--lr", type=float, default=3e-5)
    t.add_argument("--freeze", type=int, default=2, help="MiniLM's first layers kept frozen")
    t.add_argument("--validation", type=int, default=300, help="validation questions read at each check")
    t.add_argument("--seed", type=int, default=0)
    x = sub.add_parser("export")
    x.add_argument("--state", required=True)
    x.add_argument("--out", required=True)
    x.add_argument("--weight", type=float, required=True, help="β")
    x.add_argument("--groups", type=int, default=8, help="K: the reader's best groups re-read")
    x.add_argument("--freeze", type=int, default=2, help="as trained: the layers not saved")
    x.add_argument("--sure", type=float, default=None, help="the reader's lead of its best group over its second above which nothing is re-read")
    x.add_argument("--data", nargs="*", help="the files it was trained on, for config.json")
    f = sub.add_parser("fuse")
    f.add_argument("--store", required=True)
    f.add_argument("--kg", required=True)
    f.add_argument("--qa", nargs="+", required=True, help="QA files, each FILE or FILE:HOP")
    f.add_argument("--state", required=True)
    f.add_argument("--weights", default="0.125,0.25,0.5,1")
    f.add_argument("--groups", type=int, default=8)
    f.add_argument("--freeze", type=int, default=2)
    f.add_argument("--sure", type=float, default=None)
    args = ap.parse_args()
    {"train": train, "export": export, "fuse": fuse}[args.command](args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
