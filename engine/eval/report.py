"""`kgqa eval`: answer QA files with a store and a checkpoint; Hits@1, Hits@k, F1 on all questions
and on the answerable ones, per hop, linking accuracy, subgraph sizes and time per stage; JSON, a
Markdown report and PNG plots.

Where a method gives a confidence (KGFR without an LLM), each row keeps it and its signals, and the
report adds how many questions were answered (not declined), Hits@1 among those, and Hits@1 of the
ranking itself (a declined question counted by its closest candidate): what `kgqa calibrate` fits."""

from __future__ import annotations

import json
import statistics
import threading
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kgqa.core.answer import set_f1
from kgqa.core.labels import normalise_label
from kgqa.methods.registry import Runner
from kgqa.loaders.qa import QAExample
from kgqa.core.store import GraphStore



def evaluate(
    runner: Runner, store: GraphStore, examples: Sequence[QAExample], gold_topics: bool, k: int = 20,
    progress: Callable[[int], None] | None = None, workers: int = 1,
) -> dict:
    """Answer every example with `runner` (any method) and score it against the gold labels.
    `workers` questions are answered at once (the KGFR scorer batches what they hand it)."""
    kb_cache: dict[str, bool] = {}
    lock = threading.Lock()
    done = 0
    method = ""

    def row_of(ex: QAExample) -> dict:  # the row, not the answer: no subgraph is kept past its question
        nonlocal done, method
        answer = runner(ex.question, list(ex.topics) if gold_topics else None)
        gold = {normalise_label(a) for a in ex.answers}
        predicted = [normalise_label(a.label or a.text) for a in answer.answers]
        ranked = [normalise_label(c["label"]) for c in answer.evidence.candidates] or predicted
        expected_topics = {hits[0].entity.iri for hits in store.resolve(list(ex.topics)).values() if hits} if ex.topics else set()
        linked = {t["iri"] for t in answer.topics}
        missing = [a for a in ex.answers if a not in kb_cache]
        if missing:
            found = {label: bool(hits) for label, hits in store.resolve(missing).items()}
            with lock:
                kb_cache.update(found)
        graph = answer.graph
        llm = answer.trace.llm_totals()
        row = {
            "qid": ex.qid, "hop": ex.hop,
            "hits1": bool(predicted) and predicted[0] in gold,
            "hits1_ranked": bool(ranked) and ranked[0] in gold,
            "answered": answer.declined is None, "confidence": answer.confidence,
            "signals": dict(answer.trace.confidence_signals),
            "hitsk": any(r in gold for r in ranked[:k]),
            "f1": set_f1(set(predicted), gold),
            "in_subgraph": graph is not None and any(normalise_label(label) in gold for label in graph.node_labels),
            "in_kb": any(kb_cache[a] for a in ex.answers),
            "linked_ok": (linked == expected_topics) if expected_topics else None,
            "nodes": answer.trace.subgraph.get("nodes", 0), "edges": answer.trace.subgraph.get("edges", 0),
            "seconds": answer.trace.seconds,
            "llm_calls": llm["calls"], "prompt_tokens": llm["prompt_tokens"], "completion_tokens": llm["completion_tokens"],
            "llm_retries": llm["retries"], "fallback": answer.trace.fallback,
            "queries": [q.get("verdict") for q in answer.evidence.queries],  # text2query: each written query's verdict
            "query_rules": [q["rule"] for q in answer.evidence.queries if q.get("rule")],  # and the rules that refused some
            "constraint_retries": sum(".retry" in c.purpose for c in answer.trace.llm_calls),
            "answers": [a.label or a.text for a in answer.answers],
            # path retrievers (rapl): does a retrieved path end at a gold answer, and how many triples the paths hold
            "path_recall": any(normalise_label(c["label"]) in gold for c in answer.evidence.candidates) if "paths" in answer.trace.subgraph else None,
            "path_triples": answer.trace.subgraph.get("path_triples"),
            # round-based methods (grasp): per round where it looked, what it selected and what it decided
            "rounds": answer.trace.subgraph.get("rounds"),
        }
        with lock:
            done += 1
            method = answer.method
            if progress:
                progress(done)
        return row

    with ThreadPoolExecutor(max(1, workers), thread_name_prefix="kgqa-eval") as pool:
        rows = list(pool.map(row_of, examples))
    return summarise(rows, k, method=method)


def summarise(rows: list[dict], k: int, method: str = "") -> dict:
    groups: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        groups["all"].append(row)
        if row["hop"] is not None:
            groups[f"{row['hop']}-hop"].append(row)
    report: dict = {"method": method, "questions": len(rows), "k": k, "groups": {}}
    stages = sorted({stage for r in rows for stage in r["seconds"]}, key=lambda st: (st == "total", st))
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
            "seconds_mean": {stage: statistics.mean(r["seconds"].get(stage, 0.0) for r in members) for stage in stages},
            "llm_calls_mean": mean("llm_calls", members), "llm_calls_max": max(r["llm_calls"] for r in members),
            "prompt_tokens_mean": mean("prompt_tokens", members), "completion_tokens_mean": mean("completion_tokens", members),
            "llm_retries_mean": mean("llm_retries", members), "fallbacks": sum(1 for r in members if r["fallback"]),
            "constraint_retries_mean": mean("constraint_retries", members),
            "answered": mean("answered", members), "hits1_ranked": mean("hits1_ranked", members),
            "hits1_answered": mean("hits1", [r for r in members if r["answered"]]),
            "path_recall": mean("path_recall", [r for r in members if r.get("path_recall") is not None]),
            "path_triples_mean": mean("path_triples", [r for r in members if r.get("path_triples") is not None]),
        }
    report["rows"] = rows
    return report


def write_report(report: dict, out_dir: Path, title: str) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = [out_dir / "eval.json", out_dir / "eval.md"]
    written[0].write_text(json.dumps(report, indent=2) + "\n")
    k = report["k"]
    lines = [f"# {title}", "", f"{report['questions']} questions, method {report.get('method') or '—'}.", "",
             f"| group | questions | Hits@1 | Hits@{k} | F1 | answerable (subgraph) | Hits@1 answerable (subgraph) | answerable (KB) | Hits@1 answerable (KB) | linking | nodes | edges | s/question |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    fmt = lambda v: "—" if v is None else f"{v:.3f}"  # noqa: E731
    for name, g in report["groups"].items():
        lines.append(f"| {name} | {g['questions']} | {fmt(g['hits1'])} | {fmt(g[f'hits{k}'])} | {fmt(g['f1'])} | {g['answerable_in_subgraph']} | "
                     f"{fmt(g['hits1_answerable_subgraph'])} | {g['answerable_in_kb']} | {fmt(g['hits1_answerable_kb'])} | {fmt(g['linking_accuracy'])} | "
                     f"{g['nodes_mean']:.0f} | {g['edges_mean']:.0f} | {g['seconds_mean']['total']:.3f} |")
    if any(r["confidence"] is not None for r in report["rows"]):
        lines += ["", "Declining (answers below the answerability threshold are declined):", "",
                  "| group | answered | Hits@1 when answered | Hits@1 of the ranking |", "|---|---:|---:|---:|"]
        lines += [f"| {name} | {fmt(g['answered'])} | {fmt(g['hits1_answered'])} | {fmt(g['hits1_ranked'])} |" for name, g in report["groups"].items()]
    if any(r.get("path_recall") is not None for r in report["rows"]):
        lines += ["", "Retrieved paths:", "", "| group | answer recall of the paths | triples per question |", "|---|---:|---:|"]
        lines += [f"| {name} | {fmt(g['path_recall'])} | {fmt(g['path_triples_mean'])} |" for name, g in report["groups"].items()]
    first = next(iter(report["groups"].values()), None)
    stages = [st for st in (first["seconds_mean"] if first else {}) if st != "total"]
    lines += ["", "Cost per question (means; LLM calls also their maximum):", "",
              "| group | LLM calls | max calls | prompt tokens | completion tokens | retries | fallbacks | "
              + " | ".join(f"{st} s" for st in stages) + " | total s |",
              "|---|" + "---:|" * (7 + len(stages))]
    for name, g in report["groups"].items():
        lines.append(f"| {name} | {g['llm_calls_mean']:.2f} | {g['llm_calls_max']} | {g['prompt_tokens_mean']:.0f} | "
                     f"{g['completion_tokens_mean']:.0f} | {g['llm_retries_mean']:.2f} | {g['fallbacks']} | "
                     + " | ".join(f"{g['seconds_mean'][st]:.3f}" for st in stages) + f" | {g['seconds_mean']['total']:.3f} |")
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
