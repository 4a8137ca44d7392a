"""The best any linker could do on `bench/scale.py`'s one-typo questions, against the linker's own
score. For each misspelt name, every label of the KG that `bench/linking.py`'s `typo` could have
turned into it, weighted by that generator's own probabilities (uniform over entities): a linker that
knew the generator, took a name written exactly as another entity's label as that entity, and
declined ties would link the ones where the gold name alone is likeliest; one that also guessed ties
gets 1/k of each. At 50M facts many one-word names lie one edit from several labels, so neither
reaches 1. Prints one table row per store path; nothing is written.

    .venv/bin/python bench/typo_ceiling.py --store oxigraph://WORK/stores/embedded-50M/store \\
        --questions WORK/data/questions-50M-typo.jsonl [--kg scale] [--verbose]
"""

from __future__ import annotations

import argparse
import json
import string
import sys
from collections import defaultdict
from pathlib import Path

from kgqa.retrieval.linking import link
from kgqa.retrieval.store_url import open_store
from kgqa.core.namespace import KGNamespace

LOWER = string.ascii_lowercase


def generator_probability(meant: str, typed: str) -> float:
    """P(typo(meant) == typed) for bench/linking.py's `typo`: a letter position after the first,
    then delete / double / swap (a replacement where no letter follows) / replace with another lower-case letter."""
    at = [i for i, ch in enumerate(meant) if ch.isalpha() and i > 0]
    if len(meant) < 4 or not at:
        return 0.0
    total = 0.0
    for i in at:
        others = [c for c in LOWER if c != meant[i].lower()]
        replaced = sum(meant[:i] + c + meant[i + 1:] == typed for c in others) / len(others)
        p = 0.25 * (meant[:i] + meant[i + 1:] == typed) + 0.25 * (meant[:i] + meant[i] + meant[i:] == typed) + 0.25 * replaced
        if i + 1 < len(meant) and meant[i + 1].isalpha():
            p += 0.25 * (meant[:i] + meant[i + 1] + meant[i] + meant[i + 2:] == typed)
        else:
            p += 0.25 * replaced
        total += p / len(at)
    return total


def sources(typed: str) -> set[str]:
    """Every text one edit of the generator's kinds away from `typed`, undone."""
    out = set()
    for i in range(len(typed) + 1):
        out.update(typed[:i] + c + typed[i:] for c in string.ascii_letters)  # a letter deleted
    for i in range(1, len(typed)):
        if typed[i] == typed[i - 1]:
            out.add(typed[:i] + typed[i + 1:])  # a letter doubled
        if typed[i] in LOWER:
            out.update(typed[:i] + c + typed[i + 1:] for c in string.ascii_letters)  # replaced (typo writes lower case)
    for i in range(len(typed) - 1):
        out.add(typed[:i] + typed[i + 1] + typed[i] + typed[i + 2:])  # swapped
    out.discard(typed)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", required=True)
    ap.add_argument("--questions", type=Path, required=True, help="a questions-*-typo.jsonl of bench/scale_kg.py")
    ap.add_argument("--kg", default="scale")
    ap.add_argument("--verbose", action="store_true", help="print each name the ideal linker misses")
    args = ap.parse_args()
    store = open_store(args.store, args.kg)
    ns = KGNamespace(args.kg)
    rows = [json.loads(line) for line in args.questions.read_text(encoding="utf-8").splitlines() if line.strip()]
    declined, guessed, linked = defaultdict(float), defaultdict(float), defaultdict(float)
    kinds: dict[str, int] = defaultdict(int)
    for q in rows:
        typed, gold = q["mention"], q["topics"][0]
        found = store.resolve(sorted(sources(typed) | {typed}))
        entities = {text: len({h.entity.iri for h in hits if h.entity.label == text}) for text, hits in found.items()}
        kinds[q["kind"]] += 1
        linked[q["kind"]] += ns.entity(gold) in link(store, q["question"]).iris
        if entities.get(typed):
            continue  # written as another entity's name: that entity is the one a linker takes
        weight = {text: n * generator_probability(text, typed) for text, n in entities.items() if n}
        best = max(weight.values(), default=0.0)
        top = [text for text, w in weight.items() if w == best and w > 0]
        if gold in top:
            share = 1.0 / sum(entities[text] for text in top)
            guessed[q["kind"]] += share
            declined[q["kind"]] += share == 1.0
        elif args.verbose:
            print(f"{q['kind']}: {typed!r} (meant {gold!r}): likeliest {top}", file=sys.stderr)
    n = len(rows)
    print("| kind | questions | kgqa's linker | ideal, ties declined | ideal, ties guessed |\n|---|---:|---:|---:|---:|")
    for kind in sorted(kinds) + ["all"]:
        pick = (lambda d: sum(d.values())) if kind == "all" else (lambda d: d[kind])  # noqa: E731
        m = n if kind == "all" else kinds[kind]
        print(f"| {kind} | {m} | {pick(linked) / m:.3f} | {pick(declined) / m:.3f} | {pick(guessed) / m:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
