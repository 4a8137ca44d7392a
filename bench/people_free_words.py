"""An evaluation set over a people-and-places KG that no checkpoint trains on (bench/scale_kg.py's
generated world: people born in, living in and citizens of places, married, employed by companies
headquartered in cities of countries, films and their directors), asked in words of our own:
synonyms of the relations' names ("which country is X's wife from", "who started the firm X works
at"), stacked possessives, "the … of the one who …", 1 to 3 hops; and questions for facts the KG does
not hold about entities it does hold (a person's religion, a city's population), to be declined.
Issue 46's "Freebase-style KG of people and places, phrased by people". For evaluation only: nothing
trains on the scale KG or these phrasings.

    python bench/scale_kg.py --facts 1e5 --out DIR                 # the KG: DIR/kg-100k.tsv
    python bench/people_free_words.py --kg DIR/kg-100k.tsv --out DIR [--per-template 10]
    kgqa load DIR/kg-100k.tsv --kg scale --store oxigraph://DIR/store
    kgqa eval DIR/people-2hop.jsonl --store oxigraph://DIR/store --kg scale --topics gold
    python bench/people_free_words.py --kg DIR/kg-100k.tsv --out DIR --freebase-names DIR/kg-100k-fb.tsv

writes DIR/people-1hop.jsonl, people-2hop.jsonl, people-3hop.jsonl and people-lacking.jsonl (JSONL:
question, answers, topics, hop). Answers are read from the TSV along each phrasing's relation path,
the topic itself left out; `spouse_of` is followed both ways (the KG states each marriage once).
`--freebase-names FILE` also writes the KG with Freebase's names for its relations
(`/people/person/place_of_birth`, `/people/person/spouse_s./people/marriage/spouse`, …: FREEBASE), the
"Freebase-style" graph; the question files serve both (they name entities and answers by label).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from metaqa_free_words import phrased, read_kb  # noqa: E402

SPOUSE = "spouse_of|~spouse_of"  # a marriage is one fact: "X's wife" is either end

# (path from the topic: relation, "~relation" against its direction), the topic's kind, phrasings ({} = the topic)
TEMPLATES: list[tuple[tuple[str, ...], str, list[str]]] = [
    (("born_in",), "person", ["what is the hometown of {}", "which city does {} come from originally"]),
    (("works_for",), "person", ["who employs {}", "which firm does {} work at"]),
    (("citizen_of",), "person", ["what nationality does {} hold", "which nation is {} a national of"]),
    (("lives_in",), "person", ["where does {} reside", "which city is {} living in"]),
    ((SPOUSE,), "person", ["who is {} married to", "who is the husband or wife of {}"]),
    (("educated_at",), "person", ["where did {} study", "what is {}'s alma mater"]),
    (("founded_by",), "company", ["who started {}", "who set up the company {}"]),
    (("headquartered_in",), "company", ["where is {} based", "in what city does {} have its head office"]),
    (("located_in",), "city", ["what nation is {} part of", "{} lies in which country"]),
    (("directed_by",), "film", ["who was behind the camera on {}", "who made the movie {}"]),
    ((SPOUSE, "citizen_of"), "person", ["which country is {}'s wife from", "what nationality is the spouse of {}"]),
    ((SPOUSE, "born_in"), "person", ["where was {}'s husband born", "what is the birthplace of the person {} married"]),
    ((SPOUSE, "works_for"), "person", ["who does {}'s spouse work for", "which company employs the partner of {}"]),
    (("born_in", "located_in"), "person", ["{} was born in which nation", "which country is {}'s hometown in"]),
    (("works_for", "headquartered_in"), "person", ["in which city is {}'s employer based", "where is the firm {} works at headquartered"]),
    (("works_for", "founded_by"), "person", ["who founded the company {} works for", "who started {}'s employer"]),
    (("works_for", "industry"), "person", ["what line of business is {}'s employer in", "which industry does the firm {} works for belong to"]),
    (("educated_at", "located_in"), "person", ["which city is {}'s university in", "in what city did {} go to college"]),
    (("directed_by", "born_in"), "film", ["where was the director of {} born", "what is the hometown of the filmmaker behind {}"]),
    (("headquartered_in", "located_in"), "company", ["in which country does {} have its head office", "which nation is {} based in"]),
    (("founded_by", "born_in"), "company", ["where was the founder of {} born", "which city does the man who started {} come from"]),
    (("located_in", "capital"), "city", ["what is the capital of the country {} is in", "which city is the capital of {}'s nation"]),
    ((SPOUSE, "born_in", "located_in"), "person", ["which country was {}'s wife born in", "in what nation was the spouse of {} born"]),
    (("works_for", "headquartered_in", "located_in"), "person", ["in which country is the company {} works for based",
                                                                  "which nation is {}'s employer headquartered in"]),
    (("directed_by", "born_in", "located_in"), "film", ["in which country was the director of {} born",
                                                         "what nation does the filmmaker behind {} come from"]),
    (("works_for", "founded_by", "born_in"), "person", ["where was the founder of {}'s employer born",
                                                         "what is the hometown of the one who started the firm {} works at"]),
    ((SPOUSE, "works_for", "headquartered_in"), "person", ["in what city is the company {}'s spouse works for based",
                                                            "where is the employer of {}'s husband headquartered"]),
    (("founded_by", "born_in", "located_in"), "company", ["which country does the founder of {} come from",
                                                           "in what nation was the man who set up {} born"]),
]

# facts the generated KG has no relation for, about kinds it holds: the topic's kind, phrasings
LACKING: list[tuple[str, list[str]]] = [
    ("person", ["what religion does {} follow", "how tall is {}"]),
    ("person", ["what languages does {} speak", "when did {} die"]),
    ("person", ["who are the children of {}", "which political party does {} belong to"]),
    ("city", ["what is the population of {}", "who is the mayor of {}"]),
    ("company", ["who is the ceo of {}", "how many employees does {} have"]),
    ("company", ["what is the revenue of {}", "on which stock exchange is {} listed"]),
    ("film", ["who composed the music for {}", "who produced {}"]),
    ("film", ["how long is {}", "what was the budget of {}"]),
]

# the generated KG's relations as Freebase names them (the subject's type is the path's second part)
FREEBASE = {
    "born_in": "/people/person/place_of_birth",
    "lives_in": "/people/person/places_lived./people/place_lived/location",
    "works_for": "/people/person/employment_history./business/employment_tenure/company",
    "occupation": "/people/person/profession",
    "educated_at": "/people/person/education./education/education/institution",
    "birth_year": "/people/person/date_of_birth",
    "citizen_of": "/people/person/nationality",
    "spouse_of": "/people/person/spouse_s./people/marriage/spouse",
    "knows": "/people/person/friends",
    "located_in": "/location/location/containedby",
    "capital": "/location/country/capital",
    "headquartered_in": "/organization/organization/headquarters./location/mailing_address/citytown",
    "industry": "/business/business_operation/industry",
    "founded_in": "/organization/organization/date_founded",
    "founded_by": "/organization/organization/founders",
    "directed_by": "/film/film/directed_by",
    "starred_actors": "/film/film/starring./film/performance/actor",
    "release_year": "/film/film/initial_release_date",
    "has_genre": "/film/film/genre",
    "set_in": "/film/film/featured_film_locations",
}

KIND_OF = {"person": "born_in", "company": "headquartered_in", "city": "located_in", "film": "directed_by"}  # a relation only that kind has


def read_tsv(path: Path) -> dict[tuple[str, str], set[str]]:
    """`read_kb`'s index of the TSV, with `spouse_of|~spouse_of`: a marriage read from either end."""
    index = read_kb(path, "\t")
    for (entity, relation), others in list(index.items()):
        if relation in ("spouse_of", "~spouse_of"):
            index[entity, SPOUSE] |= others
    return index


def write_freebase_names(source: Path, target: Path) -> None:
    """The KG again, each relation under its Freebase name (FREEBASE)."""
    with open(source, encoding="utf-8") as f, open(target, "w", encoding="utf-8") as out:
        for n, line in enumerate(f, 1):
            s, r, o = line.rstrip("\n").split("\t")
            if r not in FREEBASE:
                raise ValueError(f"{source}:{n}: relation {r!r} has no Freebase name here")
            out.write(f"{s}\t{FREEBASE[r]}\t{o}\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kg", type=Path, required=True, help="bench/scale_kg.py's TSV")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--per-template", type=int, default=10, help="questions per phrasing")
    ap.add_argument("--lacking-per-template", type=int, default=5, help="questions per phrasing of a fact the KG lacks")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--freebase-names", type=Path, help="also write the KG here with Freebase's relation names")
    args = ap.parse_args()
    if args.freebase_names:
        write_freebase_names(args.kg, args.freebase_names)
        print(f"{args.freebase_names}: the KG with Freebase's relation names")
    kb = read_tsv(args.kg)
    pools = {kind: sorted({s for (s, r) in kb if r == relation}) for kind, relation in KIND_OF.items()}
    rng = random.Random(args.seed)
    by_hop: dict[int, list[dict]] = defaultdict(list)
    for path, phrasing, topic, answers in phrased(kb, TEMPLATES, pools, args.per_template, rng, 60):
        by_hop[len(path)].append({"question": phrasing.format(topic), "answers": sorted(answers), "topics": [topic],
                                  "hop": len(path), "path": list(path)})
    args.out.mkdir(parents=True, exist_ok=True)
    for hop, rows in sorted(by_hop.items()):
        target = args.out / f"people-{hop}hop.jsonl"
        target.write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in rows), encoding="utf-8")
        print(f"{target}: {len(rows)} questions")
    lacking = [{"question": phrasing.format(topic), "answers": [], "topics": [topic], "hop": 1, "shape": "lacking"}
               for kind, phrasings in LACKING for phrasing in phrasings for topic in rng.sample(pools[kind], args.lacking_per_template)]
    target = args.out / "people-lacking.jsonl"
    target.write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in lacking), encoding="utf-8")
    print(f"{target}: {len(lacking)} questions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
