"""The KG generator of bench/scale.py (bench/scale_kg.py): deterministic, sized, names that nest and
collide as designed, hubs, and questions whose answers the file's facts give. No timings."""

from __future__ import annotations

import json
import re
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import scale_kg  # noqa: E402

from kgqa.core.labels import normalise_label  # noqa: E402


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("scale")
    return out, scale_kg.generate(out, 2000, seed=3)


@pytest.fixture(scope="module")
def medium(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("scale-medium")
    return out, scale_kg.generate(out, 20_000, seed=0)


def read_facts(path: Path) -> list[tuple[str, str, str]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        s, r, o = line.split("\t")
        assert s == s.strip() and o == o.strip() and s and o and not s.startswith("#"), line
        rows.append((s, r, o))
    return rows


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path, small):
    out, meta = small
    again = scale_kg.generate(tmp_path / "again", 2000, seed=3)
    assert again == meta
    for name in meta["files"].values():
        assert (tmp_path / "again" / name).read_bytes() == (out / name).read_bytes(), name
    other = scale_kg.generate(tmp_path / "other", 2000, seed=4)
    assert (tmp_path / "other" / other["files"]["kg"]).read_bytes() != (out / meta["files"]["kg"]).read_bytes()


def test_size_in_lines_and_no_duplicate_facts(small, medium):
    for out, meta in (small, medium):
        facts = read_facts(out / meta["files"]["kg"])
        assert abs(len(facts) - meta["facts"]) <= 5
        assert len(set(facts)) == len(facts)  # kgqa loads with set semantics: lines = facts in the store


def test_size_labels_and_sizes_parse():
    assert [scale_kg.size_label(n) for n in (2000, 20_000, 100_000, 1_000_000, 10_000_000, 50_000_000, 2500)] == \
        ["2k", "20k", "100k", "1M", "10M", "50M", "2.5k"]
    assert scale_kg.parse_facts("1e5,1e6, 2e4") == [100_000, 1_000_000, 20_000]


PERSON_SUBJECT = {"born_in", "lives_in", "works_for", "occupation", "educated_at", "birth_year", "citizen_of", "spouse_of", "knows"}
ROLES = {  # (relation, side) → the one type an entity in that place has
    **{(r, 0): "person" for r in PERSON_SUBJECT},
    **{(r, 2): "person" for r in ("spouse_of", "knows", "founded_by", "directed_by", "starred_actors")},
    **{(r, 2): "city" for r in ("born_in", "lives_in", "headquartered_in", "set_in", "capital")},
    ("citizen_of", 2): "country", ("capital", 0): "country",
    **{(r, 0): "company" for r in ("headquartered_in", "industry", "founded_in", "founded_by")}, ("works_for", 2): "company",
    ("educated_at", 2): "university",
    **{(r, 0): "film" for r in ("directed_by", "starred_actors", "release_year", "has_genre", "set_in")},
    **{(r, 2): "value" for r in ("occupation", "industry", "has_genre", "release_year", "birth_year", "founded_in")},
}


def types_of(facts: list[tuple[str, str, str]]) -> dict[str, set[str]]:
    types: dict[str, set[str]] = defaultdict(set)
    for s, r, o in facts:
        for side, entity in ((0, s), (2, o)):
            if (r, side) in ROLES:
                types[entity].add(ROLES[(r, side)])
    return types


def test_names_nest_and_collide_but_never_merge_two_entities(medium):
    out, meta = medium
    facts = read_facts(out / meta["files"]["kg"])
    types = types_of(facts)
    merged = {e: t for e, t in types.items() if len(t) > 1}
    assert not merged, list(merged.items())[:5]
    people = {e for e, t in types.items() if t == {"person"}}
    # nested: "John Smith" ⊂ "John Smith Jr."; "John Smith" ~ "John Smithson"; the person's name ⊂ its Jr.
    assert {"John Smith", "John Smith Jr.", "John Smithson"} <= people
    jr = [p for p in people if p.endswith(" Jr.") and p[: -len(" Jr.")] in people and re.search(r" [A-Z]\. ", p)]
    assert len(jr) >= 10
    # many people share a first name and surname, told apart by the middle initial only
    by_pair = Counter(re.sub(r" [A-Z]\.( [A-Z]\.)? ", " ", p) for p in people if re.fullmatch(r"\S+ [A-Z]\. \S+", p))
    assert by_pair.most_common(1)[0][1] >= 3
    # cities nest in universities, companies and films
    cities = {e for e, t in types.items() if t == {"city"}}
    universities = {e for e, t in types.items() if t == {"university"}}
    assert all(u.removeprefix("University of ") in cities for u in universities)
    films = {e for e, t in types.items() if t == {"film"}}
    assert any(f.endswith(" Nights") and f.removesuffix(" Nights") in cities for f in films)


def test_people_names_are_unique_and_accents_collide_once_folded():
    people = scale_kg.PeopleNames(60_000)
    names = [people.name(p) for p in range(60_000)]
    assert len(set(names)) == len(names)
    folded = Counter(normalise_label(n) for n in names)
    assert any(count > 1 for count in folded.values())  # "José A. Garcia" and "Jose A. Garcia"


def test_syllable_names_are_unique_and_apart_from_each_other():
    cities = [scale_kg.city_name(i) for i in range(0, 380_000, 7)]  # across the 2 → 3 syllable boundary
    assert len(set(cities)) == len(cities)
    countries = {scale_kg.country_name(i) for i in range(300)}
    assert len(countries) == 300 and not countries & set(cities)
    syllabic = {scale_kg.syllabic_surname(i) for i in range(30_000)}
    assert len(syllabic) == 30_000
    assert not syllabic & set(scale_kg.SURNAMES)
    assert not {s + "son" for s in scale_kg.SURNAMES} & (set(scale_kg.SURNAMES) | syllabic)
    companies = [scale_kg.company_name(i) for i in range(5_000)]
    assert len(set(companies)) == len(companies)
    films = [scale_kg.film_name(i) for i in range(20_000)]
    assert len(set(films)) == len(films)
    assert "Silent River II" in films or any(f.endswith(" II") for f in films)


def test_degrees_have_hubs(medium):
    out, meta = medium
    facts = read_facts(out / meta["files"]["kg"])
    born = Counter(o for _, r, o in facts if r == "born_in")
    top = born.most_common(1)[0][1]
    assert top >= 0.1 * sum(born.values())
    assert top >= 10 * statistics.median(born.values())
    employer = Counter(o for _, r, o in facts if r == "works_for")
    assert employer.most_common(1)[0][1] >= 5 * statistics.median(employer.values())  # 20 companies at this size
    known = Counter(o for _, r, o in facts if r in ("knows", "directed_by", "starred_actors"))
    assert known.most_common(1)[0][1] >= 50  # a celebrity


def answer_of(index: dict[tuple[str, str], set[str]], kind: str, topic: str) -> set[str]:
    if kind == "born_country":
        return {country for city in index[(topic, "born_in")] for country in index[(city, "located_in")]}
    relation = {"born_in": "born_in", "works_for": "works_for", "directed_by": "directed_by", "city_country": "located_in"}[kind]
    return index[(topic, relation)]


def test_every_answer_follows_from_the_facts(small, medium):
    for out, meta in (small, medium):
        index: dict[tuple[str, str], set[str]] = defaultdict(set)
        for s, r, o in read_facts(out / meta["files"]["kg"]):
            index[(s, r)].add(o)
        questions = read_jsonl(out / meta["files"]["questions"])
        assert Counter(q["kind"] for q in questions) == Counter({k: n for k, n in meta["questions"].items() if n})
        assert meta["questions"]["born_in"] == 50 and meta["questions"]["born_country"] == 50
        for q in questions:
            (topic,) = q["topics"]
            assert topic in q["question"]
            assert set(q["answers"]) == answer_of(index, q["kind"], topic), q


def test_typo_questions_differ_by_one_edit_in_the_topic(medium):
    out, meta = medium
    plain = read_jsonl(out / meta["files"]["questions"])
    typos = read_jsonl(out / meta["files"]["typo"])
    assert len(plain) == len(typos)
    for q, t in zip(plain, typos):
        assert (t["topics"], t["answers"], t["kind"]) == (q["topics"], q["answers"], q["kind"])
        topic, mention = q["topics"][0], t["mention"]
        assert mention != topic and mention[0] == topic[0] and abs(len(mention) - len(topic)) <= 1
        assert t["question"] == q["question"].replace(topic, mention, 1)
