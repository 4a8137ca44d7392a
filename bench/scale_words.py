"""Questions over bench/scale_kg.py's KG under its plain relation names (`born_in`, `works_for`, `knows`,
`headquartered_in`, `spouse_of`: no types, as a KG loaded from a CSV), in words of our own: the spouse's
birthplace, the employer's city, whom X knows (and which way), where the people X knows were born, X's
colleagues, and the companies based where X was born. For evaluation only: nothing trains on the scale KG.
Measured in the README ("The named neighbour in a KG without types" and after).

    python bench/scale_kg.py --facts 1e5 --out DIR
    kgqa load DIR/kg-100k.tsv --kg scale --store oxigraph://DIR/store
    python bench/scale_words.py --kg DIR/kg-100k.tsv --out DIR
    kgqa eval DIR/scale-words-2hop.jsonl --store oxigraph://DIR/store --kg scale --topics gold
    kgqa eval DIR/scale-words-relations.jsonl --store oxigraph://DIR/store --kg scale --topics gold

writes DIR/scale-words-2hop.jsonl (50: spouse's birthplace in 2 phrasings, employer's city in 3; 10 each) and
DIR/scale-words-relations.jsonl (75: 5 kinds, 3 phrasings, 5 each), JSONL: question, answers, topics, hop, kind.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from metaqa_free_words import read_kb  # noqa: E402  ((subject, relation) → objects, (object, ~relation) → subjects)

Facts = dict[tuple[str, str], set[str]]

EMPLOYER_CITY = ["where is the company {} works for headquartered", "in which city is {}'s employer based", "where is the employer of {} located"]
SPOUSE_BIRTHPLACE = ["where was the spouse of {} born", "in which city was {}'s wife born"]
RELATIONS = {  # kind → phrasings
    "hq": ["where is {} headquartered", "in which city is {} based", "where is the headquarters of {}"],
    "knows": ["who does {} know", "which people does {} know", "whom does {} know"],
    "knows_born": ["where were the people {} knows born", "in which cities were the acquaintances of {} born", "where was someone {} knows born"],
    "colleagues": ["who else works for the company {} works for", "who are the colleagues of {}", "which people work at the same company as {}"],
    "born_hq": ["which companies are headquartered in the city where {} was born", "what companies are based in {}'s birthplace",
                "which firms have their headquarters where {} was born"],
}


def _only(kb: Facts, node: str, relation: str) -> str | None:
    """The one object of (node, relation), or None where there are none or several."""
    found = kb.get((node, relation), set())
    return next(iter(found)) if len(found) == 1 else None


def two_hop(kb: Facts, seed: int = 5) -> list[dict]:
    people = [head for (head, relation) in kb if relation == "works_for"]
    random.Random(seed).shuffle(people)
    rows: list[dict] = []
    for person in people:  # the employer's city: one employer with one headquarters
        company = _only(kb, person, "works_for")
        city = _only(kb, company, "headquartered_in") if company else None
        if city:
            rows.append({"question": EMPLOYER_CITY[len(rows) % 3].format(person), "answers": [city], "topics": [person], "hop": 2})
        if len(rows) == 30:
            break
    n = 0
    for person in people:  # the spouse's birthplace: the marriage as stated from the person's side
        spouse = _only(kb, person, "spouse_of")
        born = _only(kb, spouse, "born_in") if spouse else None
        if born:
            rows.append({"question": SPOUSE_BIRTHPLACE[n % 2].format(person), "answers": [born], "topics": [person], "hop": 2})
            n += 1
        if n == 20:
            break
    return rows


def relations(kb: Facts, seed: int = 9, per_kind: int = 15) -> list[dict]:
    rng = random.Random(seed)
    people = sorted({head for (head, relation) in kb if relation == "works_for"})
    rng.shuffle(people)
    companies = sorted({head for (head, relation) in kb if relation == "headquartered_in"})
    rng.shuffle(companies)
    rows: list[dict] = []

    def ask(kind: str, hop: int, topics: list[str], answers_of) -> None:  # type: ignore[no-untyped-def]
        n = 0
        for topic in topics:
            answers = answers_of(topic)
            if answers:
                rows.append({"question": RELATIONS[kind][n % 3].format(topic), "answers": sorted(set(answers)), "topics": [topic],
                             "hop": hop, "kind": kind})
                n += 1
            if n == per_kind:
                return

    def knows_born(person: str) -> set[str]:
        born = {city for other in kb.get((person, "knows"), ()) for city in kb.get((other, "born_in"), ())}
        return born if len(born) <= 3 else set()

    def colleagues(person: str) -> set[str]:
        company = _only(kb, person, "works_for")
        others = kb.get((company, "~works_for"), set()) - {person} if company else set()
        return others if len(others) <= 20 else set()

    def born_hq(person: str) -> set[str]:
        born = _only(kb, person, "born_in")
        return kb.get((born, "~headquartered_in"), set()) if born else set()

    ask("hq", 1, companies, lambda company: kb.get((company, "headquartered_in"), set()))
    ask("knows", 1, people, lambda person: kb.get((person, "knows"), set()))
    ask("knows_born", 2, people, knows_born)
    ask("colleagues", 2, people, colleagues)
    ask("born_hq", 2, people, born_hq)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kg", type=Path, required=True, help="bench/scale_kg.py's TSV")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    kb = read_kb(args.kg, "\t")
    args.out.mkdir(parents=True, exist_ok=True)
    for name, rows in (("scale-words-2hop.jsonl", two_hop(kb)), ("scale-words-relations.jsonl", relations(kb))):
        (args.out / name).write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
        print(f"{args.out / name}: {len(rows)} questions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
