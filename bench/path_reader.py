"""Data, training and evaluation of KGFR's path reader (kgqa.methods.kgfr.path_reader).

    python bench/path_reader.py build --store URL --kg NAME --qa FILE[:HOP]... --out DATA.jsonl [--per-file N] [--lacking] [--hops N] [--time-budget MIN]
    python bench/path_reader.py train --data DATA.jsonl... --out DIR [--time-budget MIN] [--epochs N] [--init DIR]
    python bench/path_reader.py eval --store URL --kg NAME --qa FILE[:HOP]... --reader DIR [--per-file N] [--topics gold|linked]

`build` retrieves each question's subgraph as kgfr does (bundled checkpoint's hops and λ; gold topics),
scores it with the bundled KGFR, and writes one JSON line per question: the masked question, the
texts of the relation-path groups that reach KGFR's top nodes (what the reader will see at question
time), and each group's target: 1 for the groups whose reached set best matches the gold answers
(F1), else 0. Questions whose answers no group reaches are left out (counted). With --lacking the
questions are ones the KG cannot answer (bench/lacking_questions.py): every target is 0, the row is
marked "answerable": false, and the groups are the first MAX_GROUPS of those the reader reads at
question time (`groups_read`), shortest first.
A build appends to DATA.jsonl and goes on after the questions an earlier run wrote there (or left out:
those get a `left_out` line), so a long build runs in pieces (--time-budget).

`train` trains the reader listwise (softmax over a question's groups and its "no path reads it"
option, cross-entropy with the target spread evenly over its best groups, or on that option for an
unanswerable question) on the CPU, in steps of --batch questions, from the frozen
encoder's vectors computed once (each question's tokens, each relation text); it keeps in DIR the
epoch with the best validation accuracy (a best group ranked first, or for an unanswerable question
the "no path" option), stops after --epochs or when
--time-budget (minutes) has run out, and goes on from DIR when run again (--init DIR2: starts from
another reader's weights instead). Every tenth question of each data
file is validation, never trained on.

`eval` answers the questions with the bundled KGFR alone and fused with the reader for each γ of
--weights, and prints Hits@1 per file: the place to choose γ (on validation questions), and to
report held-out sets (on questions no data file held).
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
from kgqa.methods.kgfr.confidence import gold_probe, relation_probe
from kgqa.methods.kgfr.path_reader import ARROW, MAX_GROUPS, PathReaderModel, ReaderConfig, groups_for, groups_read, path_inputs, verbalise
from kgqa.retrieval.app import retrieve
from kgqa.retrieval.linking import link_or_resolve
from kgqa.retrieval.store_url import open_store

TOP = 20  # KGFR's top nodes whose groups are read (the answer is usually among the top 20)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def held_out_qids() -> set[str]:
    """The MetaQA dev questions the bundled KGFR never trained on (its config's validation ids)."""
    from kgqa.methods.kgfr.scorer import BUNDLED_CHECKPOINT

    return set(json.loads((Path(BUNDLED_CHECKPOINT) / "config.json").read_text())["train"]["split"]["validation_qids"])


def qa_files(specs: list[str], per_file: int | None, seed: int = 0, part: str = "all") -> list[tuple[str, list]]:
    """`part`: "train" leaves out the questions the bundled KGFR held out, "held-out" keeps only those
    (ids like "2-hop/qa_dev.txt:17": a file's last folder and name), "all" every one."""
    held = held_out_qids() if part != "all" else set()
    out = []
    for spec in specs:
        path, _, hop = spec.partition(":")
        examples = read_qa(path, int(hop) if hop else None)
        if part != "all":
            examples = [ex for ex in examples if (ex.qid in held) == (part == "held-out")]
        if per_file and len(examples) > per_file:
            examples = random.Random(seed).sample(examples, per_file)
        out.append((spec, examples))
    return out


def f1(reached: set[int], gold: set[int]) -> float:
    hit = len(reached & gold)
    return 0.0 if hit == 0 else 2 * hit / (len(reached) + len(gold))


def build(args) -> None:  # type: ignore[no-untyped-def]
    from kgqa.methods.kgfr.answer import KGFRAnswerer

    store = open_store(args.store, args.kg)
    kgfr = KGFRAnswerer(store)
    done = built_before(Path(args.out))
    written = missing = 0
    started = time.time()
    deadline = started + 60 * args.time_budget if args.time_budget else None
    with open(args.out, "a", encoding="utf-8") as out:

        def left_out(spec: str, qid: str) -> None:
            nonlocal missing
            out.write(json.dumps({"file": spec, "qid": qid, "left_out": True}) + "\n")
            missing += 1

        for spec, examples in qa_files(args.qa, args.per_file, args.seed, args.part):
            for n, ex in enumerate(examples):
                if (spec, ex.qid) in done:
                    continue
                if deadline is not None and time.time() > deadline:
                    log(f"time budget spent: {written} written, {missing} left out this run; run the same command again to go on")
                    return
                out.flush()
                found = store.resolve(list(ex.topics))
                iris = [hits[0].entity.iri for hits in found.values() if hits]
                if not iris:
                    left_out(spec, ex.qid)
                    continue
                sg = retrieve(store, iris, args.hops or kgfr.hops, kgfr.lam)
                probe = gold_probe(ex.question, list(ex.topics))
                scores = kgfr.scorer.score(sg, ex.question, None, probe).scores
                top = [int(i) for i in torch.argsort(scores, descending=True)[:TOP] if torch.isfinite(scores[i])]
                if args.lacking:
                    groups = groups_read(sg, top)[:MAX_GROUPS]
                    if groups:
                        out.write(json.dumps({"q": probe, "file": spec, "qid": ex.qid, "paths": [verbalise(sg, seq) for seq, _ in groups],
                                              "target": [0.0] * len(groups), "answerable": False}) + "\n")
                        written += 1
                    else:
                        left_out(spec, ex.qid)
                    continue
                gold = {i for i, label in enumerate(sg.node_labels) if label in set(ex.answers)}
                groups = groups_for(sg, top + sorted(gold), MAX_GROUPS * 2)
                quality = [f1(set(ends.tolist()), gold) for _, ends in groups]
                if not gold or max(quality, default=0.0) == 0.0:
                    left_out(spec, ex.qid)
                    continue
                # the best groups: the best F1, and the shortest among those (a longer walk that happens to
                # reach the same answers — "in language → language of → release year" — is not the reading)
                best = max((quality[i], -len(groups[i][0])) for i in range(len(groups)))
                right = [(quality[i], -len(groups[i][0])) == best for i in range(len(groups))]
                chosen = sorted(range(len(groups)), key=lambda i: (not right[i], len(groups[i][0])))[:MAX_GROUPS]
                out.write(json.dumps({"q": probe, "file": spec, "qid": ex.qid, "paths": [verbalise(sg, groups[i][0]) for i in chosen],
                                      "target": [1.0 if right[i] else 0.0 for i in chosen]}) + "\n")
                written += 1
                if (n + 1) % 500 == 0:
                    log(f"{spec}: {n + 1}/{len(examples)} ({written} written, {missing} left out, {time.time() - started:.0f}s)")
    log(f"{written} questions written to {args.out}; {missing} left out (no topic, or no group reaches an answer)")


def built_before(path: Path) -> set[tuple[str, str]]:
    """The (file, qid) pairs an earlier run of `build` wrote to `path`, written or left out, so that
    a rerun goes on after them. A line cut short by a killed run is dropped (the file is rewritten
    without it) and its question built again."""
    if not path.exists():
        return set()
    lines = path.read_text(encoding="utf-8").splitlines()
    rows = []
    for line in lines:
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    if len(rows) < len(lines):
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    log(f"{path}: going on after {len(rows)} questions built before")
    return {(r["file"], r["qid"]) for r in rows}


def read_data(paths: list[str]) -> tuple[list[dict], list[dict]]:
    train, val = [], []
    for path in paths:
        rows = [row for line in open(path, encoding="utf-8") if not (row := json.loads(line)).get("left_out")]
        train += [r for i, r in enumerate(rows) if i % 10 != 9]
        val += [r for i, r in enumerate(rows) if i % 10 == 9]
    return train, val


def trimmed(row: dict, groups: int) -> dict:
    """A question's best groups and the first others (shortest first) up to `groups` in all."""
    keep = [i for i, t in enumerate(row["target"]) if t] + [i for i, t in enumerate(row["target"]) if not t]
    keep = sorted(keep[: max(groups, sum(1 for t in row["target"] if t) + 1)])
    return {**row, "paths": [row["paths"][i] for i in keep], "target": [row["target"][i] for i in keep]}


class Features:
    """The frozen inputs, computed once: each question's token vectors, each relation text's vector."""

    def __init__(self, rows: list[dict]):
        from kgqa.retrieval.text import TextEncoder

        encoder = TextEncoder()
        questions = sorted({r["q"] for r in rows})
        log(f"token vectors of {len(questions)} questions ...")
        self.tokens = {q: s.astype(np.float16) for q, s in zip(questions, _chunked(encoder.token_states, questions))}
        texts = sorted({hop for r in rows for p in r["paths"] for hop in p.split(ARROW)})
        self.relations = dict(zip(texts, encoder.encode(texts)))
        log(f"... and of {len(texts)} relation texts")

    def batch(self, rows: list[dict]) -> tuple[tuple[torch.Tensor, ...], list[torch.Tensor]]:
        """The model's inputs for the rows' paths, and each row's targets over its paths and then its
        "no path" option."""
        states = [self.tokens[r["q"]].astype(np.float32) for r in rows]
        paths, owner, targets = [], [], []
        for i, r in enumerate(rows):
            paths += [[self.relations[h] for h in p.split(ARROW)] for p in r["paths"]]
            owner += [i] * len(r["paths"])
            targets.append(torch.tensor([*r["target"], 0.0 if r.get("answerable", True) else 1.0]))
        return path_inputs(states, paths, owner), targets


def _chunked(fn, items: list, size: int = 256) -> list:  # type: ignore[no-untyped-def]
    out = []
    for start in range(0, len(items), size):
        out += fn(items[start : start + size])
    return out


def _options(model: PathReaderModel, inputs: tuple[torch.Tensor, ...], targets: list[torch.Tensor]) -> list[torch.Tensor]:
    """Each question's scores: its paths', then its "no path" option's."""
    scores = model(*inputs)
    no_path = model.no_path(inputs[0], inputs[1])  # one row per question
    out, start = [], 0
    for i, target in enumerate(targets):
        out.append(torch.cat([scores[start : start + len(target) - 1], no_path[i : i + 1]]))
        start += len(target) - 1
    return out


def listwise_loss(model: PathReaderModel, inputs: tuple[torch.Tensor, ...], targets: list[torch.Tensor]) -> torch.Tensor:
    loss = 0.0
    for part, target in zip(_options(model, inputs, targets), targets):
        loss = loss - (torch.log_softmax(part, 0) * target / target.sum()).sum()
    return loss / len(targets)


def accuracy(model: PathReaderModel, features: Features, rows: list[dict], batch: int) -> dict[str, float]:
    """The share of answerable questions whose top option is a best group, and of unanswerable ones
    whose top option is "no path"; "all" over both."""
    model.eval()
    right = {True: 0, False: 0}
    with torch.inference_mode():
        for i in range(0, len(rows), batch):
            part = rows[i : i + batch]
            inputs, targets = features.batch(part)
            for row, options, target in zip(part, _options(model, inputs, targets), targets):
                right[row.get("answerable", True)] += float(target[int(torch.argmax(options))]) == 1.0
    model.train()
    counts = {kind: sum(r.get("answerable", True) == kind for r in rows) for kind in (True, False)}
    return {"answerable": right[True] / max(1, counts[True]), "unanswerable": right[False] / max(1, counts[False]) if counts[False] else None,
            "all": (right[True] + right[False]) / max(1, len(rows))}


def train(args) -> None:  # type: ignore[no-untyped-def]
    torch.manual_seed(args.seed)
    rows, val = read_data(args.data)
    log(f"{len(rows)} training questions, {len(val)} validation")
    features = Features(rows + val)
    out = Path(args.out)
    model = PathReaderModel()
    state = {"epoch": 0, "history": []}
    if (out / "config.json").exists():
        model, _ = PathReaderModel.load(out)
        state = json.loads((out / "config.json").read_text()).get("training", state)
        log(f"resumed from {out}: epoch {state['epoch']}")
    elif args.init:
        model, _ = PathReaderModel.load(Path(args.init))
        state["init"] = args.init
        log(f"starting from {args.init}'s weights")
    lacking = any(not r.get("answerable", True) for r in rows)
    model.train()
    optimiser = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    deadline = time.time() + 60 * args.time_budget if args.time_budget else None
    best = {"val_accuracy": state.get("val_accuracy", -1.0)}

    def save(accuracy_now: dict[str, float]) -> None:
        state["history"].append({"epoch": state["epoch"], "val_accuracy": accuracy_now["all"], **accuracy_now})
        if accuracy_now["all"] > best["val_accuracy"]:
            best["val_accuracy"] = state["val_accuracy"] = accuracy_now["all"]
            model.save(out, ReaderConfig(args.weight, TOP, lacking), {"training": state, "data": args.data})
        log(f"epoch {state['epoch']}: validation accuracy {accuracy_now} (best {best['val_accuracy']:.3f})")

    rng = random.Random(args.seed)
    while state["epoch"] < args.epochs:
        order = list(range(len(rows)))
        rng.shuffle(order)
        total = 0.0
        for b in range(len(order) // args.batch):
            batch = [trimmed(rows[i], args.groups) for i in order[b * args.batch : (b + 1) * args.batch]]
            loss = listwise_loss(model, *features.batch(batch))
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            total += loss.item()
        state["epoch"] += 1
        log(f"epoch {state['epoch']}: mean loss {total / max(1, len(order) // args.batch):.4f}")
        save(accuracy(model, features, val, 64))
        if deadline and time.time() > deadline:
            log("time budget spent: run again to go on")
            return


def evaluate(args) -> None:  # type: ignore[no-untyped-def]
    from kgqa.methods.kgfr.answer import KGFRAnswerer
    from kgqa.methods.kgfr.path_reader import PathReader

    store = open_store(args.store, args.kg)
    kgfr = KGFRAnswerer(store)
    reader = PathReader(Path(args.reader))
    weights = [float(w) for w in args.weights.split(",")]
    table = []
    for spec, examples in qa_files(args.qa, args.per_file, args.seed, args.part):
        hits = {w: 0 for w in [0.0, *weights]}
        seconds = []
        n = 0
        for ex in examples:
            linking = link_or_resolve(store, ex.question, list(ex.topics) if args.topics == "gold" else None)
            n += 1
            if not linking.topics:
                continue
            sg = retrieve(store, linking.iris, kgfr.hops, kgfr.lam)
            probe = relation_probe(ex.question, linking.topics_json())
            scores = kgfr.scorer.score(sg, ex.question, None, probe).scores
            gold = {i for i, label in enumerate(sg.node_labels) if label in set(ex.answers)}
            started = time.perf_counter()
            order = [int(i) for i in torch.argsort(scores, descending=True)[:1] if torch.isfinite(scores[i])]
            hits[0.0] += bool(order) and order[0] in gold
            for w in weights:
                fused, _ = reader.fuse(scores, sg, probe, kgfr.encoder, weight=w)
                hits[w] += bool(order) and int(torch.argmax(fused)) in gold
            seconds.append((time.perf_counter() - started) / len(weights))
        row = {"file": spec, "n": n, **{f"hits1@{w}": hits[w] / max(1, n) for w in hits}, "reader_ms_p50": 1000 * float(np.median(seconds)) if seconds else None}
        table.append(row)
        log(json.dumps(row))
    print("| file | n | KGFR alone | " + " | ".join(f"γ={w}" for w in weights) + " | reader ms p50 |")
    print("|---|---:|---:|" + "---:|" * len(weights) + "---:|")
    for row in table:
        print(f"| {row['file']} | {row['n']} | {row['hits1@0.0']:.3f} | " + " | ".join(f"{row[f'hits1@{w}']:.3f}" for w in weights)
              + f" | {row['reader_ms_p50']:.1f} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build")
    b.add_argument("--store", required=True)
    b.add_argument("--kg", required=True)
    b.add_argument("--qa", nargs="+", required=True, help="QA files, each FILE or FILE:HOP")
    b.add_argument("--out", required=True)
    b.add_argument("--per-file", type=int, default=None)
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--part", choices=("train", "held-out", "all"), default="train")
    b.add_argument("--lacking", action="store_true", help="the questions have no answer in the KG (bench/lacking_questions.py)")
    b.add_argument("--time-budget", type=float, default=None, help="minutes; the same command run again goes on where this one stopped")
    b.add_argument("--hops", type=int, default=None,
                   help="APP hops of the subgraphs (default: the checkpoint's, 3): 2 for a big KG's 1- and 2-hop questions (FB15k-237's 3-hop subgraphs take seconds each)")
    t = sub.add_parser("train")
    t.add_argument("--data", nargs="+", required=True)
    t.add_argument("--out", required=True)
    t.add_argument("--epochs", type=int, default=30)
    t.add_argument("--batch", type=int, default=32, help="questions per step")
    t.add_argument("--lr", type=float, default=1e-3)
    t.add_argument("--groups", type=int, default=12, help="groups per question in a step: its best ones, then the others in order")
    t.add_argument("--weight", type=float, default=1.0, help="γ written into the reader's config (choose it with eval)")
    t.add_argument("--time-budget", type=float, default=None, help="minutes")
    t.add_argument("--init", default=None, help="a reader folder to start from (not resumed: its training state is not kept)")
    t.add_argument("--seed", type=int, default=0)
    e = sub.add_parser("eval")
    e.add_argument("--store", required=True)
    e.add_argument("--kg", required=True)
    e.add_argument("--qa", nargs="+", required=True)
    e.add_argument("--reader", required=True)
    e.add_argument("--weights", default="0.5,1,2,4,8")
    e.add_argument("--per-file", type=int, default=None)
    e.add_argument("--topics", choices=("gold", "linked"), default="gold")
    e.add_argument("--seed", type=int, default=1)
    e.add_argument("--part", choices=("train", "held-out", "all"), default="held-out")
    args = ap.parse_args()
    {"build": build, "train": train, "eval": evaluate}[args.command](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
