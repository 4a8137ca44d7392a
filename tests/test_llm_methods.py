"""Control flow of the LLM methods with a scripted LLM over a small KG in a real (embedded, in-memory)
Oxigraph store: call counts and bounds, A.7 retries and temperature schedule, fallbacks, garbage,
answer mapping, accounting."""

from __future__ import annotations

import random

import pytest
from scripted_llm import ScriptedLLM

from kgqa.retrieval.answer_mapping import answer_strings, map_answers, numbered_items
from kgqa.methods.kgfr.answer import KGFRAnswerer
from kgqa.retrieval.linking import link_or_resolve
from kgqa.methods.kgfr.llm_loop import LLMKGFR, parse_reflection
from kgqa.methods.llm_only.method import answer_llm_only
from kgqa.methods.lmp.method import LMP, MAX_RETRIES
from kgqa.loaders import load_file
from kgqa.llm.relation_language import RelationLanguage, generate
from kgqa.retrieval.app import retrieve
from kgqa.sparql.embedded import EmbeddedWriter

FACTS = """Kismet|directed_by|William Dieterle
Kismet|written_by|Edward Knoblock
Kismet|release_year|1944
Kismet|starred_actors|Ronald Colman
Kismet|starred_actors|Marlene Dietrich
Dr. Socrates|directed_by|William Dieterle
Dr. Socrates|release_year|1935
The Hunchback of Notre Dame|directed_by|William Dieterle
The Hunchback of Notre Dame|release_year|1939
Random Harvest|starred_actors|Ronald Colman
Random Harvest|release_year|1942
m.0x1y2z|starred_actors|Marlene Dietrich
m.0x1y2z|release_year|1930
"""
QUESTION = "which films did the director of Kismet also direct"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("kg") / "films.txt"
    path.write_text(FACTS, encoding="utf-8")
    writer = EmbeddedWriter.open(None, "films")
    load_file(writer, path)
    return writer.reader()


def kismet(store):
    return link_or_resolve(store, QUESTION, ["Kismet"])


# --- LMP -------------------------------------------------------------------------------------------

GOOD_LMP = [
    "1. directed by\n2. starred actors",
    "1. Kismet was directed by William Dieterle.\n2. Kismet starred Ronald Colman and Marlene Dietrich.",
    "1. directed by (reverse)\n2. starred actors (reverse)",
    "1. William Dieterle directed Dr. Socrates and The Hunchback of Notre Dame.\n2. The actors also starred in Random Harvest.",
    "1. Dr. Socrates\n2. The Hunchback of Notre Dame",
]


def test_lmp_takes_2L_plus_1_calls_and_reads_out_a_numbered_outline(store):
    llm = ScriptedLLM(GOOD_LMP)
    answer = LMP(store, llm, k=2, depth=2).answer(QUESTION, ["Kismet"])
    assert [c.purpose for c in answer.trace.llm_calls] == [
        "lmp.sample.l1", "lmp.transform.l1", "lmp.sample.l2", "lmp.transform.l2", "lmp.answer"]
    assert answer.trace.fallback is None
    assert [(a.label, a.match) for a in answer.answers] == [("Dr. Socrates", "subgraph"), ("The Hunchback of Notre Dame", "subgraph")]
    assert all(a.iri and a.iri.startswith("urn:kgqa:kg:films:") for a in answer.answers)
    outline = answer.evidence.outline.splitlines()
    assert outline[0].startswith("1. Kismet was directed") and outline[1].startswith("1.1. William Dieterle")
    assert outline[2].startswith("2. Kismet starred") and outline[3].startswith("2.1. The actors")
    # aggregation (A.4) is text, not a call; the layer-2 prompt lists options per previous fact
    assert "The entity Kismet has relation directed by with following entities: William Dieterle." in llm.prompts[1]
    assert "1. fact: Kismet was directed by William Dieterle options: directed by (reverse)" in llm.prompts[2]
    assert answer.trace.round_trips == 3  # two hops + one for labels
    assert answer.trace.llm_totals()["calls"] == 5
    assert llm.temperatures == [0.0] * 5
    assert "\n3." in llm.stops[0]  # a reply cannot run past the K items it was asked for


def test_lmp_wrong_fact_count_retries_with_rising_temperature_then_answers_without_the_kg(store):
    llm = ScriptedLLM(["1. directed by\n2. starred actors"] + ["1. only one fact"] * (MAX_RETRIES + 1) + ["1. Dr. Socrates"])
    answer = LMP(store, llm, k=2, depth=2).answer(QUESTION, ["Kismet"])
    purposes = [c.purpose for c in answer.trace.llm_calls]
    assert purposes == ["lmp.sample.l1", "lmp.transform.l1"] + [f"lmp.transform.l1.retry{i}" for i in range(1, 6)] + ["lmp.fallback"]
    assert llm.temperatures[1:7] == pytest.approx([0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
    assert "transformation at layer 1" in answer.trace.fallback and "5 retries" in answer.trace.fallback
    assert "Q: " + QUESTION in llm.prompts[-1]  # the IO prompt, no KG
    assert [a.label for a in answer.answers] == ["Dr. Socrates"]
    assert answer.evidence.outline is None


def test_lmp_sampling_keeps_valid_relations_across_attempts(store):
    llm = ScriptedLLM(["1. directed by\n2. not a relation", "1. released year", *GOOD_LMP[1:]])
    answer = LMP(store, llm, k=2, depth=2).answer(QUESTION, ["Kismet"])
    assert [c.purpose for c in answer.trace.llm_calls][:3] == ["lmp.sample.l1", "lmp.sample.l1.retry1", "lmp.transform.l1"]
    assert llm.temperatures[:2] == [0.0, pytest.approx(0.2)]
    # "released year" is the one close spelling of "release year": accepted; the fact list follows the choice
    assert "relation release year" in llm.prompts[2]


@pytest.mark.parametrize("garbage", ["", "   ", "lorem ipsum dolor", "1.\n2.", "<think>hmm</think>"])
def test_lmp_empty_or_garbage_replies_end_in_the_no_kg_answer(store, garbage):
    llm = ScriptedLLM(lambda prompt: "1. Casablanca" if prompt.startswith("Answer each question") else garbage)
    lmp = LMP(store, llm, k=2, depth=2)
    answer = lmp.answer(QUESTION, ["Kismet"])
    assert answer.trace.fallback and "sampling at layer 1" in answer.trace.fallback
    assert len(answer.trace.llm_calls) == MAX_RETRIES + 2 <= lmp.call_bound(1)
    assert [a.text for a in answer.answers] == ["Casablanca"] and answer.answers[0].iri is None


def test_lmp_never_exceeds_its_call_bound_whatever_the_llm_says(store, uncapped_sessions):
    rng = random.Random(7)
    pieces = ["1. directed by", "2. starred actors", "1. directed by (reverse)", "1. x", "2. y", "3. z", "", "garbage",
              "1. Dr. Socrates", "2. release year"]
    for depth in (1, 2, 3):
        lmp = LMP(store, ScriptedLLM(lambda _: "\n".join(rng.sample(pieces, rng.randint(0, 4)))), k=2, depth=depth)
        for _ in range(15):
            answer = lmp.answer(QUESTION, ["Kismet"])
            assert 1 <= len(answer.trace.llm_calls) <= lmp.call_bound(1)


def test_lmp_embedding_sampler_needs_no_sampling_calls(store):
    llm = ScriptedLLM([GOOD_LMP[1], GOOD_LMP[3], GOOD_LMP[4]])
    answer = LMP(store, llm, k=2, depth=2, sampler="embedding").answer(QUESTION, ["Kismet"])
    assert [c.purpose for c in answer.trace.llm_calls] == ["lmp.transform.l1", "lmp.transform.l2", "lmp.answer"]


def test_lmp_describes_unnamed_entities_by_their_named_neighbours(store):
    llm = ScriptedLLM(["1. starred actors (reverse)", "1. Marlene Dietrich starred in Kismet and another film.", "1. Kismet"])
    LMP(store, llm, k=1, depth=1).answer("which films did Marlene Dietrich star in", ["Marlene Dietrich"])
    # the 1-hop subgraph holds only Marlene Dietrich next to it; its IRI-ish label is never shown
    assert "Kismet, an unnamed entity linked to Marlene Dietrich." in llm.prompts[1]
    assert "m.0x1y2z" not in llm.prompts[1]


def test_lmp_provider_failure_is_a_recorded_fallback_not_an_exception(store):
    answer = LMP(store, ScriptedLLM(["!error", "!error"]), k=2, depth=2).answer(QUESTION, ["Kismet"])
    assert "LLM failed during message passing" in answer.trace.fallback and "no-KG answer failed too" in answer.trace.fallback
    assert [c.ok for c in answer.trace.llm_calls] == [False, False] and answer.answers == []


def test_lmp_without_a_linked_topic_answers_without_the_kg(store):
    llm = ScriptedLLM(["1. Kismet"])
    answer = LMP(store, llm).answer("who is nobody")
    assert answer.trace.fallback == "no topic entity was linked" and len(llm.prompts) == 1


# --- LLM-KGFR --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def retriever(store):
    return KGFRAnswerer(store)


def test_kgfr_confirmed_first_answer_takes_two_calls(store, retriever):
    llm = ScriptedLLM(["1. Dr. Socrates\n2. The Hunchback of Notre Dame", "yes\nsub-questions: none\nkey entities: none"])
    answer = LLMKGFR(retriever, llm).answer(QUESTION, ["Kismet"])
    assert [c.purpose for c in answer.trace.llm_calls] == ["kgfr.answer.s1", "kgfr.reflect.s1"]
    assert {a.label for a in answer.answers} == {"Dr. Socrates", "The Hunchback of Notre Dame"}
    assert answer.evidence.candidates and answer.evidence.facts
    assert "candidates:" in llm.prompts[0] and "facts:" in llm.prompts[0]
    paths = llm.prompts[0].split("paths:")[-1].split("answers:")[0].strip().splitlines()
    assert paths and all(p.startswith("- Kismet ") for p in paths), paths  # each from the topic, as the question reads
    assert answer.trace.round_trips >= 1 and answer.trace.fallback is None


def test_kgfr_with_an_llm_ranks_as_kgfr_without_one(store, retriever):
    """The LLM sees the ranking KGFR gives alone: the same question, its topic masked for the text prior."""
    llm = ScriptedLLM(["1. Dr. Socrates", "yes\nsub-questions: none\nkey entities: none"])
    answer = LLMKGFR(retriever, llm).answer(QUESTION, ["Kismet"])
    alone = retriever.answer(QUESTION, ["Kismet"])
    assert [c["iri"] for c in answer.evidence.candidates] == [c.iri for c in alone.candidates]
    assert [c["score"] for c in answer.evidence.candidates] == pytest.approx([c.score for c in alone.candidates])


def test_kgfr_reflection_asks_for_more_and_the_loop_is_bounded(store, retriever, uncapped_sessions):
    replies = []
    # each reflection asks about someone else, so that each follow-up brings new evidence (one that
    # finds nothing new ends the loop on its own: the next test)
    for person, verb in (("William Dieterle", "direct"), ("Ronald Colman", "act in"), ("Marlene Dietrich", "act in")):
        replies += ["1. William Dieterle", f"no\nsub-questions: what else did {person} {verb}\nkey entities: {person}"]
    llm = ScriptedLLM(replies)
    kgfr = LLMKGFR(retriever, llm, max_steps=3)
    answer = kgfr.answer(QUESTION, ["Kismet"])
    # three steps of answer + reflection, though every reflection asks for more: max_steps ends the loop itself
    assert [c.purpose for c in answer.trace.llm_calls] == [f"kgfr.{kind}.s{step}" for step in (1, 2, 3) for kind in ("answer", "reflect")]
    assert len(answer.trace.llm_calls) == kgfr.call_bound() == 6
    assert answer.trace.llm_calls[2].purpose == "kgfr.answer.s2"  # the follow-up happened
    assert "William Dieterle" in llm.prompts[2]


def test_kgfr_a_follow_up_that_finds_nothing_new_ends_the_loop(store, retriever, uncapped_sessions):
    reflection = "no\nsub-questions: what else did William Dieterle direct\nkey entities: William Dieterle"
    llm = ScriptedLLM(["1. William Dieterle", reflection] * 3)
    answer = LLMKGFR(retriever, llm, max_steps=3).answer(QUESTION, ["Kismet"])
    # the first follow-up brings William Dieterle's films; the same one again brings nothing: no step 3
    assert [c.purpose for c in answer.trace.llm_calls] == ["kgfr.answer.s1", "kgfr.reflect.s1", "kgfr.answer.s2", "kgfr.reflect.s2"]


def test_kgfr_unreadable_reflection_stops_the_loop(store, retriever):
    llm = ScriptedLLM(["1. Dr. Socrates", "maybe? hard to say"])
    answer = LLMKGFR(retriever, llm).answer(QUESTION, ["Kismet"])
    assert len(answer.trace.llm_calls) == 2 and [a.label for a in answer.answers] == ["Dr. Socrates"]


def test_kgfr_llm_failure_falls_back_to_the_ranking(store, retriever):
    answer = LLMKGFR(retriever, ScriptedLLM(["!error"])).answer(QUESTION, ["Kismet"])
    assert "answered with the KGFR ranking" in answer.trace.fallback
    assert answer.answers and all(a.match == "ranked" for a in answer.answers)
    assert answer.trace.llm_calls[0].ok is False


def test_parse_reflection():
    assert parse_reflection(" yes").sufficient is True
    r = parse_reflection("no\nsub-questions: who directed X; when\nkey entities: X | Y; none")
    assert (r.readable, r.sufficient, r.subquestions, r.key_entities) == (True, False, ["who directed X", "when"], ["X", "Y"])
    assert parse_reflection("").readable is False and parse_reflection("perhaps").readable is False


def test_relation_language_keeps_defaults_for_unusable_replies(store):
    def reply(prompt: str) -> str:
        if "template:" in prompt.splitlines()[-1]:
            return "{head} was directed by {tail}." if "directed_by" in prompt else "no placeholders here"
        return "" if "release_year" in prompt else "a relation between films and people"
    language = generate(store, ScriptedLLM(reply))
    assert language.templates == {"directed_by": "{head} was directed by {tail}."}
    assert "release_year" not in language.descriptions and language.sources["release_year/description"] == "default"
    assert len(language.calls) == 2 * 4
    assert language.verbalise("Kismet", "directed_by", "William Dieterle") == "Kismet was directed by William Dieterle."
    assert language.verbalise("William Dieterle", "directed_by⁻¹", "Kismet") == "Kismet was directed by William Dieterle."
    assert RelationLanguage().verbalise("Kismet", "release_year", "1944") == "Kismet release year 1944"


# --- llm-only and answer mapping ---------------------------------------------------------------------

@pytest.mark.parametrize("style,reply", [("io", "1. Dr. Socrates"), ("cot", "Dieterle directed it. So the answers are:\n1. Dr. Socrates")])
def test_llm_only_is_one_call_and_still_maps_to_the_kg(store, style, reply):
    answer = answer_llm_only(store, ScriptedLLM([reply]), QUESTION, style)
    assert len(answer.trace.llm_calls) == 1 and answer.method == {"io": "llm-only", "cot": "llm-only-cot"}[style]
    assert [(a.label, a.match) for a in answer.answers] == [("Dr. Socrates", "exact")]


def test_answer_strings_from_lists_and_free_text():
    assert numbered_items("1. A\n2) B\n- C\n\nnot this") == ["A", "B", "C"]
    assert answer_strings("The answer is Paris.")[0] == ["Paris"]
    items, pieces = answer_strings("Dr. Socrates and Kismet")
    assert items == ["Dr. Socrates and Kismet"] and pieces == [["Dr. Socrates", "Kismet"]]
    assert answer_strings("")[0] == []


def test_map_answers_prefers_subgraph_then_store_then_linker(store):
    sg = retrieve(store, [kismet(store).iris[0]], 1, 100)
    mapped = map_answers("1. william dieterle\n2. Dr. Socrates\n3. I think Random Harvest\n4. Casablanca\n5. Dr. Socrates and Kismet", store, sg)
    assert [(a.text, a.label, a.match) for a in mapped] == [
        ("william dieterle", "William Dieterle", "subgraph"),
        ("Dr. Socrates", "Dr. Socrates", "exact"),
        ("I think Random Harvest", "Random Harvest", "linked"),
        ("Casablanca", None, "none"),
        ("Kismet", "Kismet", "subgraph"),
    ]
