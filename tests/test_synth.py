"""`kgqa synth`: generated questions over a KG are answered by an independent walk of its triples,
come out the same for the same seed, never reuse MetaQA's templates, and name their topics so the
linker finds them."""

from __future__ import annotations

import re
from collections import Counter

from conftest import all_label_pages, shared_data

from kgqa.core.namespace import KGNamespace
from kgqa.eval.synth import entity_labels, read_jsonl, synthesise, write_jsonl
from kgqa.loaders import load_file
from kgqa.loaders.qa import read_qa
from kgqa.retrieval.linking import link
from kgqa.sparql.embedded import EmbeddedWriter


def _walk(triples, start: set[str], step: str, ns: KGNamespace) -> set[str]:
    inverse = step.endswith("⁻¹")
    relation = ns.relation(step.removesuffix("⁻¹"))
    if inverse:
        return {s for s, r, o in triples if r == relation and o in start}
    return {o for s, r, o in triples if r == relation and s in start}


def test_answers_equal_an_independent_walk_of_the_triples(demo_kg):
    store, triples = demo_kg
    ns = KGNamespace("demo")
    questions = synthesise(store, 60, seed=3)
    assert len(questions) == 60
    shapes = Counter((q.shape, q.hop) for q in questions)
    assert shapes[("path", 1)] and shapes[("path", 2)] and shapes[("path", 3)] and shapes[("and", 1)], shapes
    for q in questions:
        if q.shape == "and":
            expected = _walk(triples, {q.topic_iris[0]}, q.path[0], ns) & _walk(triples, {q.topic_iris[1]}, q.path[1], ns)
        else:
            expected = {q.topic_iris[0]}
            for step in q.path:
                expected = _walk(triples, expected, step, ns)
            expected -= {q.topic_iris[0]}
        assert set(q.answer_iris) == expected, q
        assert 1 <= len(q.answers) <= 20


def test_the_same_seed_gives_the_same_questions_and_another_seed_others(demo_kg, tmp_path):
    store, _ = demo_kg
    first, again, other = synthesise(store, 25, seed=1), synthesise(store, 25, seed=1), synthesise(store, 25, seed=2)
    assert first == again and first != other
    write_jsonl(first, tmp_path / "q.jsonl")
    rows = list(read_jsonl(tmp_path / "q.jsonl"))
    assert [r["question"] for r in rows] == [q.question for q in first]
    examples = read_qa(tmp_path / "q.jsonl")  # what `kgqa eval` reads
    assert [e.answers for e in examples] == [q.answers for q in first] and examples[0].hop == first[0].hop

    # the labels read in one pass (label_pairs, what synthesise reads) are those the sorted pages give
    assert sorted(store.label_pairs()) == all_label_pages(store, 7) and len(entity_labels(store)) == len({e for e, _ in all_label_pages(store, 7)})


def _template(question: str, topics) -> str:
    text = question.lower()
    for t in topics:
        text = text.replace(t.lower(), "[x]").replace(t.replace("_", " ").lower(), "[x]")
    return " ".join(re.sub(r"[^\w\[\] ]+", " ", text).split())


def test_many_surface_forms_and_none_is_a_metaqa_template(demo_kg):
    store, _ = demo_kg
    questions = [q for q in synthesise(store, 200, seed=5) if q.shape == "path" and q.hop == 1]
    forms = Counter(_template(q.question, q.topics) for q in questions)
    by_step: dict[str, Counter] = {}
    for q in questions:
        by_step.setdefault(q.path[0], Counter())[_template(q.question, q.topics)] += 1
    assert all(len(c) >= 2 for step, c in by_step.items() if sum(c.values()) >= 6), by_step  # no single form per relation
    assert max(forms.values()) <= 0.25 * len(questions)
    metaqa = set()
    for hop in (1, 2, 3):
        for line in open(shared_data("metaqa", f"{hop}-hop", "qa_dev.txt"), encoding="utf-8"):
            metaqa.add(" ".join(re.sub(r"[^\w\[\] ]+", " ", re.sub(r"\[[^\]]+\]", "[x]", line.split("\t")[0].lower())).split()))
    every = {_template(q.question, q.topics) for q in synthesise(store, 3000, seed=6, max_tries=20_000)}
    assert not every & metaqa, sorted(every & metaqa)[:5]


def test_names_written_with_underscores_or_camel_case_link_when_spaced(tmp_path):
    kb = tmp_path / "kb.tsv"
    kb.write_text("western_europe\tlocatedIn\teurope\nFrance\tlocatedIn\twestern_europe\nNewCaledonia\tlocatedIn\tMelanesia\n", encoding="utf-8")
    writer = EmbeddedWriter.open(None, "geo")
    load_file(writer, kb)
    store = writer.reader()
    assert [t.entity.label for t in link(store, "which region is western europe located in?").topics] == ["western_europe"]
    assert [t.entity.label for t in link(store, "where is New Caledonia?").topics] == ["NewCaledonia"]
    assert [t.entity.label for t in link(store, "where is new caledonia?").topics] == ["NewCaledonia"]


def test_questions_the_kg_lacks_ask_foreign_relations_of_the_right_kind_of_entity(tmp_path):
    from conftest import store_from_lines

    from kgqa.eval.synth.lacking import foreign_relations, lacking_questions
    from kgqa.retrieval.store_url import open_store
    from kgqa.retrieval.text import TextEncoder

    films = [f"Film Number {i}" for i in range(12)]
    people = [f"Person Number {i}" for i in range(6)]
    lines = [f"{film}|directed_by|{people[i % 6]}" for i, film in enumerate(films)]
    lines += [f"{film}|release_year|{1950 + i}" for i, film in enumerate(films)]
    lines += [f"{person}|born_in|Paris" for person in people]
    store = open_store(store_from_lines(tmp_path, "films", lines), "films")
    encoder = TextEncoder()
    candidates = ["/film/film/directed_by", "/film/film/produced_by", "/film/film/music", "/people/person/born_in", "has_imdb_rating"]
    closest = foreign_relations(store, candidates, encoder)
    # the same words as a relation of the KG (under another prefix) are not foreign
    assert "/film/film/directed_by" not in closest and "/people/person/born_in" not in closest
    # a film relation is paired with a relation of films (whose subjects are films), not with "born in"
    assert {"/film/film/produced_by", "/film/film/music", "has_imdb_rating"} <= set(closest)
    assert closest["/film/film/produced_by"] in {"directed_by", "release_year"} and closest["/film/film/music"] in {"directed_by", "release_year"}
    questions = lacking_questions(store, candidates, 20, encoder, seed=3)
    assert len(questions) == 20 and questions == lacking_questions(store, candidates, 20, encoder, seed=3)
    assert all(q.shape == "lacking" and q.answers == () and q.hop == 1 and len(q.topics) == 1 for q in questions)
    assert {q.path[0] for q in questions} == set(closest)
    # a film relation is asked of films (the subjects of the KG's closest relation), never of a year or a city
    produced = [q for q in questions if q.path[0] == "/film/film/produced_by"]
    assert produced and all(q.topics[0].lower() in {f.lower() for f in films} for q in produced)
    assert lacking_questions(store, ["/film/film/directed_by"], 5, encoder) == []


def test_another_kgs_relation_that_holds_this_kgs_facts_is_not_asked_as_lacking(tmp_path):
    """Freebase's /film/director/film is MetaQA's directed_by read backwards: its text does not say so
    ("film"), its facts do. A relation sharing a content word with one of the KG's ("actor film" and
    "starred actors") is not foreign either."""
    from conftest import store_from_lines

    from kgqa.eval.synth.lacking import foreign_relations, shared_meaning
    from kgqa.retrieval.store_url import open_store
    from kgqa.retrieval.text import TextEncoder

    films = [f"Film Number {i}" for i in range(12)]
    people = [f"Person Number {i}" for i in range(6)]
    composers = [f"Composer Number {i}" for i in range(6)]
    ours = [f"{film}|directed_by|{people[i % 6]}" for i, film in enumerate(films)]
    ours += [f"{film}|starred_actors|{people[(i + 1) % 6]}" for i, film in enumerate(films)]
    theirs = [f"{people[i % 6]}|film|{film}" for i, film in enumerate(films)]  # directed_by backwards
    theirs += [f"{film}|music|{composers[i % 6]}" for i, film in enumerate(films)]  # no fact of ours
    theirs += [f"{film}|edited_by|{people[(i + 3) % 6]}" for i, film in enumerate(films[:4])]  # too few to judge
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    store = open_store(store_from_lines(tmp_path / "a", "ours", ours), "ours")
    other = open_store(store_from_lines(tmp_path / "b", "theirs", theirs), "theirs")
    shared = shared_meaning(store, other)
    assert set(shared) == {"film"} and shared["film"] == 1.0
    closest = foreign_relations(store, ["music", "actor film", "film"], TextEncoder())
    assert "actor film" not in closest and "music" in closest
