"""Entity-linking accuracy on MetaQA dev questions (brackets removed), per hop: as written, and with
one seeded typo in the topic's name (a deleted, doubled, swapped or replaced letter), with and
without the fuzzy/embedding fallbacks. A question counts as linked when the gold topic's entity is
among the linked topics. Prints a Markdown table; saves bench/results/linking.json.

    .venv/bin/python bench/linking.py --store oxigraph:///path/to/metaqa-store [--questions 300]
"""

from __future__ import annotations

import argparse
import json
import random
import string
import sys
import time
from pathlib import Path

from kgqa.retrieval.linking import link
from kgqa.loaders.qa import read_qa
from kgqa.retrieval.store_url import open_store

ROOT = Path(__file__).resolve().parents[1]
METAQA = ROOT.parent / "shared" / "data" / "metaqa"


def typo(word: str, rng: random.Random) -> str:
    """One edit inside a name of at least 4 letters (first letter kept)."""
    letters = [i for i, ch in enumerate(word) if ch.isalpha() and i > 0]
    if len(word) < 4 or not letters:
        return word
    i = rng.choice(letters)
    kind = rng.choice(["delete", "double", "swap", "replace"])
    if kind == "delete":
        return word[:i] + word[i + 1 :]
    if kind == "double":
        return word[:i] + word[i] + word[i:]
    if kind == "swap" and i + 1 < len(word) and word[i + 1].isalpha():
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    return word[:i] + rng.choice([c for c in string.ascii_lowercase if c != word[i].lower()]) + word[i + 1 :]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", required=True)
    ap.add_argument("--kg", default="metaqa")
    ap.add_argument("--questions", type=int, default=300, help="per hop (seeded sample of the dev file)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "linking.json")
    args = ap.parse_args()
    store = open_store(args.store, args.kg)
    rows = []
    for hop in (1, 2, 3):
        examples = random.Random(hop).sample(read_qa(METAQA / f"{hop}-hop" / "qa_dev.txt"), args.questions)
        gold = store.resolve(sorted({t for e in examples for t in e.topics}))
        for variant in ("as written", "one typo"):
            for fallback in (False, True):
                hits, fallbacks, seconds = 0, 0, 0.0
                for e in examples:
                    question = e.question
                    if variant == "one typo" and e.topics:
                        name = e.topics[0]
                        question = question.replace(name, typo(name, random.Random(f"{e.qid}")), 1)
                    t = time.perf_counter()
                    linked = link(store, question, fallback=fallback)
                    seconds += time.perf_counter() - t
                    wanted = {h.entity.iri for t_ in e.topics for h in gold.get(t_, [])}
                    hits += bool(wanted & set(linked.iris))
                    fallbacks += any(t_.match in ("fuzzy", "embedding") for t_ in linked.topics)
                rows.append({"hop": hop, "questions": variant, "fallbacks": fallback, "n": len(examples), "accuracy": hits / len(examples),
                             "fallback_used": fallbacks / len(examples), "ms_per_question": 1000 * seconds / len(examples)})
                print(json.dumps(rows[-1]), file=sys.stderr)
    print("\n## Entity linking on MetaQA dev questions (gold topic among the linked ones)\n")
    print("| hop | questions | fallbacks | n | accuracy | fallback used | ms/question |")
    print("|---:|---|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['hop']} | {r['questions']} | {'fuzzy + embedding' if r['fallbacks'] else 'off'} | {r['n']} | {r['accuracy']:.3f} | {r['fallback_used']:.3f} | {r['ms_per_question']:.1f} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
