"""Does KGFR know when it does not know? Coverage and precision of declining, per KG and across KGs.

    python bench/abstention.py collect --checkpoint DIR --work /tmp/abstention [--lacking DIR]   # answer, keep the signals
    python bench/abstention.py fit --checkpoint DIR --work /tmp/abstention [--answer-rate 0.97] [--save]

`collect` asks each KG (the stores of bench/transfer.py, built by its `build` step) two kinds of
questions with declining off: its own validation questions (answerable; MetaQA's are the bundled
checkpoint's held-out dev questions, and FB15k-237 also gets real human questions grounded in it by
bench/ground_freebase.py: generated questions borrow the relations' words, people's do not) and
validation questions of other KGs whose domain it does not cover (unanswerable: no pair where one
KG could hold the other's facts, such as FB15k-237 and the MetaQA movies, or FB15k-237 and
Countries). With --lacking DIR (bench/lacking_questions.py's calibration folder), each KG is also
asked questions about its own entities for relations it lacks: DIR/KG-train.jsonl (relations the
path reader trained on, other entities) join the fit, DIR/KG-test.jsonl (relations held out of all
training) are only judged. Each answer's confidence signals and whether its top candidate was right
are kept.

`fit` then reports, at the answerability threshold that keeps `--answer-rate` (default 97 %) of the
answerable validation questions whose topic was linked answered (kgfr/confidence.py; the bundled
checkpoint's was fitted with 0.985):
- leave one KG out: the calibration is fitted on the other KGs' questions only and judged on the
  left-out KG's (answerable and unanswerable), the case of a user's own graph;
- a split in halves (fixed seed): fitted on one half, judged on the other, with the coverage /
  precision curve;
and with `--save` writes the calibration fitted on everything into the checkpoint (calibration.json).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import numpy as np

from kgqa.eval.report import evaluate
from kgqa.faces.sdk import Engine
from kgqa.loaders.qa import QAExample, read_qa, split
from kgqa.methods.kgfr.confidence import DEFAULT_ANSWER_RATE, FEATURES, curve_table, fit_rows, judge_rows
from kgqa.methods.kgfr.scorer import BUNDLED_CHECKPOINT

sys.path.insert(0, str(Path(__file__).resolve().parent))
from transfer import SHARED, STORES  # noqa: E402

ANSWERABLE = 150  # validation questions asked of their own KG
ANSWERABLE_METAQA = 300  # MetaQA's human-written templates: more of them, 100 per hop
UNANSWERABLE = 60  # questions of each other KG asked of one
HUMAN = "freebase-human"  # bench/ground_freebase.py's questions, WORK/freebase-human.jsonl in the transfer folder
HOME = {"metaqa": "metaqa", HUMAN: "fb15k237"}  # question sets asked of another set's store
# KGs whose facts could overlap: their questions are not asked of each other as "unanswerable"
OVERLAP = [{"metaqa", "metaqa-free", "fb15k237"}, {"fb15k237", "countries"}, {"fb15k237", "nations"}]


def _store(kg: str) -> tuple[str, str]:
    url, name, *_ = STORES["metaqa-free" if kg == "metaqa" else kg]
    return url, name


def validation_questions(kg: str, transfer: Path, rng: random.Random, answerable: int = ANSWERABLE) -> list[QAExample]:
    if kg == "metaqa":
        held = set(json.loads((transfer / "today-checkpoint" / "config.json").read_text())["train"]["split"]["validation_qids"])
        out = []
        for hop in (1, 2, 3):
            rows = [e for e in read_qa(SHARED / "metaqa" / f"{hop}-hop" / "qa_dev.txt") if e.qid in held]
            out += rng.sample(rows, ANSWERABLE_METAQA // 3)
        return out
    if kg == HUMAN:  # the part bench/transfer.py holds out of training
        _, val_part = split(read_qa(transfer / f"{HUMAN}.jsonl"), 0.2, seed=11)
        return rng.sample(val_part, min(answerable, len(val_part)))
    _, val_part = split(read_qa(transfer / f"{kg}.jsonl"), 0.2, seed=11)  # the packs' split: never trained on
    return rng.sample(val_part, min(answerable, len(val_part)))


def _overlap(a: str, b: str) -> bool:
    return a == b or any({a, b} <= group for group in OVERLAP)


def _lacking(folder: Path | None, kg: str) -> list[tuple[str, list[QAExample]]]:
    """(source, questions) of the in-domain unanswerable sets of one KG."""
    if folder is None:
        return []
    name = "metaqa" if kg == "metaqa" else STORES[kg][1]
    return [(f"lacking-{part}", read_qa(folder / f"{name}-{part}.jsonl")) for part in ("train", "test") if (folder / f"{name}-{part}.jsonl").exists()]


def collect(checkpoint: Path, work: Path, transfer: Path, answerable: int = ANSWERABLE, unanswerable: int = UNANSWERABLE,
            lacking: Path | None = None) -> None:
    work.mkdir(parents=True, exist_ok=True)
    kgs = [*STORES, "metaqa"]
    rng = random.Random(7)
    questions = {kg: validation_questions(kg, transfer, rng, answerable) for kg in [*kgs, HUMAN]}
    for target in sorted(kgs, key=lambda kg: kg == "fb15k237"):  # the slowest (3-hop FB15k-237 subgraphs) last
        done = work / f"{target}.json"
        if done.exists():
            continue
        url, name = _store(target)
        rows = []
        with Engine(url, "kgfr", kg=name, checkpoint=checkpoint, decline_below=0.0) as engine:
            for source in questions:
                home = HOME.get(source, source)
                if home != target and _overlap(home, target):
                    continue
                asked = questions[source] if home == target else random.Random(source + target).sample(questions[source], unanswerable)
                report = evaluate(engine.runner(), engine.store, asked, gold_topics=False, workers=4)
                rows += [{**r, "target": target, "source": source, "answerable": home == target} for r in report["rows"]]
                print(f"{target:12s} ← {source:12s} {len(asked):4d} questions, Hits@1 {np.mean([r['hits1_ranked'] for r in report['rows']]):.3f}", flush=True)
            for source, asked in _lacking(lacking, target) if target != "metaqa-free" else []:  # the same store as "metaqa": asked once
                report = evaluate(engine.runner(), engine.store, asked, gold_topics=False, workers=4)
                rows += [{**r, "target": target, "source": source, "answerable": False, "held_out": source == "lacking-test"} for r in report["rows"]]
                print(f"{target:12s} ← {source:12s} {len(asked):4d} questions (in-domain, unanswerable)", flush=True)
        done.write_text(json.dumps(rows))


def _fit(rows: list[dict], checkpoint: Path | None = None, answer_rate: float = DEFAULT_ANSWER_RATE):  # type: ignore[no-untyped-def]
    return fit_rows(rows, answer_rate, {"kgs": sorted({r["target"] for r in rows}), "question_sets": sorted({r["source"] for r in rows})},
                    checkpoint)


def _declined(calibration, rows: list[dict]) -> str:  # type: ignore[no-untyped-def]
    """The share of `rows` (unanswerable) declined at the calibration's threshold, "—" for none."""
    if not rows:
        return "—"
    return f"{judge_rows(calibration, rows, [calibration.threshold])[0]['declined_unanswerable']:.3f} ({len(rows)})"


def report(checkpoint: Path, work: Path, save: bool, answer_rate: float = DEFAULT_ANSWER_RATE) -> None:
    every = [r for path in sorted(work.glob("*.json")) for r in json.loads(path.read_text())]
    rows = [r for r in every if not r.get("held_out")]  # held-out relations' questions are judged, never fitted on
    held = [r for r in every if r.get("held_out")]
    kgs = sorted({r["target"] for r in rows})
    fmt = lambda v: "—" if v is None else f"{v:.3f}"  # noqa: E731
    print(f"{len(rows)} questions: {sum(r['answerable'] for r in rows)} answerable, {sum(not r['answerable'] for r in rows)} unanswerable "
          f"({sum(r['source'] == 'lacking-train' for r in rows)} of them in-domain); {len(held)} more in-domain ones for relations held out of "
          f"all training, judged only; features {', '.join(FEATURES)}\n")
    print("Leave one KG out (calibration fitted on the other KGs' questions):\n")
    print("| KG | answerable | unanswerable | threshold | answerable answered | of those linked | Hits@1 when answered | Hits@1 of the ranking | "
          "unanswerable declined | of those in-domain | in-domain, held-out relations |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for kg in kgs:
        inside = [r for r in rows if r["target"] == kg]
        calibration = _fit([r for r in rows if r["target"] != kg], answer_rate=answer_rate)
        row = judge_rows(calibration, inside, [calibration.threshold])[0]
        ranked = np.mean([r["hits1_ranked"] for r in inside if r["answerable"]])
        print(f"| {kg} | {sum(r['answerable'] for r in inside)} | {sum(not r['answerable'] for r in inside)} | {calibration.threshold:.3f} | "
              f"{fmt(row['coverage'])} | {fmt(row['coverage_linked'])} | {fmt(row['precision'])} | {ranked:.3f} | {fmt(row['declined_unanswerable'])} | "
              f"{_declined(calibration, [r for r in inside if r['source'] == 'lacking-train'])} | {_declined(calibration, [r for r in held if r['target'] == kg])} |")
    shuffled = random.Random(3).sample(rows, len(rows))
    half = len(shuffled) // 2
    calibration = _fit(shuffled[:half], answer_rate=answer_rate)
    print(f"\nHalves (fitted on {half} questions, judged on the other {len(rows) - half}); chosen threshold {calibration.threshold:.3f}:\n")
    print(curve_table(calibration, shuffled[half:]))
    final = _fit(rows, checkpoint, answer_rate)
    print("\nFitted on everything: in-domain questions for held-out relations declined, per KG: "
          + ", ".join(f"{kg} {_declined(final, [r for r in held if r['target'] == kg])}" for kg in sorted({r['target'] for r in held})))
    for head in ("right", "answerable"):
        model = getattr(final, head)
        print(f"\n{head} weights (standardised features): " + ", ".join(f"{n} {w:+.2f}" for n, w in zip(model.features, model.weights)))
    if save:
        print(f"wrote {final.save(checkpoint)} (threshold {final.threshold:.3f}, fitted on all {len(rows)} questions)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("step", choices=("collect", "fit"))
    parser.add_argument("--checkpoint", type=Path, default=BUNDLED_CHECKPOINT)
    parser.add_argument("--work", type=Path, default=Path("/tmp/abstention"))
    parser.add_argument("--transfer", type=Path, default=Path("/tmp/transfer"), help="bench/transfer.py's work folder (questions, today's checkpoint)")
    parser.add_argument("--answerable", type=int, default=ANSWERABLE, help="collect: validation questions asked of their own KG (MetaQA: 300)")
    parser.add_argument("--unanswerable", type=int, default=UNANSWERABLE, help="collect: questions of each other KG asked of one")
    parser.add_argument("--answer-rate", type=float, default=DEFAULT_ANSWER_RATE,
                        help="fit: the share of answerable linked questions the threshold keeps answered")
    parser.add_argument("--save", action="store_true", help="fit: write the calibration fitted on everything into the checkpoint")
    parser.add_argument("--lacking", type=Path, default=None, help="collect: bench/lacking_questions.py's calibration folder (in-domain unanswerable)")
    args = parser.parse_args()
    if args.step == "collect":
        collect(args.checkpoint, args.work, args.transfer, args.answerable, args.unanswerable, args.lacking)
    else:
        report(args.checkpoint, args.work, args.save, args.answer_rate)


if __name__ == "__main__":
    sys.exit(main())
