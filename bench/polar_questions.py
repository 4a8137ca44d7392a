"""Questions asked yes or no of two entities (kgfr/polar.py), over the MetaQA KB or the scale KG, in words of our
own: for each phrasing, pairs the KG links by the relation asked ("was F directed by D": yes) and pairs it links
by another relation only ("was F written by D" where D directed F and wrote nothing of it: the KG says no such
thing, kgfr declines). For evaluation only; measured in the README ("Asked yes or no").

    python bench/polar_questions.py --kb ../shared/data/metaqa/kb_reconstructed.txt --separator '|' --out DIR/polar-metaqa.jsonl
    python bench/polar_questions.py --kb DIR/kg-100k.tsv --separator tab --out DIR/polar-scale.jsonl
    kgqa eval DIR/polar-metaqa.jsonl --store … --kg metaqa --topics gold

JSONL: question, answers (["yes"], or [] where the KG does not say so), topics (both entities), hop 1, kind
("yes" / "not said") and the phrasing.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from metaqa_free_words import read_kb  # noqa: E402  ((subject, relation) → objects, (object, ~relation) → subjects)

# phrasing → (relation the question asks, relation that links the pairs asked); the two alike: the KG says yes
PHRASINGS = {
    "metaqa": [
        ("was {s} directed by {o}", "directed_by", "directed_by"),
        ("was {s} directed by {o}", "directed_by", "written_by"),
        ("was {s} directed by {o}", "directed_by", "starred_actors"),
        ("was {s} written by {o}", "written_by", "written_by"),
        ("was {s} written by {o}", "written_by", "directed_by"),
        ("did {o} act in {s}", "starred_actors", "starred_actors"),
        ("did {o} act in {s}", "starred_actors", "directed_by"),
        ("is {s} in {o}", "in_language", "in_language"),
        ("was {s} released in {o}", "release_year", "release_year"),
    ],
    "scale": [
        ("was {s} born in {o}", "born_in", "born_in"),
        ("was {s} born in {o}", "born_in", "lives_in"),
        ("does {s} work for {o}", "works_for", "works_for"),
        ("is {s} married to {o}", "spouse_of", "spouse_of"),
        ("is {s} married to {o}", "spouse_of", "knows"),
        ("does {s} know {o}", "knows", "knows"),
        ("does {s} live in {o}", "lives_in", "lives_in"),
        ("does {s} live in {o}", "lives_in", "born_in"),
    ],
}


def questions(kb: dict[tuple[str, str], set[str]], phrasings: list[tuple[str, str, str]], per: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for phrasing, asked, linking in phrasings:
        pairs = sorted((s, o) for (s, r), objects in kb.items() if r == linking for o in objects
                       if s != o and (asked == linking or o not in kb.get((s, asked), set())))
        for s, o in rng.sample(pairs, min(per, len(pairs))):
            said = asked == linking
            out.append({"question": phrasing.format(s=s, o=o), "answers": ["yes"] if said else [], "topics": [s, o], "hop": 1,
                        "kind": "yes" if said else "not said", "phrasing": f"{phrasing} ({linking})"})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kb", type=Path, required=True, help="the KG's facts, subject SEP relation SEP object a line")
    parser.add_argument("--separator", default="|", help="'|' (MetaQA) or 'tab' (the scale KG's TSV)")
    parser.add_argument("--kg", choices=sorted(PHRASINGS), default=None, help="which phrasings (default: metaqa for '|', scale for tab)")
    parser.add_argument("--per", type=int, default=10, help="questions per phrasing")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    separator = "\t" if args.separator == "tab" else args.separator
    kg = args.kg or ("scale" if separator == "\t" else "metaqa")
    rows = questions(read_kb(args.kb, separator), PHRASINGS[kg], args.per, args.seed)
    args.out.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    print(f"wrote {len(rows)} questions to {args.out}")


if __name__ == "__main__":
    main()
