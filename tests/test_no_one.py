"""A "who" question the KG's facts read as asking for no one is declined (kgqa.methods.kgfr.no_one): in a KG without
types, where the scorer's own best candidate for "who …" or "which people …" is a place, a common noun or a year. On a
real embedded store's subgraphs, and through KGFR's answer with the bundled checkpoint."""

from __future__ import annotations

import torch
from conftest import store_from_lines, subgraph_from_lines

from kgqa.methods.kgfr.no_one import asks_for_someone, reads_no_one

TOWN = [  # the scale KG's shape: people born in and living in cities, firms based in them, cities in countries
    "Ann Lee|born_in|Zenda",
    "Ann Lee|occupation|dentist",
    "Ann Lee|birth_year|1970",
    "Ann Lee|works_for|Acme",
    "Bob Ray|lives_in|Zenda",
    "Acme|headquartered_in|Zenda",
    "Zenda|located_in|Ruritania",
]


def _scores(sg, best: str) -> torch.Tensor:  # type: ignore[no-untyped-def]
    """The scorer's scores with `best` first and every other candidate below it."""
    scores = torch.zeros(sg.num_nodes)
    scores[list(sg.node_labels).index(best)] = 10.0
    return scores


def test_who_read_best_as_a_place_a_common_noun_or_a_year_reads_no_one(tmp_path):
    sg = subgraph_from_lines(tmp_path, "town", TOWN, "Zenda")
    assert reads_no_one(sg, _scores(sg, "Ruritania"), "who is the mayor of something") == "Ruritania"  # a place
    assert reads_no_one(sg, _scores(sg, "dentist"), "who is the mayor of something") == "dentist"  # a common noun
    assert reads_no_one(sg, _scores(sg, "1970"), "which people govern something") == "1970"  # a year
    assert reads_no_one(sg, _scores(sg, "Ann Lee"), "who is the mayor of something") is None  # someone
    assert reads_no_one(sg, _scores(sg, "Acme"), "who is the mayor of something") is None  # a firm may be who
    assert reads_no_one(sg, _scores(sg, "Ruritania"), "which country is something in") is None  # no one asked for
    assert reads_no_one(sg, _scores(sg, "dentist"), "who is something") is None  # what the topic is, maybe
    assert asks_for_someone("by whom was something directed") and not asks_for_someone("who is something")


def test_nothing_reads_no_one_in_a_kg_with_types(tmp_path):
    """"Who did France surrender to": in a typed KG a country may be who."""
    sg = subgraph_from_lines(tmp_path, "typed", TOWN + ["Ruritania|type|country", "Ann Lee|type|person"], "Zenda")
    assert reads_no_one(sg, _scores(sg, "Ruritania"), "who is the mayor of something") is None


def test_kgfr_declines_who_the_kg_reads_as_no_one_and_answers_who_it_holds(tmp_path):
    from kgqa import Engine

    with Engine(store_from_lines(tmp_path, "town", TOWN), "kgfr", kg="town") as engine:
        lacking = engine.ask("who is the ceo of Acme", topics=["Acme"])
        assert not lacking.answers and "no one" in lacking.declined
        held = engine.ask("who works for Acme", topics=["Acme"])
        assert [a.text for a in held.answers][:1] == ["Ann Lee"]
