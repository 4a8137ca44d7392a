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
from collections import defaultdict
from pathlib import Path

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


def read_facts(path: Path) -> tuple[dict[tuple[str, str], list[str]], dict[tuple[str, str], list[str]]]:
    """(subject, relation) → objects and (object, relation) → subjects, in file order."""
    out: dict[tuple[str, str], list[str]] = defaultdict(list)
    into: dict[tuple[str, str], list[str]] = defaultdict(list)
    with path.open(encoding="utf-8") as f:
        for line in f:
            head, relation, tail = line.rstrip("\n").split("\t")
            out[(head, relation)].append(tail)
            into[(tail, relation)].append(head)
    return out, into


def two_hop(out: dict, seed: int = 5) -> list[dict]:
    people = [head for (head, relation), tails in out.items() if relation == "works_for" and tails]
    random.Random(seed).shuffle(people)
    rows: list[dict] = []
    for person in people:  # the employer's city: one employer with one headquarters
        company = out[(person, "works_for")]
        city = out[(company[0], "headquartered_in")] if len(company) == 1 else []
        if len(city) == 1:
            rows.append({"question": EMPLOYER_CITY[len(rows) % 3].format(person), "answers": city, "topics": [person], "hop": 2})
        if len(rows) == 30:
            break
    n = 0
    for person in people:  # the spouse's birthplace: the marriage as stated from the person's side
        spouse = out[(person, "spouse_of")]
        born = out[(spouse[0], "born_in")] if len(spouse) == 1 else []
        if len(born) == 1:
            rows.append({"question": SPOUSE_BIRTHPLACE[n % 2].format(person), "answers": born, "topics": [person], "hop": 2})
            n += 1
        if n == 20:
            break
    return rows


def relations(out: dict, into: dict, seed: int = 9, per_kind: int = 15) -> list[dict]:
    rng = random.Random(seed)
    people = sorted({head for (head, relation), tails in out.items() if relation == "works_for" and tails})
    rng.shuffle(people)
    companies = sorted({head for (head, relation), tails in out.items() if relation == "headquartered_in" and tails})
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

    def knows_born(person: str) -> list[str]:
        known = out[(person, "knows")]
        born = [city for other in known for city in out[(other, "born_in")]]
        return born if known and born and len(set(born)) <= 3 else []

    def colleagues(person: str) -> list[str]:
        company = out[(person, "works_for")]
        others = [other for other in into[(company[0], "works_for")] if other != person] if len(company) == 1 else []
        return others if len(others) <= 20 else []

    def born_hq(person: str) -> list[str]:
        born = out[(person, "born_in")]
        return into[(born[0], "headquartered_in")] if len(born) == 1 else []

    ask("hq", 1, companies, lambda company: out[(company, "headquartered_in")])
    ask("knows", 1, people, lambda person: out[(person, "knows")])
    ask("knows_born", 2, people, knows_born)
    ask("colleagues", 2, people, colleagues)
    ask("born_hq", 2, people, born_hq)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kg", type=Path, required=True, help="bench/scale_kg.py's TSV")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    out, into = read_facts(args.kg)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, rows in (("scale-words-2hop.jsonl", two_hop(out)), ("scale-words-relations.jsonl", relations(out, into))):
        (args.out / name).write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
        print(f"{args.out / name}: {len(rows)} questions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
