"""`kgqa eval`: answer QA files with a store and a checkpoint; Hits@1, Hits@k, F1 on all questions
and on the answerable ones, per hop, linking accuracy, subgraph sizes and time per stage; JSON, a
Markdown report and PNG plots."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

from kgqa.kgfr_answer import KGFRAnswerer
from kgqa.labels import normalise_label
from kgqa.qa_data import QAExample


def _f1(predicted: set[str], gold: set[str]) -> float:
    if not predicted or not gold:
        return 0.0
    hit = len(predicted & gold)
    if hit == 0:
        return 0.0
    precision, recall = hit / len(predicted), hit / len(gold)
    return 2 * precision * recall / (precision + recall)


def evaluate_kgfr(
    answerer: KGFRAnswerer, examples: Sequence[QAExample], gold_topics: bool, k: int = 20,
    progress: Callable[[int], None] | None = None,
) -> dict:
    rows = []
    kb_cache: dict[str, bool] = {}
    for i, ex in enumerate(examples):
        result = answerer.answer(ex.question, list(ex.topics) if gold_topics else None)
        gold = {normalise_label(a) for a in ex.answers}
        ranked = [normalise_label(c.label) for c in result.candidates]
        expected_topics = {hits[0].entity.iri for hits in answerer.store.resolve(list(ex.topics)).values() if hits} if ex.topics else set()
        linked = {t["iri"] for t in result.topics}
        missing = [a for a in ex.answers if a not in kb_cache]
        if missing:
            kb_cache.update({label: bool(hits) for label, hits in answerer.store.resolve(missing).items()})
        rows.append({
            "qid": ex.qid, "hop": ex.hop,
            "hits1": bool(ranked) and ranked[0] in gold,
            "hitsk": any(r in gold for r in ranked[:k]),
            "f1": _f1({normalise_label(c.label) for c in result.answers}, gold),
            "in_subgraph": any(normalise_label(label) in gold for label in result.node_labels),
            "in_kb": any(kb_cache[a] for a in ex.answers),
            "linked_ok": (linked == expected_topics) if expected_topics else None,
            "nodes": result.subgraph.get("nodes", 0), "edges": result.subgraph.get("edges", 0),
            "seconds": result.seconds,
            "answers": [c.label for c in result.answers],
        })
        if progress:
            progress(i + 1)
    return summarise(rows, k)


def summarise(rows: list[dict], k: int) -> dict:
    groups: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        groups["all"].append(row)
        if row["hop"] is not None:
            groups[f"{row['hop']}-hop"].append(row)
    report: dict = {"questions": len(rows), "k": k, "groups": {}}
    for name, members in sorted(groups.items()):
        def mean(key: str, subset: list[dict]) -> float | None:
            return statistics.mean(float(r[key]) for r in subset) if subset else None
        in_sub = [r for r in members if r["in_subgraph"]]
        in_kb = [r for r in members if r["in_kb"]]
        linked = [r for r in members if r["linked_ok"] is not None]
        report["groups"][name] = {
            "questions": len(members),
            "hits1": mean("hits1", members), f"hits{k}": mean("hitsk", members), "f1": mean("f1", members),
            "answerable_in_subgraph": len(in_sub), "hits1_answerable_subgraph": mean("hits1", in_sub),
            "answerable_in_kb": len(in_kb), "hits1_answerable_kb": mean("hits1", in_kb),
            "linking_accuracy": mean("linked_ok", linked),
            "nodes_mean": mean("nodes", members), "edges_mean": mean("edges", members),
            "seconds_mean": {stage: statistics.mean(r["seconds"].get(stage, 0.0) for r in members) for stage in ("link", "retrieve", "score", "total")},
        }
    report["rows"] = rows
    return report


def write_report(report: dict, out_dir: Path, title: str) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = [out_dir / "eval.json", out_dir / "eval.md"]
    written[0].write_text(json.dumps(report, indent=2) + "\n")
    k = report["k"]
    lines = [f"# {title}", "", f"{report['questions']} questions.", "",
             f"| group | questions | Hits@1 | Hits@{k} | F1 | answerable (subgraph) | Hits@1 answerable (subgraph) | answerable (KB) | Hits@1 answerable (KB) | linking | nodes | edges | s/question |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    fmt = lambda v: "—" if v is None else f"{v:.3f}"  # noqa: E731
    for name, g in report["groups"].items():
        lines.append(f"| {name} | {g['questions']} | {fmt(g['hits1'])} | {fmt(g[f'hits{k}'])} | {fmt(g['f1'])} | {g['answerable_in_subgraph']} | "
                     f"{fmt(g['hits1_answerable_subgraph'])} | {g['answerable_in_kb']} | {fmt(g['hits1_answerable_kb'])} | {fmt(g['linking_accuracy'])} | "
                     f"{g['nodes_mean']:.0f} | {g['edges_mean']:.0f} | {g['seconds_mean']['total']:.3f} |")
    written[1].write_text("\n".join(lines) + "\n")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return written
    groups = list(report["groups"])
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.bar(groups, [report["groups"][g]["hits1"] or 0 for g in groups], label="Hits@1")
    ax.set_ylim(0, 1)
    ax.set_title("Hits@1 per hop")
    fig.tight_layout()
    fig.savefig(out_dir / "accuracy.png")
    fig, ax = plt.subplots(figsize=(6, 3.5))
    stages = ["link", "retrieve", "score"]
    bottom = [0.0] * len(groups)
    for stage in stages:
        values = [1000 * report["groups"][g]["seconds_mean"][stage] for g in groups]
        ax.bar(groups, values, bottom=bottom, label=stage)
        bottom = [b + v for b, v in zip(bottom, values)]
    ax.set_ylabel("ms per question")
    ax.legend()
    ax.set_title("time per stage")
    fig.tight_layout()
    fig.savefig(out_dir / "time.png")
    plt.close("all")
    return written + [out_dir / "accuracy.png", out_dir / "time.png"]
