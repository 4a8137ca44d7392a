"""Template questions from a KG's own facts, as JSONL for `kgqa eval` — to check that a checkpoint
trained on MetaQA runs on a KG with another schema without code changes (KGFR's zero-shot claim).

    python bench/kg_questions.py countries ../shared/data/countries/countries_S1/test.txt > countries-s1.jsonl
    python bench/kg_questions.py fb15k237 ../shared/data/fb15k237/test.txt.gz --labels ../shared/data/fb15k237/entity2wikidata.json.gz \
        --sample 500 > fb15k237-test.jsonl

Countries: each `country locatedin region` fact becomes "which region is <country> located in?".
FB15k-237: each (head, relation) group becomes "what is the <last part of the relation> of <head>?",
answered by every tail of that group in the file. Questions come from held-out facts (test/valid
files) for the open-world setting, or from the training facts for plain look-ups; nothing here
looks at a model's answers.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
from collections import defaultdict
from pathlib import Path


def _open(path: Path):  # type: ignore[no-untyped-def]
    return gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else open(path, encoding="utf-8")


def _facts(path: Path) -> list[tuple[str, str, str]]:
    with _open(path) as f:
        return [tuple(line.rstrip("\n").split("\t")) for line in f if line.strip()]  # type: ignore[misc]


def countries(path: Path) -> list[dict]:
    return [
        {"question": f"which region is {h.replace('_', ' ')} located in?", "answers": [t], "topics": [h], "relation": r}
        for h, r, t in _facts(path)
        if r == "locatedin"
    ]


def _relation_phrase(relation: str) -> str:
    last = relation.rstrip("/").rsplit("/", 1)[-1]
    return last.replace("_", " ")


def fb15k237(path: Path, labels_path: Path) -> list[dict]:
    with _open(labels_path) as f:
        labels = {mid: row["label"] for mid, row in json.load(f).items() if row.get("label")}
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for h, r, t in _facts(path):
        if h in labels and t in labels:
            groups[(h, r)].append(labels[t])
    return [
        {"question": f"what is the {_relation_phrase(r)} of {labels[h]}?", "answers": sorted(set(tails)), "topics": [labels[h]], "relation": r}
        for (h, r), tails in sorted(groups.items())
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kg", choices=["countries", "fb15k237"])
    parser.add_argument("facts", type=Path, help="tab-separated facts to turn into questions")
    parser.add_argument("--labels", type=Path, help="FB15k-237: entity2wikidata.json(.gz)")
    parser.add_argument("--sample", type=int, help="keep N questions (fixed seed 0)")
    args = parser.parse_args()
    if args.kg == "fb15k237" and not args.labels:
        parser.error("fb15k237 needs --labels")
    rows = countries(args.facts) if args.kg == "countries" else fb15k237(args.facts, args.labels)
    if args.sample and len(rows) > args.sample:
        rows = random.Random(0).sample(rows, args.sample)
    for row in rows:
        sys.stdout.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{len(rows)} questions", file=sys.stderr)


if __name__ == "__main__":
    main()
