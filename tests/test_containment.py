"""Places in a KG without types: a country is where the containment of places ends
(kgqa.methods.kgfr.containment) — a candidate lying in an outermost place hands its score to that place
where the question asks for a country; not for other kinds, not in a KG with types, not where a
continent only contains countries, not where the topic is a place itself —, a country past a named
neighbour is none of that neighbour's kind, and a value is no place (kgqa.methods.kgfr.value_kind). On a
real embedded store's subgraphs, and through KGFR's answer with the bundled checkpoint."""

from __future__ import annotations

import torch
from conftest import store_from_lines, subgraph_from_lines

from kgqa.methods.kgfr.asked_kind import asks_for_country
from kgqa.methods.kgfr.containment import climb_to_country, containment_relations

PEOPLE = [  # the scale KG's shape: people born in cities, cities in countries, citizens of countries
    "Ann Lee|born_in|Zenda",
    "Ann Lee|citizen_of|Ruritania",
    "Bob Ray|born_in|Strelsau",
    "Bob Ray|citizen_of|Ruritania",
    "Zenda|located_in|Graustark",
    "Strelsau|located_in|Ruritania",
    "University of Zenda|located_in|Zenda",  # a place inside the city: the city is no outermost place
    "Carl Orr|citizen_of|Graustark",
    "Graustark|capital|Zenda",
]


def _first(sg, scores: dict[str, float], probe: str) -> tuple[str, int]:  # type: ignore[no-untyped-def]
    """The best candidate after the climb for `probe`, from `scores` by label (others -inf), and how many moved."""
    index = {label: i for i, label in enumerate(sg.node_labels)}
    tensor = torch.full((sg.num_nodes,), float("-inf"))
    for label, score in scores.items():
        tensor[index[label]] = score
    climbed, moved = climb_to_country(tensor, sg, probe)
    return sg.node_labels[int(torch.argmax(climbed))], moved


def test_the_country_a_city_lies_in_takes_the_citys_place_where_a_country_is_asked(tmp_path):
    sg = subgraph_from_lines(tmp_path, "people", PEOPLE, "Ann Lee")
    assert [sg.relation_labels[i] for i in containment_relations(sg)] == ["located_in"]
    ranked = {"Zenda": 10.0, "Ruritania": 6.0, "Graustark": 2.0, "University of Zenda": 1.0, "Bob Ray": 0.5}
    assert _first(sg, ranked, "what country was something born in") == ("Graustark", 1)  # Zenda moves down (not its university)
    assert _first(sg, ranked, "in which nation was something born")[0] == "Graustark"
    assert _first(sg, ranked, "which city was something born in") == ("Zenda", 0)  # a city asked: nothing moves
    assert _first(sg, ranked, "where was something born") == ("Zenda", 0)
    assert asks_for_country("what nationality is the spouse of something") and not asks_for_country("what is the capital of something")


def test_a_continent_that_only_contains_countries_is_no_country(tmp_path):
    """Ruritania lies in Europe, which is the object of no other fact: the country stays the answer."""
    lines = PEOPLE + ["Ruritania|located_in|Europe", "Graustark|located_in|Europe"]
    sg = subgraph_from_lines(tmp_path, "continents", lines, "Ann Lee")
    assert _first(sg, {"Ruritania": 10.0, "Europe": 3.0, "Zenda": 1.0}, "which country is something a citizen of") == ("Ruritania", 0)


def test_nothing_climbs_where_the_topic_is_a_place_or_the_kg_has_types(tmp_path_factory):
    places = subgraph_from_lines(tmp_path_factory.mktemp("places"), "places", PEOPLE, "Zenda")  # "which countries border X": X's own order
    assert _first(places, {"Strelsau": 10.0, "Ruritania": 2.0}, "which country is near something") == ("Strelsau", 0)
    typed = subgraph_from_lines(tmp_path_factory.mktemp("typed"), "typed", PEOPLE + ["Zenda|type|city", "Graustark|type|country"], "Ann Lee")
    assert _first(typed, {"Zenda": 10.0, "Graustark": 2.0}, "what country was something born in") == ("Zenda", 0)


def test_kgfr_answers_the_country_a_person_was_born_in_through_the_city(tmp_path):
    from kgqa import Engine

    with Engine(store_from_lines(tmp_path, "people", PEOPLE), "kgfr", kg="people") as engine:
        answer = engine.ask("what country was Ann Lee born in", topics=["Ann Lee"], decline_below=0)
        assert answer.answers[0].text == "Graustark"
        path = answer.evidence.path_edges[0]  # the evidence: through the city (as it lies in, or is the capital of, Graustark)
        assert (path[0]["head"], path[0]["relation"], path[0]["tail"]) == ("Ann Lee", "born_in", "Zenda") and len(path) == 2
        assert engine.ask("which city was Ann Lee born in", topics=["Ann Lee"], decline_below=0).answers[0].text == "Zenda"


def test_a_country_asked_past_a_named_neighbour_is_no_one_of_that_neighbours_kind(tmp_path):
    """"In which country was the director of Kismet born": in a KG without types, the people the subgraph holds (the
    director's kind: born somewhere, citizens of somewhere) lose as "where" makes them lose."""
    from kgqa.methods.kgfr.answer_kind import wrong_kind
    from kgqa.retrieval.text import TextEncoder

    lines = PEOPLE + ["Kismet|directed_by|Dana Fox", "Dana Fox|born_in|Strelsau", "Dana Fox|citizen_of|Ruritania",
                      "Kismet|release_year|1944"]
    sg = subgraph_from_lines(tmp_path, "films", lines, "Kismet")
    bob = list(sg.node_labels).index("Bob Ray")  # past the director (a fellow citizen), not one hop from Kismet
    assert wrong_kind(sg, "in which country was the director of something born", TextEncoder())[bob]
    assert not wrong_kind(sg, "in which city was the director of something born", TextEncoder())[bob]  # no place asked


WORK = PEOPLE + ["Ann Lee|works_for|Acme", "Acme|headquartered_in|Strelsau", "Ann Lee|occupation|dentist", "Acme|industry|mining"]


def test_a_value_is_no_place(tmp_path):
    """"In which city is Ann Lee's employer based": her occupation (a value: the object of `occupation` alone, the subject
    of nothing) loses to the city however the scorer prefers it; asked for her occupation, nothing moves."""
    from kgqa.methods.kgfr.value_kind import demote_values

    sg = subgraph_from_lines(tmp_path, "work", WORK, "Ann Lee")
    index = {label: i for i, label in enumerate(sg.node_labels)}
    scores = torch.full((sg.num_nodes,), float("-inf"))
    for label, score in {"dentist": 10.0, "mining": 8.0, "Strelsau": 5.0, "Acme": 4.0}.items():
        scores[index[label]] = score
    after, moved = demote_values(scores, sg, "in which city is something's employer based")
    assert sg.node_labels[int(torch.argmax(after))] == "Strelsau" and moved == 2
    assert demote_values(scores, sg, "where is something's employer headquartered")[1] == 2
    assert demote_values(scores, sg, "what is something's occupation")[1] == 0


def test_a_node_the_subgraph_shows_only_as_a_value_is_none_where_the_store_knows_its_facts(tmp_path):
    """Around Graustark (one hop), its capital Zenda is the object of `capital` alone; the store knows it lies in
    Ruritania."""
    from kgqa.core.namespace import KGNamespace
    from kgqa.retrieval.app import retrieve
    from kgqa.retrieval.store_url import open_store
    from kgqa.methods.kgfr.value_kind import values

    lines = ["Graustark|capital|Zenda", "Zenda|located_in|Ruritania", "Graustark|industry|mining", "Bob Ray|citizen_of|Graustark"]
    store = open_store(store_from_lines(tmp_path, "capitals", lines), "capitals")
    try:
        sg = retrieve(store, [KGNamespace("capitals").entity("Graustark")], 1, 100)
        zenda, mining = list(sg.node_labels).index("Zenda"), list(sg.node_labels).index("mining")
        scores = torch.zeros(sg.num_nodes)
        assert values(sg, scores)[zenda] and values(sg, scores)[mining]
        assert not values(sg, scores, store)[zenda] and values(sg, scores, store)[mining]
    finally:
        store.close()


def test_kgfr_answers_where_an_employer_is_based_with_a_place(tmp_path):
    from kgqa import Engine

    with Engine(store_from_lines(tmp_path, "work", WORK), "kgfr", kg="work") as engine:
        answer = engine.ask("in which city is Ann Lee's employer based", topics=["Ann Lee"], decline_below=0)
        assert answer.answers[0].text == "Strelsau"
        moved = answer.trace.subgraph["moved"]
        assert moved["value_for_a_place"] == 2 and moved["no_place"] > 0  # dentist and mining; the firm and the people


def test_where_a_place_is_asked_the_places_are_the_ends_of_the_containment(tmp_path):
    """"In which city is Ann Lee's employer based": a colleague, the firm itself or her occupation is no end of a
    `located_in` fact, and loses to the city however the scorer prefers it; a person asked for ("who works for"),
    nothing moves; a node the subgraph shows at its last hop only through another fact is a place where the store
    says it lies somewhere."""
    from kgqa.core.namespace import KGNamespace
    from kgqa.methods.kgfr.containment import demote_non_places
    from kgqa.retrieval.app import retrieve
    from kgqa.retrieval.store_url import open_store

    lines = WORK + ["Bob Ray|works_for|Acme"]
    store = open_store(store_from_lines(tmp_path, "work", lines), "work")
    try:
        sg = retrieve(store, [KGNamespace("work").entity("Ann Lee")], 3, 100)
        index = {label: i for i, label in enumerate(sg.node_labels)}
        scores = torch.full((sg.num_nodes,), float("-inf"))
        for label, score in {"Bob Ray": 10.0, "Acme": 9.0, "dentist": 8.0, "Strelsau": 5.0}.items():
            scores[index[label]] = score
        after, moved = demote_non_places(scores, sg, "in which city is something's employer based", store)
        assert sg.node_labels[int(torch.argmax(after))] == "Strelsau" and moved == 3
        assert demote_non_places(scores, sg, "who works for something's employer", store)[1] == 0
    finally:
        store.close()
    lines = ["Ann Lee|works_for|Acme", "Acme|headquartered_in|Strelsau", "Strelsau|located_in|Ruritania", "Ann Lee|born_in|Zenda",
             "Zenda|located_in|Graustark"]
    (tmp_path / "two").mkdir()
    store = open_store(store_from_lines(tmp_path / "two", "hops", lines), "hops")
    try:
        sg = retrieve(store, [KGNamespace("hops").entity("Ann Lee")], 2, 100)  # Strelsau at the last hop: no `located_in` fact here
        index = {label: i for i, label in enumerate(sg.node_labels)}
        scores = torch.full((sg.num_nodes,), float("-inf"))
        for label, score in {"Strelsau": 10.0, "Acme": 9.0, "Graustark": 1.0}.items():
            scores[index[label]] = score
        probe = "in which city is something's employer based"
        assert demote_non_places(scores, sg, probe)[1] == 2  # without the store, Strelsau seems no place
        after, moved = demote_non_places(scores, sg, probe, store)
        assert sg.node_labels[int(torch.argmax(after))] == "Strelsau" and moved == 1
    finally:
        store.close()


def test_what_the_subgraph_does_not_show_of_a_country_the_store_says(tmp_path):
    """Two hops around Ann, Graustark shows only as the place Zenda lies in; the store knows its capital: a country."""
    from kgqa.core.namespace import KGNamespace
    from kgqa.retrieval.app import retrieve
    from kgqa.retrieval.store_url import open_store

    lines = ["Ann Lee|born_in|Zenda", "Zenda|located_in|Graustark", "Graustark|capital|Strelsau"]
    store = open_store(store_from_lines(tmp_path, "edge", lines), "edge")
    try:
        sg = retrieve(store, [KGNamespace("edge").entity("Ann Lee")], 2, 100)
        index = {label: i for i, label in enumerate(sg.node_labels)}
        scores = torch.full((sg.num_nodes,), float("-inf"))
        scores[index["Zenda"]], scores[index["Graustark"]] = 10.0, 2.0
        probe = "what country was something born in"
        assert climb_to_country(scores, sg, probe)[1] == 0  # a container alone, as a continent would be
        after, moved = climb_to_country(scores, sg, probe, store)
        assert sg.node_labels[int(torch.argmax(after))] == "Graustark" and moved == 1
    finally:
        store.close()


def test_where_without_a_verb_of_place_keeps_what_is_no_place(tmp_path):
    """"Where does Ann Lee work": the firm is no end of a containment fact, and may be what is asked; "where is ... located"
    asks for a place."""
    from kgqa.methods.kgfr.containment import demote_non_places

    sg = subgraph_from_lines(tmp_path, "work", WORK, "Ann Lee")
    index = {label: i for i, label in enumerate(sg.node_labels)}
    scores = torch.full((sg.num_nodes,), float("-inf"))
    scores[index["Acme"]], scores[index["Strelsau"]] = 10.0, 5.0
    assert demote_non_places(scores, sg, "where does something work")[1] == 0
    assert demote_non_places(scores, sg, "in which city does something work")[1] == 1
    assert demote_non_places(scores, sg, "where is something's employer located")[1] == 1


def test_one_questions_place_rules_ask_the_store_once_for_each_entity(tmp_path):
    """`SubjectRelationsOnce` over a real store: an entity asked again is answered from what the first call said,
    an entity the store knows no facts of included."""
    from kgqa.core.namespace import KGNamespace
    from kgqa.methods.kgfr.containment import SubjectRelationsOnce
    from kgqa.retrieval.store_url import open_store

    store = open_store(store_from_lines(tmp_path, "once", PEOPLE), "once")
    try:
        calls: list[list[str]] = []
        asked = store.subject_relations

        class Counting:  # the real store, its calls written down
            def subject_relations(self, iris):  # type: ignore[no-untyped-def]
                calls.append(list(iris))
                return asked(iris)

        once = SubjectRelationsOnce(Counting())  # type: ignore[arg-type]
        zenda, graustark = (KGNamespace("once").entity(name) for name in ("Zenda", "Graustark"))
        first = once.subject_relations([zenda, graustark])
        assert first == asked([zenda, graustark]) and "located_in" in first[zenda]
        assert once.subject_relations([graustark, zenda]) == first and len(calls) == 1
        ann = KGNamespace("once").entity("Ann Lee")
        assert set(once.subject_relations([zenda, ann])) == {zenda, ann} and calls[-1] == [ann]
    finally:
        store.close()
