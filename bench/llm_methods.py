"""LLM cost per question, per method: calls, tokens, retries, fallbacks and seconds per stage on MetaQA
dev questions (the same fixed-seed sample for every method, hops mixed), with Gemma 3 270M base
behind llama.cpp's OpenAI-compatible server on loopback (or any --llm URL), on the embedded store.
Hits@1 is printed too, for the record: a 270M base model is not expected to answer well.

    .venv/bin/python bench/llm_methods.py [--questions 200] [--methods kgfr,lmp-L2,lmp-L3,llm-only]
    .venv/bin/python bench/llm_methods.py --methods kgfr-no-llm,kgfr,text2query,rapl,grasp,lmp-L2   # the comparison

text2query's queries are counted by verdict (ran, no rows, refused by a rule, failed in the store) and
its questions by how they ended (answered by a query it wrote, or by kgfr's fallback).

Prints a Markdown table; saves bench/results/llm_methods.json (rows per question included).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docker"))
from launchers import LlamaCppServer  # noqa: E402

from kgqa.eval.report import evaluate  # noqa: E402
from kgqa.llm.openai_compat import OpenAICompatibleLLM  # noqa: E402
from kgqa.loaders import load_file  # noqa: E402
from kgqa.methods import REGISTRY, build_runner  # noqa: E402
from kgqa.loaders.qa import read_qa  # noqa: E402
from kgqa.sparql.embedded import EmbeddedWriter  # noqa: E402

METAQA = ROOT.parent / "shared" / "data" / "metaqa"
VARIANTS = {
    "kgfr-no-llm": ("kgfr", {}),
    "kgfr": ("kgfr", {"max_steps": 3}),
    "text2query": ("text2query", {"query_retries": 2}),
    "rapl": ("rapl", {}),
    "grasp": ("grasp", {}),
    "lmp-L2": ("lmp", {"width": 3, "depth": 2}),
    "lmp-L3": ("lmp", {"width": 3, "depth": 3}),
    "llm-only": ("llm-only", {}),
    "llm-only-cot": ("llm-only-cot", {}),
}


def bound(name: str, options: dict) -> str:
    """The registry's bound for one topic entity (LMP: also the count without retries)."""
    method = REGISTRY.get(VARIANTS[name][0])
    most = method.call_bound(method.make_options(options), 1, name != "kgfr-no-llm")
    return f"{2 * options['depth'] + 1} (≤ {most})" if method.name == "lmp" else str(most)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", type=int, default=200)
    ap.add_argument("--methods", default="kgfr,lmp-L2,lmp-L3,llm-only")
    ap.add_argument("--llm", default=None, help="an OpenAI-compatible base URL (default: start llama.cpp with the bundled Gemma)")
    ap.add_argument("--model", default="gemma3-270m")
    ap.add_argument("--store", type=Path, default=None, help="an embedded store already holding MetaQA as KG 'metaqa'")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "llm_methods.json")
    args = ap.parse_args()
    if not METAQA.exists():
        print(f"needs {METAQA}", file=sys.stderr)
        return 2
    names = args.methods.split(",")
    unknown = set(names) - set(VARIANTS)
    if unknown:
        print(f"unknown method(s) {sorted(unknown)}; choose from {sorted(VARIANTS)}", file=sys.stderr)
        return 2
    pool = [ex for hop in (1, 2, 3) for ex in read_qa(METAQA / f"{hop}-hop" / "qa_dev.txt")]
    examples = random.Random(0).sample(pool, args.questions)
    results: dict = {"questions": args.questions, "model": args.model, "methods": {}}
    with tempfile.TemporaryDirectory() as tmp, LlamaCppServer(log_dir=Path(tmp)) if not args.llm else _Given(args.llm) as server:
        if args.store:
            from kgqa import open_store

            store = open_store(f"oxigraph://{args.store.resolve()}", "metaqa")
        else:
            writer = EmbeddedWriter.open(Path(tmp) / "store", "metaqa")
            load_file(writer, METAQA / "kb_reconstructed.txt")
            store = writer.reader()
        llm = OpenAICompatibleLLM(model=args.model, base_url=server.url, mode="completion")
        for name in names:
            method, options = VARIANTS[name]
            runner = build_runner(method, store, None if name == "kgfr-no-llm" else llm, options=options)
            started = time.perf_counter()
            report = evaluate(runner, store, examples, gold_topics=False,
                              progress=lambda n: print(f"\r{name}: {n}/{len(examples)}", end="", file=sys.stderr, flush=True))
            print(file=sys.stderr)
            report["wall_seconds"] = time.perf_counter() - started
            report["bound"] = bound(name, options)
            results["methods"][name] = report
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(results, indent=1))
    print(table(results))
    return 0


class _Given:
    def __init__(self, url: str):
        self.url = url

    def __enter__(self) -> "_Given":
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def table(results: dict) -> str:
    stages = ["link", "retrieve", "score", "message_passing", "llm", "answer", "fallback", "map_answers", "total"]
    lines = [f"{results['questions']} MetaQA dev questions (hops mixed, seed 0), model {results['model']}", "",
             "| method | calls mean | calls max | bound | no-retry questions at 2L+1 | prompt tok | completion tok | HTTP retries | A.7 retries | fallbacks | Hits@1 | "
             + " | ".join(f"{s} s" for s in stages) + " |",
             "|---|" + "---:|" * (10 + len(stages))]
    for name, report in results["methods"].items():
        g = report["groups"]["all"]
        secs = g["seconds_mean"]
        exact = "—"
        if name.startswith("lmp-L"):
            depth = int(name[len("lmp-L"):])
            clean = [r for r in report["rows"] if not r["constraint_retries"] and not r["fallback"]]
            exact = f"{sum(r['llm_calls'] == 2 * depth + 1 for r in clean)}/{len(clean)}"
        lines.append(f"| {name} | {g['llm_calls_mean']:.2f} | {g['llm_calls_max']} | {report['bound']} | {exact} | {g['prompt_tokens_mean']:.0f} | "
                     f"{g['completion_tokens_mean']:.0f} | {g['llm_retries_mean']:.2f} | {g['constraint_retries_mean']:.2f} | {g['fallbacks']} | {g['hits1']:.3f} | "
                     + " | ".join(f"{secs[s]:.3f}" if s in secs else "—" for s in stages) + " |")
    written = {name: report for name, report in results["methods"].items() if any(r.get("queries") for r in report["rows"])}
    if written:
        lines += ["", "| method | queries written | ran | no rows | refused | failed | refusals by rule | answered by its query | fell back to kgfr |",
                  "|---|---:|---:|---:|---:|---:|---|---:|---:|"]
        for name, report in written.items():
            verdicts = [v for r in report["rows"] for v in r["queries"]]
            count = {v: verdicts.count(v) for v in ("ran", "no rows", "refused", "failed")}
            every_rule = [rule for r in report["rows"] for rule in r.get("query_rules", [])]
            rules = {rule: every_rule.count(rule) for rule in set(every_rule)}
            n = len(report["rows"])
            fell = sum(bool(r["fallback"]) for r in report["rows"])
            lines.append(f"| {name} | {len(verdicts)} | {count['ran']} | {count['no rows']} | {count['refused']} | {count['failed']} | "
                         f"{', '.join(f'{k} {v}' for k, v in sorted(rules.items())) or '—'} | {n - fell}/{n} | {fell}/{n} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
