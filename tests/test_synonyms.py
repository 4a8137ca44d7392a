"""`kgqa synth --synonyms`: WordNet read from its own files (a tiny hand-made one, and the real one
Debian ships, fetched with apt-get download), the relation's sense chosen by the encoder among its
KG's relations, synonyms inflected as the relation's word was, and questions that still have the
answers an independent walk gives."""

from __future__ import annotations

import random

import pytest

from kgqa.core.errors import KGQAError
from kgqa.eval.synth import synthesise
from kgqa.eval.synth.phrasing import question_for_step, say_path
from kgqa.eval.synth.synonyms import RelationSynonyms, event_wording
from kgqa.eval.synth.walk import Step
from kgqa.eval.synth.wordnet import WordNet, fetch, plural
from kgqa.core.namespace import KGNamespace
from kgqa.retrieval.relation_text import relation_words
from kgqa.retrieval.text import TextEncoder

from test_synth import _walk

# (key, pos, lemmas, hypernym keys, gloss): a film sense of "direct" with no synonym of its own and a
# commanding one with "order"; "make"'s synset is the film sense's hypernym
SYNSETS = [
    ("make", "verb", ["make", "create"], [], "make or cause to be"),
    ("command", "verb", ["direct", "order"], [], "command with authority"),
    ("film", "verb", ["direct"], ["make"], "guide the actors in (plays and films)"),
    ("actor", "noun", ["actor", "histrion", "player"], [], "a theatrical performer"),
]
LICENCE = "  1 This software and database is being provided to you, the LICENSEE\n"


def _tiny_wordnet(folder):
    """index.*, data.* (synsets found by their byte offsets, as in WordNet), *.exc."""
    offsets: dict[str, int] = {}
    for pos in ("noun", "verb"):
        mine = [s for s in SYNSETS if s[1] == pos]
        lines, at = [], len(LICENCE.encode())
        for key, _, lemmas, hypernyms, gloss in mine:  # offsets are 8 digits: lengths do not depend on them
            offsets[key] = at
            at += len(_data_line(0, pos, lemmas, [0] * len(hypernyms), gloss).encode())
        for key, _, lemmas, hypernyms, gloss in mine:
            lines.append(_data_line(offsets[key], pos, lemmas, [offsets[h] for h in hypernyms], gloss))
        (folder / f"data.{pos}").write_text(LICENCE + "".join(lines), encoding="utf-8")
    index = {"verb": {"direct": (["command", "film"], 1), "make": (["make"], 2), "create": (["make"], 1), "order": (["command"], 1)},
             "noun": {"actor": (["actor"], 1), "histrion": (["actor"], 0), "player": (["actor"], 3)}}
    for pos, words in index.items():
        rows = [f"{w} {pos[0]} {len(keys)} 1 @ {len(keys)} {tagged} {' '.join(f'{offsets[k]:08d}' for k in keys)}  \n" for w, (keys, tagged) in sorted(words.items())]
        (folder / f"index.{pos}").write_text(LICENCE + "".join(rows), encoding="utf-8")
    (folder / "verb.exc").write_text("made make\nwritten write\nwrote write\n", encoding="utf-8")
    (folder / "noun.exc").write_text("men man\n", encoding="utf-8")
    return WordNet(folder)


def _data_line(offset: int, pos: str, lemmas: list[str], hypernyms: list[int], gloss: str) -> str:
    fields = [f"{offset:08d}", "29", pos[0], f"{len(lemmas):02x}", *(f"{w} 0" for w in lemmas), f"{len(hypernyms):03d}",
              *(f"@ {h:08d} {pos[0]} 0000" for h in hypernyms)]
    return " ".join(fields) + f" | {gloss}  \n"


def test_a_tiny_wordnet_is_read_by_byte_offsets_and_inflects(tmp_path):
    wordnet = _tiny_wordnet(tmp_path)
    senses = wordnet.synsets("direct", "verb")
    assert [s.gloss for s in senses] == ["command with authority", "guide the actors in (plays and films)"]
    assert [wordnet.synset(h, "verb").lemmas for h in senses[1].hypernyms] == [("make", "create")]
    assert wordnet.base_forms("directed", "verb") == ["direct"] and wordnet.base_forms("made", "verb") == ["make"]
    assert wordnet.base_forms("actors", "noun") == ["actor"] and wordnet.base_forms("flying", "verb") == []
    assert [wordnet.past_participle(v) for v in ("make", "write", "create", "star", "carry", "set up")] == ["made", "written", "created", "starred", "carried", "set up"]
    assert [wordnet.third_person(v) for v in ("affect", "touch on", "carry")] == ["affects", "touches on", "carries"]
    assert plural("player") == "players" and plural("family") == "families"
    (tmp_path / "data.noun").unlink()
    with pytest.raises(KGQAError, match="lacks data.noun"):
        WordNet(tmp_path)


def _fake_encoder(texts):
    """Closest to the context: texts sharing its words (a stand-in for the sentence encoder)."""
    import numpy as np

    words = [set(t.replace(",", " ").replace(";", " ").replace(":", " ").replace("(", " ").replace(")", " ").split()) for t in texts]
    vocabulary = sorted(set().union(*words))
    vectors = np.array([[1.0 if w in ws else 0.0 for w in vocabulary] for ws in words]) + 1e-3
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_the_sense_read_among_the_kgs_relations_gives_the_synonyms(tmp_path):
    wordnet = _tiny_wordnet(tmp_path)
    film = RelationSynonyms(wordnet, ["directed_by", "starred_actors", "in_films"], _fake_encoder)
    assert film.senses["directed_by"].gloss.startswith("guide the actors")
    assert ("passive", "made by") in film.alternatives["directed_by"] and ("passive", "ordered by") not in film.alternatives["directed_by"]
    # "histrion" is a rare word (never tagged): left out; the plural follows the relation's word
    assert film.alternatives["starred_actors"] == [("noun", "starred players")]
    army = RelationSynonyms(wordnet, ["directed_by", "command_with_authority"], _fake_encoder)
    assert army.senses["directed_by"].gloss == "command with authority"
    rng = random.Random(0)
    assert {film.wording("directed_by", rng, 0.0) for _ in range(20)} == {("passive", "directed by")}
    assert {film.wording("directed_by", rng, 1.0) for _ in range(50)} == set(film.alternatives["directed_by"])


@pytest.fixture(scope="module")
def real_wordnet() -> WordNet:
    try:
        return WordNet(fetch())
    except KGQAError as exc:
        pytest.skip(f"WordNet (Debian's wordnet-base) could not be fetched: {exc}")


def test_real_wordnet_and_encoder_read_the_film_sense_of_metaqas_relations(real_wordnet):
    labels = ["directed_by", "written_by", "starred_actors", "release_year", "in_language", "has_tags", "has_genre"]
    found = RelationSynonyms(real_wordnet, labels, TextEncoder().encode_bulk)
    assert "plays and films" in found.senses["directed_by"].gloss
    assert ("passive", "made by") in found.alternatives["directed_by"]
    assert ("noun", "starred performers") in found.alternatives["starred_actors"]
    assert found.events == {"release_year": ("when", "was released")}  # the event's verb, from WordNet
    for label, said in found.alternatives.items():  # the relation's kind of words, and a word of its own
        assert said and all(kind == relation_words(label)[0] and words != relation_words(label)[1] for kind, words in said), (label, said)


def test_a_relation_naming_an_events_place_or_time_is_asked_with_the_events_verb(real_wordnet):
    """"place of birth" → "where was X born" (WordNet derives "be born" from "birth"), "date of death" →
    "when did X die" (no object: "did"), "date founded" keeps its participle; other nouns get none."""
    said = {words: event_wording(real_wordnet, words) for words in
            ("place of birth", "date of death", "initial release date", "date founded", "places lived location", "nationality", "year")}
    assert said == {"place of birth": ("where", "was born"), "date of death": ("when", "did die"), "initial release date": ("when", "was released"),
                    "date founded": ("when", "was founded"), "places lived location": None, "nationality": None, "year": None}
    rng = random.Random(0)
    spouse = Step("spouse", "/people/person/spouse_s./people/marriage/spouse", False)
    born = Step("born", "/people/person/place_of_birth", False)
    died = Step("died", "/people/person/date_of_death", False)
    asked = {say_path((spouse, born), "Ann", False, rng, lambda label: ("where", "was born") if label == born.label else relation_words(label))
             for _ in range(40)}
    assert any(q.startswith("where was ann's spouse born") or q.startswith("where was the spouse of ann born") for q in map(str.lower, asked)), asked
    assert all("born" in q and "spouse" in q for q in asked)
    inverse = {question_for_step(Step("born", born.label, True), "Paris", rng, ("where", "was born")) for _ in range(20)}
    assert inverse and all("born in paris" in q.lower() for q in inverse)
    # a verb without an object has no inverse question: the relation's own words say it
    assert "date of death" in question_for_step(Step("died", died.label, True), "1990", rng, ("when", "did die"))


def test_questions_with_synonyms_keep_their_answers(demo_kg, real_wordnet):
    store, triples = demo_kg
    ns = KGNamespace("demo")
    found = RelationSynonyms(real_wordnet, [r.label for r in store.relations()], TextEncoder().encode_bulk)
    plain, said = synthesise(store, 80, seed=4), synthesise(store, 80, seed=4, synonyms=found, synonym_share=1.0)
    assert synthesise(store, 80, seed=4, synonyms=found, synonym_share=0.0) == plain  # share 0: the same questions
    other_words = {w for _, alternatives in found.alternatives.items() for _, words in alternatives for w in words.split()}
    assert sum(bool(set(q.question.lower().replace("?", "").split()) & other_words) for q in said) >= 40
    for q in said:
        if q.shape == "path":
            expected = {q.topic_iris[0]}
            for step in q.path:
                expected = _walk(triples, expected, step, ns)
            assert set(q.answer_iris) == expected - {q.topic_iris[0]}, q


def test_the_people_who_do_what_a_word_names_come_from_wordnets_derivations(real_wordnet):
    """Derived person nouns (music → musician), through the verb (production → produce → producer), by
    suffix where WordNet links none (cinematography → cinematographer), and their common kinds
    (musician → composer) with the verb each does."""
    music = dict(real_wordnet.agents("music", "noun"))
    assert music["composer"] == "compose" and "musician" in music
    assert "cinematographer" in dict(real_wordnet.agents("cinematography", "noun"))
    assert dict(real_wordnet.agents("production", "noun")).get("producer") == "produce"
    assert real_wordnet.agents("genre", "noun") == [] and real_wordnet.agents("language", "noun") == []
    assert [real_wordnet.simple_past(v) for v in ("compose", "write", "star", "sing")] == ["composed", "wrote", "starred", "sang"]


def test_lacking_questions_ask_for_people_in_their_words_never_in_the_kgs_own(real_wordnet, tmp_path):
    from conftest import store_from_lines

    from kgqa.eval.synth.lacking import lacking_questions, people_words
    from kgqa.retrieval.store_url import open_store

    own = ["directed_by", "written_by", "release_year"]
    music = dict(people_words(real_wordnet, "/film/film/music", own))
    assert music.get("composer") == "compose" and "director" not in music and "conductor" in music
    assert "editor" in dict(people_words(real_wordnet, "edited_by", own))
    assert people_words(real_wordnet, "edited_by", ["edited_by"]) == []  # the KG's own agent is not foreign

    films = [f"Film Number {i}" for i in range(12)]
    lines = [f"{film}|directed_by|Person Number {i % 5}" for i, film in enumerate(films)]
    lines += [f"{film}|release_year|{1950 + i}" for i, film in enumerate(films)]
    store = open_store(store_from_lines(tmp_path, "films", lines), "films")
    candidates = ["/film/film/music", "/film/film/cinematography"]
    encoder = TextEncoder()
    plain = lacking_questions(store, candidates, 30, encoder, seed=1)
    worded = lacking_questions(store, candidates, 30, encoder, seed=1, wordnet=real_wordnet)
    people = ("compos", "musician", "cinematographer", "cameraman", "pianist", "singer", "conduct", "player", "play")
    said = [q for q in worded if any(w in q.question.lower() for w in people)]
    assert not any(any(w in q.question.lower() for w in people) for q in plain)
    assert 5 <= len(said) <= 25, [q.question for q in worded]
    assert {q.path[0] for q in said} == set(candidates)
    assert not any("direct" in q.question.lower() for q in worded)


def test_paths_steered_to_an_event_relation_end_in_it_and_say_its_verb(demo_kg, real_wordnet):
    """`event_share`: the walks end in the relation with an event wording (the demo KG's release year),
    walked forwards, asked with its verb ("… released"), and still have an independent walk's answers."""
    store, triples = demo_kg
    ns = KGNamespace("demo")
    found = RelationSynonyms(real_wordnet, [r.label for r in store.relations()], TextEncoder().encode_bulk)
    steered = synthesise(store, 40, seed=2, hops=(2, 3), conjunctions=0.0, synonyms=found, synonym_share=0.0, event_share=1.0)
    assert len(steered) == 40 and {q.hop for q in steered} == {2, 3}
    assert all(q.path[-1] == "release_year" for q in steered), [q.path for q in steered]
    assert all("released" in q.question for q in steered), [q.question for q in steered]
    for q in steered:
        expected = {q.topic_iris[0]}
        for step in q.path:
            expected = _walk(triples, expected, step, ns)
        assert set(q.answer_iris) == expected - {q.topic_iris[0]}, q
    uniform = synthesise(store, 40, seed=2, hops=(2, 3), conjunctions=0.0, synonyms=found, synonym_share=0.0)
    assert sum(q.path[-1] == "release_year" for q in uniform) < 20
    with pytest.raises(ValueError, match="event wording"):
        synthesise(store, 5, event_share=0.5)  # no synonyms: no relation's event wording is known
