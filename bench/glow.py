"""GLOW on open-world benchmarks: FB15k-237-OW (seven patterns, one of them two-hop) and Countries S1–S3.

    python bench/glow.py build --work /tmp/glow               # benchmarks (kgqa openworld build) + embedded stores
    python bench/glow.py train --work /tmp/glow [--bundle]    # one checkpoint per KG (--bundle: copy into the package)
    python bench/glow.py table --work /tmp/glow --llm gemma3-270m [--per-pattern 20] [--generate] [--llm-cache DIR]

The table: accuracy per pattern (the answer is one of the deleted facts' classes) of the majority
class, the GNN alone, and the LLM with each prompt variant (llm-only, L, G, N, GN), the LLM choosing
by label log-likelihood; --generate adds free generation mapped onto the labels for llm-only and GN.
Questions are the first N per pattern of each benchmark (they were drawn at random when it was built).
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from collections import defaultdict
from pathlib import Path

from kgqa.loaders import load_file
from kgqa.methods import build_runner
from kgqa.methods.glow.answer import CHECKPOINTS
from kgqa.methods.glow.openworld import build, check_absent, read_facts, read_labels
from kgqa.methods.glow.patterns import load_patterns
from kgqa.methods.glow.train import GLOWTrainConfig, train
from kgqa.sparql.embedded import EmbeddedStore, EmbeddedWriter

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
FB = SHARED / "fb15k237"
BENCHMARKS = {  # kg name: (fact files, held-out files, labels, patterns)
    "fb15k237-ow": ([FB / "train.txt.gz", FB / "valid.txt.gz", FB / "test.txt.gz"], [], FB / "entity2wikidata.json.gz", "fb15k237"),
    **{f"countries-s{i}": ([SHARED / "countries" / f"countries_S{i}" / "train.txt"],
                           [SHARED / "countries" / f"countries_S{i}" / n for n in ("valid.txt", "test.txt")], None, "countries") for i in (1, 2, 3)},
}
VARIANTS = ("llm-only", "l", "g", "n", "gn")


def build_all(work: Path, only: list[str] | None) -> None:
    for kg, (files, held, labels, patterns) in BENCHMARKS.items():
        if only and kg not in only:
            continue
        folder = work / kg
        world = build(kg, [f for p in files for f in read_facts(p)], load_patterns(patterns), 100, 11,
                      read_labels(labels) if labels else None, [f for p in held for f in read_facts(p)], [str(p) for p in files + held])
        assert not check_absent(world)
        world.write(folder)
        store = folder / "store"
        if store.exists():
            shutil.rmtree(store)
        writer = EmbeddedWriter.open(store, kg)
        load_file(writer, folder / "kg.tsv", "tsv")
        if world.labels:
            load_file(writer, folder / "labels.tsv", "labels")
        writer.close()
        print(f"{kg}: {world.manifest['kept']:,} facts kept, {world.manifest['deleted']:,} deleted, questions {world.manifest['questions']}", flush=True)


def train_all(work: Path, only: list[str] | None, bundle: bool) -> None:
    for kg in BENCHMARKS:
        if only and kg not in only:
            continue
        folder = work / kg
        raw = json.loads((folder / "patterns.json").read_text())
        patterns = load_patterns(folder / "patterns.json")
        meta = train(read_facts(folder / "kg.tsv"), patterns.patterns, work / f"{kg}.ckpt", GLOWTrainConfig(top=5), kg, patterns.description,
                     {p["name"]: p["label_texts"] for p in raw["patterns"]}, log=lambda line: print(line, flush=True))
        meta_path = work / f"{kg}.ckpt" / "config.json"
        meta["benchmark"] = json.loads((folder / "manifest.json").read_text())
        meta_path.write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
        if bundle:
            target = CHECKPOINTS / kg
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(work / f"{kg}.ckpt", target)


def table(work: Path, only: list[str] | None, llm_spec: str | None, per_pattern: int, generate: bool, cache: Path | None) -> None:
    from kgqa.llm.spec import open_llm

    llm = open_llm(llm_spec, cache) if llm_spec else None
    for kg in BENCHMARKS:
        if only and kg not in only:
            continue
        folder, checkpoint = work / kg, work / f"{kg}.ckpt"
        meta = json.loads((checkpoint / "config.json").read_text())
        store = EmbeddedStore.open(folder / "store", kg)
        questions = [json.loads(line) for line in (folder / "questions.jsonl").read_text().splitlines()]
        seen: dict[str, int] = defaultdict(int)
        first = []
        for q in questions:
            seen[q["pattern"]] += 1
            if seen[q["pattern"]] <= per_pattern:
                first.append(q)
        questions = first
        runs = {"gnn": build_runner("glow", store, None, checkpoint, {"use_stored": False})}
        if llm is not None:
            runs.update({v: build_runner("glow", store, llm, checkpoint, {"variant": v, "use_stored": False}) for v in VARIANTS})
            if generate:
                runs.update({f"{v}-gen": build_runner("glow", store, llm, checkpoint, {"variant": v, "choose": "generate", "use_stored": False})
                             for v in ("llm-only", "gn")})
        rows = []
        started = time.perf_counter()
        with open(work / f"{kg}.rows.jsonl", "w") as log:
            for i, q in enumerate(questions):
                row = {"pattern": q["pattern"], "hop": q["hop"], "question": q["question"], "gold": q["answers"],
                       "majority": meta["metrics"][q["pattern"]]["majority_class"] in q["answer_ids"]}
                for name, run in runs.items():
                    answer = run(q["question"], q["topics"])
                    label = answer.answers[0].label if answer.answers else None
                    row[name] = label in q["answers"]
                    row[f"{name}:answer"] = label
                    row[f"{name}:seconds"] = round(answer.trace.seconds.get("total", 0.0), 3)
                rows.append(row)
                log.write(json.dumps(row) + "\n")
                if (i + 1) % 20 == 0:
                    print(f"{kg}: {i + 1}/{len(questions)} questions, {time.perf_counter() - started:.0f} s", flush=True)
        columns = ["majority", *runs]
        print(f"\n### {kg} ({len(rows)} questions; LLM {llm_spec or 'none'}; accuracy, exact match by class)\n")
        print("| pattern | hop | n | " + " | ".join(columns) + " |")
        print("|---|---|---|" + "---|" * len(columns))
        groups: dict[tuple, list] = defaultdict(list)
        for r in rows:
            groups[(r["pattern"], r["hop"])].append(r)
            groups[("all", r["hop"])].append(r)
        for (pattern, hop), part in groups.items():
            print(f"| {pattern} | {hop} | {len(part)} | " + " | ".join(f"{sum(r[c] for r in part) / len(part):.2f}" for c in columns) + " |")
        seconds = {c: sum(r[f"{c}:seconds"] for r in rows) / max(1, len(rows)) for c in runs}
        print("\nseconds per question: " + ", ".join(f"{c} {s:.2f}" for c, s in seconds.items()), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("step", choices=("build", "train", "table"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/glow"))
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--bundle", action="store_true")
    parser.add_argument("--llm")
    parser.add_argument("--llm-cache", type=Path)
    parser.add_argument("--per-pattern", type=int, default=20)
    parser.add_argument("--generate", action="store_true")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.step == "build":
        build_all(args.work, args.only)
    elif args.step == "train":
        train_all(args.work, args.only, args.bundle)
    else:
        table(args.work, args.only, args.llm, args.per_pattern, args.generate, args.llm_cache)


if __name__ == "__main__":
    main()
