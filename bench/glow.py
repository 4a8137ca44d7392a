"""GLOW on open-world benchmarks: FB15k-237-OW (seven patterns, one of them two-hop) and Countries S1–S3.

    python bench/glow.py build --work /tmp/glow               # benchmarks (kgqa openworld build) + embedded stores
    python bench/glow.py train --work /tmp/glow               # one checkpoint per KG
    python bench/glow.py bundle --work /tmp/glow              # copy them into the package, each with a README
    python bench/glow.py table --work /tmp/glow --llm gemma3-270m [--per-pattern 20] [--generate] [--plain] [--llm-cache DIR]
    python bench/glow.py link --work /tmp/glow --llm gemma3-270m [--per-pattern 20]   # linking: phrasings vs the LLM (App. A.1)

The table: accuracy per pattern (the answer is one of the deleted facts' classes) of the majority
class, the GNN alone, and the LLM with each prompt variant (llm-only, L, G, N, GN), the LLM choosing
by label log-likelihood, calibrated (the glow method's default: less the likelihood after the prompt
with the question's fields set to N/A, plus the log of the class's prior: the GNN's probability for the
entity in N and GN, its share in the KG in L and G); --plain adds each
variant by likelihood alone (`--no-calibrate`; columns "<variant>-plain"); --generate adds free
generation mapped onto the labels for llm-only and GN.
Questions are the first N per pattern of each benchmark (they were drawn at random when it was built).

`link` scores the linking alone, with no topic given: the share of questions whose pattern (target
relation) and entity are found, by the patterns' phrasings (the text encoder) and by the LLM's two
App. A.1 prompts, and how often the LLM's replies could not be read (the method then falls back to
phrasings).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
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


def train_all(work: Path, only: list[str] | None) -> None:
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
        (work / f"{kg}.ckpt" / "README.md").write_text(checkpoint_readme(kg, meta))


def bundle(work: Path, only: list[str] | None) -> None:
    """Copy trained checkpoints into the package (engine/methods/glow/checkpoints/<kg>), each with its README."""
    for kg in BENCHMARKS:
        if only and kg not in only:
            continue
        source, target = work / f"{kg}.ckpt", CHECKPOINTS / kg
        meta = json.loads((source / "config.json").read_text())
        if "benchmark" not in meta:
            meta["benchmark"] = json.loads((work / kg / "manifest.json").read_text())
            (source / "config.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
        (source / "README.md").write_text(checkpoint_readme(kg, meta))
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        for name in ("config.json", "predictions.npz", "README.md"):
            shutil.copy2(source / name, target / name)
        print(f"{kg}: bundled in {target}")


SOURCES = {
    "fb15k237-ow": "FB15k-237 (Toutanova & Chen 2015: the FB15K-237 Knowledge Base Completion Dataset of Microsoft Research, from Freebase; under its terms) with Wikidata labels "
                   "(villmow/datasets_knowledge_embedding, MIT): train, valid and test facts together",
    "countries": "Countries S1–S3 (Bouchard, Singh & Trouillon 2015), from TimDettmers/ConvE (MIT): train facts; valid and test held out",
}


def checkpoint_readme(kg: str, meta: dict) -> str:
    bench = meta["benchmark"]
    lines = [f"# {kg}", "",
             f"GLOW label predictors (`kgqa.methods.glow`, format {meta['format']}): one RGCN per pattern (eq. 2; 2 layers, "
             f"{meta['train']['dim']}-d learned node embeddings, {meta['train']['hidden']} hidden, dropout {meta['train']['dropout']}, "
             f"{meta['train']['bases']} bases), trained on CPU by `python bench/glow.py train --work WORK --only {kg}` on the KG that "
             f"`kgqa openworld build` left (seed {bench['seed']}): {bench['kept']:,} facts, {bench['deleted']:,} deleted or held out. "
             "Each pattern's RGCN reads the KG without the facts that state its classes. The checkpoint holds every entity's "
             f"top {meta['train']['top']} classes per pattern (`predictions.npz`), not the weights.", "",
             "| pattern | classes | labelled entities | validation accuracy | majority class | epochs |", "|---|---:|---:|---:|---:|---:|"]
    for name, m in meta["metrics"].items():
        lines.append(f"| {name} | {m['classes']} | {m['labelled']:,} | {m['validation_accuracy']:.3f} | {m['validation_majority']:.3f} | {m['epochs']} |")
    lines += ["", "Validation: 10 % of the labelled entities (seed 0), whose answering facts stay in the KG but not in the graph the RGCN reads. "
              "The benchmark's questions (their facts deleted) are never trained on; accuracy on them: `python bench/glow.py table`.", "",
              f"Data: {SOURCES['countries' if kg.startswith('countries') else kg]}.", ""]
    return "\n".join(lines)


def table(work: Path, only: list[str] | None, llm_spec: str | None, per_pattern: int, generate: bool, cache: Path | None,
          plain: bool = False) -> None:
    from kgqa.llm.spec import open_llm

    llm = open_llm(llm_spec, cache) if llm_spec else None
    for kg in BENCHMARKS:
        if only and kg not in only:
            continue
        folder, checkpoint = work / kg, work / f"{kg}.ckpt"
        meta = json.loads((checkpoint / "config.json").read_text())
        store = EmbeddedStore.open(folder / "store", kg)
        questions = [json.loads(line) for line in (folder / "questions.jsonl").read_text().splitlines()]
        questions = _first(questions, per_pattern)
        runs = {"gnn": build_runner("glow", store, None, checkpoint, {"use_stored": False})}
        if llm is not None:
            runs.update({v: build_runner("glow", store, llm, checkpoint, {"variant": v, "use_stored": False}) for v in VARIANTS})
            if plain:
                runs.update({f"{v}-plain": build_runner("glow", store, llm, checkpoint, {"variant": v, "calibrate": False, "use_stored": False})
                             for v in VARIANTS})
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


def _first(questions: list[dict], per_pattern: int) -> list[dict]:
    seen: dict[str, int] = defaultdict(int)
    first = []
    for q in questions:
        seen[q["pattern"]] += 1
        if seen[q["pattern"]] <= per_pattern:
            first.append(q)
    return first


def link(work: Path, only: list[str] | None, llm_spec: str, per_pattern: int, cache: Path | None) -> None:
    from kgqa.core.answer import Answer
    from kgqa.llm.spec import open_llm
    from kgqa.methods.glow.answer import GLOWAnswerer, GLOWSettings, checkpoint_for
    from kgqa.retrieval.linking import link_or_resolve

    llm = open_llm(llm_spec, cache)
    print("| benchmark | questions | pattern by phrasings | pattern by LLM | entity by the linker | entity by LLM mention | LLM unreadable | s/question (LLM) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for kg in BENCHMARKS:
        if only and kg not in only:
            continue
        store = EmbeddedStore.open(work / kg / "store", kg)
        answerer = GLOWAnswerer(store, checkpoint_for(None, kg)).with_options(GLOWSettings(link="llm"), llm)
        questions = _first([json.loads(line) for line in (work / kg / "questions.jsonl").read_text().splitlines()], per_pattern)
        counts: dict[str, int] = defaultdict(int)
        seconds = 0.0
        for i, q in enumerate(questions):
            if i and i % 10 == 0:
                print(f"{kg}: {i}/{len(questions)} questions, {seconds:.0f} s in LLM linking", file=sys.stderr, flush=True)
            gold_entity = store.resolve(q["topics"])[q["topics"][0]][0].entity.iri
            linking = link_or_resolve(store, q["question"], None, answerer.encoder)
            if linking.topics:
                counts["entity"] += linking.topics[0].entity.iri == gold_entity
                counts["phrasings"] += answerer.pick_pattern(q["question"], linking.topics[0].query)[0].name == q["pattern"]
            started = time.perf_counter()
            by_llm = answerer.llm_link(Answer(q["question"], "glow"))
            seconds += time.perf_counter() - started
            if by_llm is None:
                counts["unreadable"] += 1
                continue
            counts["llm"] += by_llm[1].name == q["pattern"]
            mention = link_or_resolve(store, q["question"], [by_llm[0].entity], answerer.encoder)
            counts["mention"] += bool(mention.topics) and mention.topics[0].entity.iri == gold_entity
        n = max(1, len(questions))
        print(f"| {kg} | {len(questions)} | " + " | ".join(f"{counts[k] / n:.2f}" for k in ("phrasings", "llm", "entity", "mention", "unreadable"))
              + f" | {seconds / n:.1f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("step", choices=("build", "train", "bundle", "table", "link"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/glow"))
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--llm")
    parser.add_argument("--llm-cache", type=Path)
    parser.add_argument("--per-pattern", type=int, default=20)
    parser.add_argument("--generate", action="store_true")
    parser.add_argument("--plain", action="store_true")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.step == "build":
        build_all(args.work, args.only)
    elif args.step == "train":
        train_all(args.work, args.only)
    elif args.step == "bundle":
        bundle(args.work, args.only)
    elif args.step == "link":
        link(args.work, args.only, args.llm or "gemma3-270m", args.per_pattern, args.llm_cache)
    else:
        table(args.work, args.only, args.llm, args.per_pattern, args.generate, args.llm_cache, args.plain)


if __name__ == "__main__":
    main()
