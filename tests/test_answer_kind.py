"""What the question asks for (kgqa.methods.kgfr.answer_kind): the kind read from the question, the
kinds a real store's subgraph shows (years that are only objects, a film called "2012", type facts),
and the demotion of candidates of the wrong kind, alone and through KGFR's answer."""

from __future__ import annotations

import pytest
import torch
from conftest import store_from_lines, subgraph_from_lines

from kgqa.methods.kgfr.answer_kind import demote_wrong_kind, is_type_relation, node_types, type_relations, wrong_kind
from kgqa.methods.kgfr.literal_kind import literal_nodes, missing_number
from kgqa.methods.kgfr.asked_kind import AskedKind, asked_kind
from kgqa.retrieval.text import TextEncoder

LINES = [
    "Kismet|directed_by|William Dieterle",
    "Kismet|release_year|1944",
    "Kismet|in_language|English",
    "2012|directed_by|Roland Emmerich",  # a film whose name reads as a year
    "2012|release_year|2009",
    "William Dieterle|directed|2012",  # not true, but it puts the film "2012" one step from Kismet's director
    "William Dieterle|type|person",
    "Roland Emmerich|type|person",
    "Kismet|type|film",
    "2012|type|film",
    "English|type|language",
    "film|is_a|work",  # a taxonomy's link between classes: no instance's type
]
ROLES = [  # no types: the kinds are what the relations' objects are called
    "Kismet|directed_by|William Dieterle",
    "Kismet|starred_actors|Ronald Colman",
    "Random Harvest|starred_actors|Ronald Colman",
    "Random Harvest|starred_actors|Greer Garson",
    "Random Harvest|has_genre|Drama",
    "Random Harvest|release_year|1942",
]


@pytest.fixture(scope="module")
def subgraph(tmp_path_factory):
    return subgraph_from_lines(tmp_path_factory.mktemp("kinds"), "kinds", LINES, "Kismet")


@pytest.mark.parametrize("probe, expected", [
    ("when was something released", AskedKind("time", None)),
    ("in which year did something come out", AskedKind("time", "year")),
    ("what is the birth year of something", AskedKind("time", "birth year")),
    ("which country was something born in", AskedKind("entity", "country")),
    ("what sort of movie is something", AskedKind("entity", "movie", category=True)),
    ("name the director of something", AskedKind("entity", "director")),
    ("who directed something", AskedKind("entity", None)),
    ("where was the founder of something born", AskedKind("entity", None, place=True)),
    ("how many films did something direct", AskedKind("number", None)),
    ("what else did the director of something make", AskedKind(None, None)),
    ("what is the company something works for", AskedKind("entity", "company")),  # the topic ends the noun
    ("what is the name of something's wife", AskedKind(None, None)),  # a name is no kind
    ("what time zone is something in", AskedKind("entity", "time zone")),  # a zone, not a time
    ("what time does something air", AskedKind("time", "time")),
    ("what time is it in something right now", AskedKind("entity", "time zone")),  # the clock a place keeps: its zone
    ("what is the running time of something", AskedKind("number", "running time")),  # how long, not when
    ("what is the area of something", AskedKind("number", "area")),  # a size
    ("what area of science did something study", AskedKind("entity", "area")),  # "what area": a field or a region
    ("something was governor of what area", AskedKind("entity", "area")),
    # a noun phrase up to an auxiliary is the kind, its last word the head; without an auxiliary after it, one word
    ("what musical instruments does something play", AskedKind("entity", "musical instruments")),
    ("which award nominee was something", AskedKind("entity", "award nominee")),
    ("what movie genre is something", AskedKind("entity", "movie genre")),
    ("what birth year did something have", AskedKind("time", "birth year")),
    ("which person directed something", AskedKind("entity", "person")),
    ("which country borders something", AskedKind("entity", "country")),
    ("which actor also was in something", AskedKind("entity", "actor")),
    ("what country that has something is it", AskedKind("entity", "country")),
    ("what something movies were released", AskedKind("entity", "movies")),  # the topic is no part of the kind
    ("who filmed what something wrote", AskedKind("entity", None)),
])
def test_the_asked_kind_is_read_from_the_question(probe, expected):
    assert asked_kind(probe) == expected


def test_a_year_is_a_literal_only_where_it_is_no_facts_subject(subgraph):
    kinds = dict(zip(subgraph.node_labels, literal_nodes(subgraph)))
    assert kinds["1944"] == "time" and kinds["2009"] == "time"
    assert kinds["2012"] == "either"  # a film: it is directed by someone
    assert kinds["Kismet"] is None and kinds["William Dieterle"] is None


def test_types_are_read_from_the_type_relation_in_either_direction(subgraph):
    types, classes = node_types(subgraph)
    types = {subgraph.node_labels[n]: ts for n, ts in types.items()}
    assert types["William Dieterle"] == ["person"] and types["2012"] == ["film"] and types["English"] == ["language"]
    assert {subgraph.node_labels[n] for n in classes} == {"person", "film", "language"}  # not "work": is_a is a taxonomy


def test_candidates_of_the_wrong_kind_rank_last_and_keep_their_order(subgraph):
    sg = subgraph
    index = {label: i for i, label in enumerate(sg.node_labels)}
    scores = torch.arange(sg.num_nodes, dtype=torch.float32)
    scores[index["Kismet"]] = float("-inf")  # the topic
    scores[index["1944"]] = 100.0  # the scorer's favourite: a year
    scores[index["work"]] = 50.0  # no type: its kind is unknown, so it is never demoted
    encoder = TextEncoder()
    # "which language ..." — the year is no language, and the typed candidates other than English are of another type
    demoted, count = demote_wrong_kind(scores, sg, "which language is something in", encoder)
    order = [sg.node_labels[int(i)] for i in torch.argsort(demoted, descending=True) if torch.isfinite(demoted[i])]
    assert order[:2] == ["work", "English"] and count >= 3
    assert order.index("1944") > order.index("English")
    # "when ..." — only the years are of the asked kind
    demoted, _ = demote_wrong_kind(scores, sg, "when was something released", encoder)
    top_three = {sg.node_labels[int(i)] for i in torch.argsort(demoted, descending=True)[:3]}
    assert top_three == {"1944", "2009", "2012"}  # the film "2012" reads as a year too: it keeps its place
    # a question that names no kind moves nothing
    same, count = demote_wrong_kind(scores, sg, "something?", encoder)
    assert count == 0 and torch.equal(same, scores)


def test_nothing_moves_when_every_candidate_is_of_the_wrong_kind(subgraph):
    sg = subgraph
    scores = torch.full((sg.num_nodes,), float("-inf"))
    scores[sg.node_labels.index("1944")] = 3.0
    scores[sg.node_labels.index("2009")] = 2.0
    same, count = demote_wrong_kind(scores, sg, "who directed something", None)
    assert count == 0 and torch.equal(same, scores)
    assert wrong_kind(sg, "who directed something", None)[sg.node_labels.index("1944")]


def test_kgfr_ranks_the_wrong_kind_last_and_any_kind_turns_it_off(tmp_path):
    from kgqa import Engine

    url = store_from_lines(tmp_path, "kinds", LINES)
    ranked = {}
    for gate in (True, False):
        with Engine(url, "kgfr", kg="kinds", answer_kind=gate) as engine:
            answer = engine.ask("which language do they speak in Kismet", topics=["Kismet"])
            ranked[gate] = [c["label"] for c in answer.evidence.candidates]
    # on: the language and the one untyped node first; the people, films, classes and years after them
    assert ranked[True][:2] == ["English", "work"] and set(ranked[True]) == set(ranked[False])
    assert ranked[False][:2] != ranked[True][:2]  # off: the model's own order


def test_a_noun_that_names_a_relations_objects_keeps_only_those_objects(tmp_path):
    sg = subgraph_from_lines(tmp_path, "roles", ROLES, "Kismet")
    index = {label: i for i, label in enumerate(sg.node_labels)}
    encoder = TextEncoder()
    scores = torch.zeros(sg.num_nodes)
    scores[index["Kismet"]] = float("-inf")
    scores[index["Random Harvest"]] = 10.0  # the film the question walks through, the scorer's favourite
    demoted, _ = demote_wrong_kind(scores, sg, "which actors did the stars of something work with", encoder)
    ranked = [sg.node_labels[int(i)] for i in torch.argsort(demoted, descending=True)[:2]]
    assert set(ranked) == {"Ronald Colman", "Greer Garson"}  # the objects of starred_actors
    assert demoted[index["Random Harvest"]] < demoted[index["Greer Garson"]]
    # "films" is what no relation's objects are called here: only the year moves (no film is a year)
    moved, count = demote_wrong_kind(scores, sg, "which films did the stars of something make", encoder)
    assert count == 1 and moved[index["1942"]] < scores[index["1942"]]
    # a kind of film is what the objects of has_genre are called ("film genre"): the film the question walks through loses
    kinds, _ = demote_wrong_kind(scores, sg, "what kinds of films did the stars of something make", encoder)
    assert sg.node_labels[int(torch.argmax(kinds))] == "Drama"


def test_a_noun_names_a_relations_objects_only_in_both_numbers(tmp_path):
    """"Companies" reads like `industry` (0.76) where "company" does not (0.71): the companies are not demoted for
    the industries a plural alone reads like; "industries" still keeps only the industries."""
    lines = ["Acme|industry|textiles", "Acme|headquartered_in|Zenda", "Ann|born_in|Zenda", "Ann|works_for|Acme"]
    sg = subgraph_from_lines(tmp_path, "firms", lines, "Ann")
    acme = list(sg.node_labels).index("Acme")
    encoder = TextEncoder()
    assert not wrong_kind(sg, "which companies are headquartered in the city where something was born", encoder)[acme]
    assert wrong_kind(sg, "which industries are the companies something works for in", encoder)[acme]


FREEBASE = [  # no type relation, but Freebase property names say their subjects' types
    "Ann|/people/person/spouse_s./people/marriage/spouse|Bob",
    "Ann|/people/person/place_of_birth|Strelsau",
    "Bob|/people/person/nationality|Ruritania",
    "Bob|/people/person/place_of_birth|Zenda",
    "Strelsau|/location/location/containedby|Ruritania",
    "Zenda|/location/location/containedby|Ruritania",  # Zenda is reached at the second hop: this fact lies beyond
    "Ruritania|/location/country/capital|Strelsau",
]


WORKS = [  # no types: the films are what someone directed or wrote, the people and the company are objects
    "The Apartment|written_by|I. A. L. Diamond",
    "The Apartment|directed_by|Billy Wilder",
    "Merry Andrew|written_by|I. A. L. Diamond",
    "Merry Andrew|directed_by|Michael Kidd",
    "I. A. L. Diamond|works_for|Mirisch Company",
    "Mirisch Company|founded_by|Walter Mirisch",
]


def test_who_asks_for_no_work_in_a_kg_without_types(tmp_path):
    sg = subgraph_from_lines(tmp_path, "works", WORKS, "I. A. L. Diamond")
    index = {label: i for i, label in enumerate(sg.node_labels)}
    scores = torch.zeros(sg.num_nodes)
    scores[index["I. A. L. Diamond"]] = float("-inf")
    scores[index["The Apartment"]], scores[index["Merry Andrew"]] = 10.0, 9.0  # the films the question walks through
    scores[index["Mirisch Company"]] = 5.0

    def ranked(probe: str) -> list[str]:
        demoted, _ = demote_wrong_kind(scores, sg, probe, None)
        return [sg.node_labels[int(i)] for i in torch.argsort(demoted, descending=True) if torch.isfinite(demoted[i])]

    assert ranked("who directed the scripts something wrote")[-2:] == ["The Apartment", "Merry Andrew"]
    # a company is founded by someone, but someone works for it: an object, not demoted
    assert ranked("who does something work for")[0] == "Mirisch Company"
    assert not wrong_kind(sg, "who directed the scripts something wrote", None)[index["Mirisch Company"]]
    assert ranked("what did something write")[0] == "The Apartment"  # only "who" reads it


def test_freebase_property_names_type_their_subjects_and_objects_and_the_store_types_the_rest(tmp_path):
    from kgqa.core.namespace import KGNamespace
    from kgqa.retrieval.app import retrieve
    from kgqa.retrieval.store_url import open_store

    store = open_store(store_from_lines(tmp_path, "fb", FREEBASE), "fb")
    try:
        sg = retrieve(store, [KGNamespace("fb").entity("Ann")], 2, 100)
        index = {label: i for i, label in enumerate(sg.node_labels)}
        types = {sg.node_labels[n]: ts for n, ts in node_types(sg)[0].items()}
        # subjects by their property's type, objects by what the property calls them
        assert types["Bob"] == ["person", "spouse"] and types["Ruritania"] == ["containedby", "country", "nationality"]
        assert types["Strelsau"] == ["capital", "location", "place of birth"]
        assert types["Zenda"] == ["place of birth"]  # only the fact that reached it is in the subgraph
        scores = torch.zeros(sg.num_nodes)
        scores[index["Ann"]] = float("-inf")
        scores[index["Zenda"]], scores[index["Bob"]], scores[index["Ruritania"]] = 100.0, 80.0, 50.0
        encoder = TextEncoder()
        probe = "which country is something's husband from"

        def first(ranked: torch.Tensor) -> str:
            return sg.node_labels[int(torch.argmax(ranked))]

        alone, _ = demote_wrong_kind(scores, sg, probe, encoder)
        assert first(alone) == "Ruritania"  # a birthplace and a spouse are no country
        assert alone[index["Bob"]] < alone[index["Ruritania"]] and alone[index["Zenda"]] < alone[index["Ruritania"]]
        asked = store.round_trips
        typed, _ = demote_wrong_kind(scores, sg, probe, encoder, store)
        assert first(typed) == "Ruritania" and store.round_trips == asked + 1
        zenda = index["Zenda"]
        assert node_types(sg, lambda: {zenda: ["/location/location/containedby"]})[0][zenda] == ["location", "place of birth"]
        assert store.subject_relations([KGNamespace("fb").entity("Zenda")]) == {
            KGNamespace("fb").entity("Zenda"): ["/location/location/containedby"]}  # the fact beyond the subgraph
        where, _ = demote_wrong_kind(scores, sg, "where was something's husband born", encoder)
        assert first(where) == "Zenda" and where[index["Bob"]] < where[index["Ruritania"]]  # a person is no "where"
        untouched = store.round_trips
        demote_wrong_kind(scores, sg, "who is something married to", encoder, store)  # no noun: no types read
        assert store.round_trips == untouched
    finally:
        store.close()


FAR_COUNTRY = [  # Freebase names: Graustark's capital lies beyond a 2-hop subgraph from Bob, so the subgraph shows it only as an object
    "Bob|/people/person/place_of_birth|Zenda",
    "Zenda|/location/location/containedby|Graustark",
    "Graustark|/location/country/capital|Edelweiss",
    "Bob|/people/person/nationality|Ruritania",
    "Ruritania|/location/country/capital|Strelsau",
]


def test_the_store_types_the_candidates_the_subgraph_shows_only_as_objects_beyond_the_best_few(tmp_path, monkeypatch):
    from kgqa.core.namespace import KGNamespace
    from kgqa.methods.kgfr import answer_kind
    from kgqa.retrieval.app import retrieve
    from kgqa.retrieval.store_url import open_store

    store = open_store(store_from_lines(tmp_path, "far", FAR_COUNTRY), "far")
    try:
        sg = retrieve(store, [KGNamespace("far").entity("Bob")], 2, 100)
        index = {label: i for i, label in enumerate(sg.node_labels)}
        assert "Edelweiss" not in index and node_types(sg)[0][index["Graustark"]] == ["containedby"]
        scores = torch.zeros(sg.num_nodes)
        scores[index["Bob"]] = float("-inf")
        scores[index["Zenda"]], scores[index["Strelsau"]], scores[index["Graustark"]], scores[index["Ruritania"]] = 100.0, 90.0, 60.0, 50.0
        probe, encoder = "which country was something born in", TextEncoder()

        def first() -> str:
            ranked, _ = demote_wrong_kind(scores, sg, probe, encoder, store)
            return sg.node_labels[int(torch.argmax(ranked))]

        monkeypatch.setattr(answer_kind, "STORE_TYPED", 2)  # the store types Zenda and Strelsau, the two best
        monkeypatch.setattr(answer_kind, "STORE_TYPED_OBJECTS", 2)
        assert first() == "Ruritania"  # the one country the subgraph shows as such, whatever the scores say
        monkeypatch.setattr(answer_kind, "STORE_TYPED_OBJECTS", 10)  # and Graustark, the subject of no fact of the subgraph
        assert first() == "Graustark"
        asked: list[str] = []
        monkeypatch.setattr(store, "subject_relations", lambda iris: asked.extend(iris) or {})
        demote_wrong_kind(scores, sg, probe, encoder, store)
        ns = KGNamespace("far")
        assert ns.entity("Graustark") in asked and ns.entity("Ruritania") not in asked  # the subject of a fact here, and not among the best two
    finally:
        store.close()


IN_CHARGE = [  # Freebase names: the country asked for is the object of no `…/country` fact in the subgraph
    "Joseph|/government/politician/government_positions_held./government/government_position_held/jurisdiction_of_office|Sovietia",
    "Joseph|/people/person/place_of_birth|Gori",
    "Joseph|/film/actor/film./film/performance/film|Red Square",
    "Red Square|/film/film/country|Ruritania",
    "Sovietia|/location/country/capital|Moskva",
    "Joseph|/people/person/education./education/education/institution|Tiflis Seminary",
    "Tiflis Seminary|/education/educational_institution/school_type|Seminary",  # a kind of school, no class of instances
]


def test_a_candidate_its_own_properties_type_as_asked_is_not_demoted_for_a_role_the_subgraph_does_not_show(tmp_path):
    sg = subgraph_from_lines(tmp_path, "charge", IN_CHARGE, "Joseph", hops=2)
    index = {label: i for i, label in enumerate(sg.node_labels)}
    assert not type_relations(sg)  # `school_type` types no instances
    assert is_type_relation("/type/object/type") and is_type_relation("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
    assert is_type_relation("instance of") and not is_type_relation("/education/educational_institution/school_type")
    scores = torch.zeros(sg.num_nodes)
    scores[index["Joseph"]] = float("-inf")
    scores[index["Gori"]], scores[index["Sovietia"]], scores[index["Ruritania"]] = 100.0, 60.0, 50.0
    demoted, _ = demote_wrong_kind(scores, sg, "what country was something in charge of", TextEncoder())
    # Sovietia is only the jurisdiction of an office here, but a country by its own capital; the birthplace is neither
    assert sg.node_labels[int(torch.argmax(demoted))] == "Sovietia"
    assert demoted[index["Gori"]] < demoted[index["Ruritania"]]


def test_a_question_for_a_number_the_subgraph_lacks_is_declined(tmp_path, subgraph):
    from kgqa import Engine

    (tmp_path / "roles").mkdir()
    roles = subgraph_from_lines(tmp_path / "roles", "roles", ROLES, "Kismet")
    assert missing_number(roles, "how many films did something make")  # its year 1942 is a date, not a number
    assert missing_number(roles, "what is the budget of something")
    assert not missing_number(roles, "what time zone is something in")  # "time": no quantity asked
    assert missing_number(roles, "what is the running time of something")  # a duration: its year is no answer
    assert not missing_number(roles, "when was something released")  # dates are not judged
    assert not missing_number(subgraph, "how many films did something make")  # the film "2012" may be one
    url = store_from_lines(tmp_path, "fb", FREEBASE)
    with Engine(url, "kgfr", kg="fb") as engine:
        tall = engine.ask("how tall is Ann", topics=["Ann"])
        assert not tall.answers and "asks for a number" in tall.declined
        assert engine.ask("how tall is Ann", topics=["Ann"], decline_below=0).answers  # declining off: the ranking
        assert engine.ask("how tall is Ann", topics=["Ann"], answer_kind=False, decline_below=0).answers


EMPLOYERS = [  # Freebase property names: what each property calls its objects types them
    "Ann|/people/person/employment_history./business/employment_tenure/company|Acme Motors",
    "Acme Motors|/organization/organization/founders|Carl",
    "Acme Motors|/business/business_operation/industry|automotive",
    "Carl|/people/person/place_of_birth|Strelsau",
    "Ann|/people/person/education./education/education/institution|University of Zenda",
    "University of Zenda|/location/location/containedby|Zenda",
    "Zenda|/location/location/containedby|Ruritania",
    "Ann|/people/person/place_of_birth|Strelsau",
    "Strelsau|/location/location/containedby|Ruritania",
]


@pytest.mark.parametrize("probe, expected", [
    ("who founded the company something works for", "company"),
    ("where is the firm something works at headquartered", "firm"),
    ("which city is something's university in", "university"),
    ("who started something's employer", "employer"),
    ("who directed the film something", None),  # the film is the topic itself
    ("what genre is the film something in", None),
    ("where was the founder of something born", "founder"),
    ("where was the founder of something's employer born", "employer"),
    ("what is the hometown of the filmmaker behind something", "filmmaker"),
])
def test_the_neighbour_a_question_names_on_the_way_is_read(probe, expected):
    from kgqa.methods.kgfr.asked_kind import named_neighbour

    assert named_neighbour(probe) == expected


@pytest.mark.parametrize("probe, expected", [
    ("where were the people something knows born", ("people", "knows")),
    ("which companies are based in the city where something was born", ("city", "born")),
    ("what genres are the films something directed", ("films", "directed")),
    ("list the films something directed", None),  # asks for the films themselves
    ("who are the people something knows", None),
    ("what genre is the film something in", None),  # no verb: the film is the topic
    ("who directed the film something", None),
])
def test_the_neighbour_a_clause_of_the_topic_names_is_read_with_its_verb(probe, expected):
    from kgqa.methods.kgfr.asked_kind import clause_neighbour

    assert clause_neighbour(probe) == expected


@pytest.mark.parametrize("probe, expected", [
    ("where is the employer of something's husband headquartered", "employer"),
    ("where does the company of the spouse of something have its headquarters", "company"),
    ("what is the birthplace of the founder of something's company", "founder"),  # the outermost noun is asked
    ("where is the birthplace of something's husband", None),  # asks for the birthplace itself
    ("what is the name of the employer of something's wife", None),  # a name is no neighbour
    ("which company is the employer of the spouse of something", None),
    ("where was the founder of something born", None),  # one neighbour only
])
def test_the_neighbour_past_the_named_one_is_read_where_the_answer_lies_past_it(probe, expected):
    from kgqa.methods.kgfr.asked_kind import outer_neighbour

    assert outer_neighbour(probe) == expected


def test_a_candidate_that_is_the_neighbour_the_question_names_loses_to_what_it_asks_for(tmp_path):
    from kgqa.core.namespace import KGNamespace
    from kgqa.retrieval.app import retrieve
    from kgqa.retrieval.store_url import open_store

    store = open_store(store_from_lines(tmp_path, "jobs", EMPLOYERS), "jobs")
    try:
        sg = retrieve(store, [KGNamespace("jobs").entity("Ann")], 3, 100)
        index = {label: i for i, label in enumerate(sg.node_labels)}
        scores = torch.zeros(sg.num_nodes)
        scores[index["Ann"]] = float("-inf")
        # the scorer prefers the neighbour the question names (the path's middle entity)
        scores[index["Acme Motors"]], scores[index["University of Zenda"]] = 100.0, 90.0
        scores[index["Carl"]], scores[index["Zenda"]], scores[index["Strelsau"]] = 50.0, 40.0, 45.0
        scores[index["automotive"]] = 60.0
        encoder = TextEncoder()

        def below(probe: str, loser: str, winner: str) -> bool:
            ranked, _ = demote_wrong_kind(scores, sg, probe, encoder)
            return bool(ranked[index[loser]] < ranked[index[winner]])

        assert below("who founded the company something works for", "Acme Motors", "Carl")
        assert below("who started something's employer", "Acme Motors", "Carl")
        assert below("which city is something's university in", "University of Zenda", "Zenda")
        # what lies beyond the named neighbour is not it, however its type reads ("industry" ~ "company")
        assert below("what sector is the company something works for in", "Acme Motors", "automotive")
        # where the question asks for that noun itself, it stays above
        assert below("who is something's employer", "Carl", "Acme Motors")
        assert below("what is the name of something's employer", "Carl", "Acme Motors")
        assert below("what is the company something works for", "Carl", "Acme Motors")
        assert below("what is the employer of something", "Carl", "Acme Motors")
        assert below("which firm is the employer of something", "Carl", "Acme Motors")
        assert below("which company does something work for", "Carl", "Acme Motors")
        assert below("which university did something attend", "Zenda", "University of Zenda")
        # what is asked of the named neighbour is not the topic's own: Ann's birthplace is not her university's city
        scores[index["Strelsau"]] = 95.0
        assert below("which city is something's university in", "Strelsau", "Zenda")
        assert below("which city was something born in", "Zenda", "Strelsau")  # no neighbour named: her own
        assert below("which city is something's birthplace", "Zenda", "Strelsau")  # the neighbour named is the one asked
    finally:
        store.close()


SPOUSES = [  # Ann and Bob were born in cities of two countries
    "Ann|/people/person/spouse_s./people/marriage/spouse|Bob",
    "Ann|/people/person/place_of_birth|Strelsau",
    "Strelsau|/location/location/containedby|Ruritania",
    "Bob|/people/person/place_of_birth|Zenda",
    "Zenda|/location/location/containedby|Graustark",
    "Ruritania|/location/country/capital|Strelsau",
    "Graustark|/location/country/capital|Zenda",
]


def _first_of(sg, scores_by_label: dict[str, float], topic: str = "Ann"):  # type: ignore[no-untyped-def]
    """The top label after the answer kind, for a probe, with the scorer's scores given by label (0 for the rest, the topic -inf)."""
    index = {label: i for i, label in enumerate(sg.node_labels)}
    scores = torch.zeros(sg.num_nodes)
    scores[index[topic]] = float("-inf")
    for label, score in scores_by_label.items():
        scores[index[label]] = score
    encoder = TextEncoder()

    def first(probe: str) -> str:
        ranked, _ = demote_wrong_kind(scores, sg, probe, encoder)
        return sg.node_labels[int(torch.argmax(ranked))]
    return first


def test_what_is_asked_of_the_named_neighbour_lies_past_it_not_back_through_the_topic(tmp_path):
    """"Which country was X's spouse born in": the spouse's birth country, not X's own, which the spouse
    reaches only back through X, however much the scorer prefers it."""
    first = _first_of(subgraph_from_lines(tmp_path, "couples", SPOUSES, "Ann"), {"Ruritania": 100.0, "Graustark": 50.0, "Bob": 80.0})

    assert first("which country was something's spouse born in") == "Graustark"
    assert first("in which country was the spouse of something born") == "Graustark"
    assert first("which country was something born in") == "Ruritania"  # no neighbour named: her own


def test_the_named_neighbour_is_the_one_the_topic_is_linked_to_as_such_from_either_side(tmp_path):
    """"X's spouse" is the one married to X, whichever side states the marriage, not a friend of X's whom
    another marriage makes a spouse."""
    lines = [
        "Bob|/people/person/spouse_s./people/marriage/spouse|Ann",  # stated from Bob's side only
        "Ann|/people/person/friends|Carl",
        "Dora|/people/person/spouse_s./people/marriage/spouse|Carl",
        "Bob|/people/person/place_of_birth|Zenda",
        "Carl|/people/person/place_of_birth|Strelsau",
        "Zenda|/location/location/containedby|Graustark",
        "Strelsau|/location/location/containedby|Ruritania",
        "Graustark|/location/country/capital|Zenda",
        "Ruritania|/location/country/capital|Strelsau",
    ]
    first = _first_of(subgraph_from_lines(tmp_path, "couples", lines, "Ann"), {"Ruritania": 100.0, "Carl": 90.0, "Graustark": 50.0})
    assert first("which country was something's spouse born in") == "Graustark"
    assert first("which country was something's friend born in") == "Ruritania"


PLAIN_SPOUSES = [  # no types, no Freebase names: a person's kind is only the relations she is the subject of
    "Ann|born_in|Strelsau",
    "Ann|works_for|Acme",
    "Ann|occupation|economist",
    "Bob|born_in|Zenda",
    "Acme|headquartered_in|Hentzau",
]


@pytest.mark.parametrize("marriage", ["Ann|spouse_of|Bob", "Bob|spouse_of|Ann"])
def test_in_a_kg_without_types_the_named_neighbour_is_one_of_the_topics_kind(tmp_path, marriage):
    """"Where was the spouse of X born" over plain relation names: the spouse is the one X is married to, from
    either side, a person as X is (both are born somewhere), so X's own birthplace loses however the scorer
    prefers it; an occupation, whose relation reads like "employer" (0.65) but which is the subject of nothing,
    is not taken for X's employer."""
    sg = subgraph_from_lines(tmp_path, "plain", [marriage, *PLAIN_SPOUSES], "Ann")
    first = _first_of(sg, {"Strelsau": 100.0, "Bob": 90.0, "Zenda": 50.0, "Hentzau": 40.0})

    assert first("where was the spouse of something born") == "Zenda"
    assert first("in which city was something's wife born") == "Zenda"
    assert first("where was something born") == "Strelsau"  # no neighbour named: her own
    mismatch = wrong_kind(sg, "in which city is something's employer based", TextEncoder())
    assert not mismatch[list(sg.node_labels).index("Hentzau")]


def test_in_a_kg_without_types_a_clause_of_the_topic_names_a_neighbour_by_its_verb(tmp_path):
    """"The people X knows", "the city where X was born": no noun reads like `knows` or `born_in`, the clause's verb
    does; what the question asks of them lies past them, and "where" asks for none of their kind (Carl, whom Bob
    knows, is born somewhere as Bob is). A question that asks for the clause's noun itself does not demote it."""
    lines = ["Ann|knows|Bob", "Ann|born_in|Strelsau", "Bob|born_in|Zenda", "Ann|works_for|Acme", "Acme|headquartered_in|Hentzau",
             "Zenda Bank|headquartered_in|Strelsau", "Bob|knows|Carl", "Carl|born_in|Hentzau"]
    sg = subgraph_from_lines(tmp_path, "plain", lines, "Ann")
    scores = {"Strelsau": 100.0, "Acme": 90.0, "Bob": 80.0, "Zenda": 50.0, "Zenda Bank": 40.0, "Hentzau": 30.0}
    first = _first_of(sg, scores)

    assert first("which companies are headquartered in the city where something was born") == "Zenda Bank"
    assert first("where is the company something works for headquartered") == "Hentzau"
    assert first("where was something born") == "Strelsau"  # no clause: her own
    assert _first_of(sg, {**scores, "Carl": 95.0})("where were the people something knows born") == "Zenda"
    assert not wrong_kind(sg, "who are the people something knows", TextEncoder())[list(sg.node_labels).index("Bob")]


def test_who_the_topic_does_something_to_is_asked_with_do_not_who_does_it_to_the_topic(tmp_path):
    """"Who does X know": whom Ann knows (Bob), not who knows Ann (Carl), however the scorer prefers Carl; "who knows
    X" reads no direction; a topic that knows nobody here demotes no one."""
    sg = subgraph_from_lines(tmp_path, "plain", ["Ann|knows|Bob", "Carl|knows|Ann", "Carl|knows|Dora"], "Ann")
    first = _first_of(sg, {"Carl": 100.0, "Bob": 50.0})

    assert first("who does something know") == "Bob"
    assert first("whom did something know") == "Bob"
    assert first("who knows something") == "Carl"
    (tmp_path / "alone").mkdir()
    alone = subgraph_from_lines(tmp_path / "alone", "plain", ["Carl|knows|Ann", "Carl|knows|Dora"], "Ann")
    assert not wrong_kind(alone, "who does something know", TextEncoder()).any()


def test_what_is_asked_of_the_neighbour_past_the_named_one_lies_past_that_one_too(tmp_path):
    """"Where is the employer of X's husband headquartered": not the employer (the path's second node), not
    X's own employer's city, but the city of the husband's employer."""
    lines = [
        "Ann|/people/person/spouse_s./people/marriage/spouse|Bob",
        "Ann|/people/person/employment_history./business/employment_tenure/company|Brix Foods",
        "Bob|/people/person/employment_history./business/employment_tenure/company|Acme Motors",
        "Brix Foods|/organization/organization/headquarters./location/mailing_address/citytown|Strelsau",
        "Acme Motors|/organization/organization/headquarters./location/mailing_address/citytown|Zenda",
        "Strelsau|/location/location/containedby|Ruritania",
        "Zenda|/location/location/containedby|Graustark",
    ]
    first = _first_of(subgraph_from_lines(tmp_path, "couples", lines, "Ann"),
                      {"Acme Motors": 100.0, "Brix Foods": 90.0, "Strelsau": 80.0, "Bob": 70.0, "Zenda": 50.0})

    assert first("where is the employer of something's spouse headquartered") == "Zenda"
    assert first("where does the company of the spouse of something have its headquarters") == "Zenda"
    assert first("which company is the employer of something's spouse") == "Acme Motors"  # the outer neighbour asked for


@pytest.mark.parametrize("probe, expected", [
    ("which city did something attend university in", ["university"]),
    ("in which city does something work for a company", ["company"]),
    ("which city was the person who founded something born in", ["person"]),
    ("which city was something born in", []),  # a verb reads like the answer's own role ("place of birth")
    ("which city is the capital of something's nation", []),  # the capital is the answer; the nation is named
    ("which sector does the company of the partner of something work in", []),  # named and outer neighbours have rules of their own
])
def test_the_other_nouns_of_a_question_are_read(probe, expected):
    from kgqa.methods.kgfr.asked_kind import other_nouns

    assert other_nouns(probe, asked_kind(probe)) == expected


@pytest.mark.parametrize("probe, expected", [
    ("which city did something attend university in", {"university"}),
    ("what city does something have a job at a firm in", {"job", "firm"}),
    ("which city was the person who founded something born in", {"person"}),
    ("in which city does the woman married to something live", {"woman"}),
    ("which nation is the firm employing something based in", {"firm"}),
    ("what country has the city where something was born", {"city"}),
    ("in which countries having the something, do the people speak something?", set()),  # the people are no neighbour of the language
    ("which city was something born in", set()),
])
def test_the_nouns_a_question_puts_beside_its_topic_are_read(probe, expected):
    from kgqa.methods.kgfr.asked_kind import beside_topic

    assert beside_topic(probe) == expected


def test_a_candidate_that_reads_as_another_noun_of_the_question_lies_on_the_way(tmp_path):
    """"Which city did X attend university in": not the university (a "location" as the city is, and an
    "institution"), and not X's own birthplace, which the university reaches only back through X."""
    first = _first_of(subgraph_from_lines(tmp_path, "jobs", EMPLOYERS, "Ann"), {"University of Zenda": 100.0, "Strelsau": 90.0, "Zenda": 50.0})

    assert first("which city did something attend university in") == "Zenda"
    assert first("what city did something study at a university in") == "Zenda"
    assert first("which university did something attend") == "University of Zenda"  # the noun asked for
    no_university = _first_of(subgraph_from_lines(tmp_path, "jobs", EMPLOYERS, "Ann"), {"Strelsau": 90.0, "Zenda": 50.0})
    assert no_university("which city was something born in") == "Strelsau"  # no other noun: her own city stays first


@pytest.mark.parametrize("typed", [False, True])
def test_who_asks_for_someone_named_with_capitals_not_a_common_noun(tmp_path, typed):
    """"Who employs X": the company, not X's occupation, however the scorer prefers it, with types or without; "who
    is X" may ask what X is, and a question that is no "who" is not read so; a KG of lower-case labels shows nothing."""
    lines = ["Ann|works_for|Acme", "Ann|occupation|carpenter", "Acme|headquartered_in|Zenda", "Ann|born_in|Zenda"]
    lines += ["Ann|type|person", "Acme|type|company", "carpenter|type|profession"] if typed else []
    sg = subgraph_from_lines(tmp_path, "named", lines, "Ann")
    first = _first_of(sg, {"carpenter": 100.0, "Acme": 50.0, "Zenda": 10.0})

    assert first("who employs something") == "Acme"
    assert first("who does something work for") == "Acme"
    assert first("who is something") == "carpenter"
    assert first("what does something do for a living") == "carpenter"
    (tmp_path / "lower").mkdir()
    lower = subgraph_from_lines(tmp_path / "lower", "lower", [line.lower() for line in lines], "ann")
    assert not wrong_kind(lower, "who employs something", TextEncoder()).any()
    (tmp_path / "odd").mkdir()  # lower case but one odd label: no KG of names with capitals
    odd = subgraph_from_lines(tmp_path / "odd", "odd", [line.lower() for line in lines] + ["zenda|near|Åland"], "ann")
    assert not wrong_kind(odd, "who employs something", TextEncoder()).any()


@pytest.mark.parametrize("typed", [False, True])
def test_which_people_asks_for_someone_named_with_capitals_as_who_does(tmp_path, typed):
    """"Which people work at the same company as X": a colleague, not X's occupation, however the scorer prefers it;
    asked for an occupation, the occupation stays."""
    lines = ["Ann|works_for|Acme", "Bob|works_for|Acme", "Ann|occupation|carpenter", "Ann|born_in|Zenda"]
    lines += ["Ann|type|person", "Bob|type|person", "carpenter|type|profession"] if typed else []
    first = _first_of(subgraph_from_lines(tmp_path, "named", lines, "Ann"), {"carpenter": 100.0, "Bob": 50.0})

    assert first("which people work at the same company as something") == "Bob"
    assert first("what person works with something") == "Bob"
    assert first("which occupation does something have") == "carpenter"


def test_who_is_the_topic_reads_as_a_description_but_not_its_possessive():
    from kgqa.methods.kgfr.asked_kind import where_is_neighbour
    from kgqa.methods.kgfr.asked_who import describes_topic

    assert describes_topic("who was something?")
    assert describes_topic("Who is something and what did he do")
    assert not describes_topic("who is something's wife")
    assert not describes_topic("who is the director of something")
    assert not describes_topic("who employs something")
    assert where_is_neighbour("where is the headquarters of something")
    assert where_is_neighbour("where is something's birthplace?")
    assert not where_is_neighbour("where is the employer of something located")
    assert not where_is_neighbour("where was the spouse of something born")


def test_in_a_kg_without_types_a_neighbour_named_by_its_links_own_word_need_only_be_an_entity(tmp_path):
    """"Where was the founder of X born": the founder shares no relation with the company X, but `founded_by` names
    him, and he is the subject of facts of his own, so the company's own city loses however the scorer prefers it.
    A director named so in a KB that states facts of films only (MetaQA's) is the subject of nothing, and is no
    neighbour on the way: "what genres does the director of X work in" keeps X's own genre."""
    lines = ["Acme|founded_by|Bob", "Acme|headquartered_in|Strelsau", "Bob|born_in|Zenda", "Zenda|located_in|Ruritania",
             "Strelsau|located_in|Ruritania"]
    sg = subgraph_from_lines(tmp_path, "founders", lines, "Acme")
    index = {label: i for i, label in enumerate(sg.node_labels)}
    scores = torch.zeros(sg.num_nodes)
    scores[index["Acme"]] = float("-inf")
    scores[index["Strelsau"]], scores[index["Zenda"]] = 100.0, 50.0

    def first(probe: str) -> str:
        ranked, _ = demote_wrong_kind(scores, sg, probe, TextEncoder())
        return sg.node_labels[int(torch.argmax(ranked))]
    assert first("where was the founder of something born") == "Zenda"
    assert first("where is the headquarters of something") == "Strelsau"  # the place its link names is what is asked

    (tmp_path / "films").mkdir()
    films = ["Kismet|directed_by|William Dieterle", "Kismet|has_genre|Drama", "Juarez|directed_by|William Dieterle", "Juarez|has_genre|History"]
    sg = subgraph_from_lines(tmp_path / "films", "films", films, "Kismet")
    mismatch = wrong_kind(sg, "what genres does the director of something work in", TextEncoder())
    assert not mismatch[list(sg.node_labels).index("Drama")]


def test_a_question_asked_yes_or_no_is_declined_unless_it_names_its_best_candidate(tmp_path):
    """No entity answers "was Kismet nominated for an oscar"; MetaQA asks "is X considered good" for the tag "good"."""
    from kgqa import Engine
    from kgqa.methods.kgfr.asked_kind import asks_yes_or_no, names

    assert asks_yes_or_no("was Kismet nominated for an oscar") and asks_yes_or_no("Does Kismet have a sequel?")
    assert not asks_yes_or_no("do you know who directed Kismet")  # a wh-word follows: asked for an entity
    assert not asks_yes_or_no("Is whistler mountain in Stephen Harper's district and where is that?")
    assert names("is Kismet considered good", "good") and not names("is Kismet considered goodish", "good")
    lines = ["Kismet|directed_by|William Dieterle", "Kismet|has_tags|good", "Kismet|release_year|1944", "Juarez|directed_by|William Dieterle"]
    with Engine(store_from_lines(tmp_path, "films", lines), "kgfr", kg="films") as engine:
        oscar = engine.ask("was Kismet nominated for an oscar", topics=["Kismet"])
        assert not oscar.answers and "yes or no" in oscar.declined
        assert engine.ask("was Kismet nominated for an oscar", topics=["Kismet"], decline_below=0).answers  # declining off: the ranking
        assert "yes or no" not in (engine.ask("who directed Kismet", topics=["Kismet"]).declined or "")


def test_a_question_asked_yes_or_no_of_two_entities_is_answered_yes_where_a_fact_of_the_relation_it_names_links_them(tmp_path):
    """"Was Kismet directed by William Dieterle": yes, with the fact; asked from either side. "Was Kismet written by
    William Dieterle": the KG links them only by `directed_by`, and holds `written_by` (for a film this subgraph does
    not reach): declined, naming the link. Two entities the KG does not link: declined."""
    from kgqa import Engine
    from kgqa.methods.kgfr.polar import subject_probe

    assert subject_probe("did Ronald Colman act in Kismet?", [{"query": "Kismet"}, {"query": "Ronald Colman"}]) == (1, "did something act in?")
    assert subject_probe("was Kismet released", [{"query": "Kismet"}]) is None
    lines = ["Kismet|directed_by|William Dieterle", "Kismet|release_year|1944", "Casablanca|written_by|Julius Epstein",
             "Casablanca|directed_by|Michael Curtiz"]
    with Engine(store_from_lines(tmp_path, "films", lines), "kgfr", kg="films") as engine:
        yes = engine.ask("was Kismet directed by William Dieterle", topics=["Kismet", "William Dieterle"])
        assert [a.text for a in yes.answers] == ["yes"] and yes.answers[0].match == "verdict" and not yes.declined
        assert yes.evidence.facts == ["Kismet —directed_by→ William Dieterle"]
        assert [a.text for a in engine.ask("did William Dieterle direct Kismet", topics=["William Dieterle", "Kismet"]).answers] == ["yes"]
        written = engine.ask("was Kismet written by William Dieterle", topics=["Kismet", "William Dieterle"])
        assert not written.answers and "directed by" in written.declined
        apart = engine.ask("was Kismet directed by Michael Curtiz", topics=["Kismet", "Michael Curtiz"])
        assert not apart.answers and "yes or no" in apart.declined


def test_a_candidate_reached_only_through_a_year_or_a_number_loses_unless_the_question_speaks_of_time(tmp_path):
    """Two people born the same year are not tied: Ruritania, reached from Ann only through 1980 and Bob, is no
    answer to "which country was Ann's husband born in", however the scorer prefers it; "who was born the same year
    as Ann" speaks of time, and reads through the year."""
    lines = ["Ann|birth_year|1980", "Bob|birth_year|1980", "Bob|citizen_of|Ruritania", "Ann|spouse_of|Carl", "Carl|born_in|Zenda",
             "Zenda|located_in|Graustark"]
    sg = subgraph_from_lines(tmp_path, "years", lines, "Ann")
    first = _first_of(sg, {"Ruritania": 100.0, "Bob": 90.0, "Graustark": 50.0, "Carl": 40.0})

    assert first("which country was something's husband born in") == "Graustark"
    bob = list(sg.node_labels).index("Bob")
    assert wrong_kind(sg, "who is something married to", TextEncoder())[bob]
    assert not wrong_kind(sg, "who was born the same year as something", TextEncoder())[bob]


def test_in_what_country_is_x_asks_what_x_is_in_not_what_is_in_x(tmp_path):
    """The university located in the city Zenda is no answer to "in what country is Zenda", however the scorer
    prefers it; "which universities are in Zenda" asks for what is in it."""
    from kgqa.methods.kgfr.asked_kind import topic_is_in

    lines = ["Zenda|located_in|Ruritania", "University of Zenda|located_in|Zenda", "Bob|born_in|Zenda", "Strelsau|located_in|Ruritania"]
    sg = subgraph_from_lines(tmp_path, "places", lines, "Zenda")
    index = {label: i for i, label in enumerate(sg.node_labels)}
    scores = torch.zeros(sg.num_nodes)
    scores[index["Zenda"]] = float("-inf")
    scores[index["University of Zenda"]], scores[index["Bob"]], scores[index["Ruritania"]] = 100.0, 90.0, 50.0

    def first(probe: str) -> str:
        ranked, _ = demote_wrong_kind(scores, sg, probe, TextEncoder())
        return sg.node_labels[int(torch.argmax(ranked))]
    assert first("in what country is something") == "Ruritania"
    assert first("which country is something located in") == "Ruritania"
    assert first("which universities are in something") == "University of Zenda"
    assert topic_is_in("which country is something in") and not topic_is_in("what language is something")


COLLEAGUES = [  # Ann works for Acme Motors, whose head office is in Zenda, Graustark; her colleague Carl is Ruritanian
    "Ann|/people/person/employment_history./business/employment_tenure/company|Acme Motors",
    "Carl|/people/person/employment_history./business/employment_tenure/company|Acme Motors",
    "Carl|/people/person/nationality|Ruritania",
    "Ann|/people/person/place_of_birth|Strelsau",  # so that the subgraph shows Ruritania as a country, near enough
    "Acme Motors|/organization/organization/headquarters./location/mailing_address/citytown|Zenda",
    "Zenda|/location/location/containedby|Graustark",
    "Graustark|/location/country/capital|Zenda",
    "Ruritania|/location/country/capital|Strelsau",
]


def test_what_is_asked_of_the_named_neighbour_is_not_reached_through_one_of_the_topics_kind(tmp_path):
    """"Which nation is X's employer headquartered in": the employer's country, not a colleague's nationality (one of
    X's kind, a person, between), however much the scorer prefers it; unless nothing of the asked kind lies past the
    employer any other way."""
    scores = {"Ruritania": 100.0, "Graustark": 50.0, "Carl": 80.0}
    first = _first_of(subgraph_from_lines(tmp_path, "jobs", COLLEAGUES, "Ann"), scores)
    assert first("which nation is something's employer headquartered in") == "Graustark"
    assert first("in which country is the company something works for based") == "Graustark"

    # a director's genres lie past his other films (of X's kind): where nothing of the asked kind lies past him any
    # other way, what lies past them stays
    films = ["Kismet|/film/film/directed_by|William Dieterle", "Juarez|/film/film/directed_by|William Dieterle",
             "Juarez|/film/film/genre|Drama", "William Dieterle|/people/person/place_of_birth|Ludwigshafen"]
    first = _first_of(subgraph_from_lines(tmp_path, "films", films, "Kismet"), {"Ludwigshafen": 100.0, "Drama": 50.0}, "Kismet")
    assert first("what genres does the director of something work in") == "Drama"


FOUNDERS = [  # Ann works for Acme Motors, founded by Carl, who was born in Zenda and founded Brix Foods too
    "Ann|works_for|Acme Motors",
    "Acme Motors|founded_by|Carl",
    "Brix Foods|founded_by|Carl",
    "Carl|born_in|Zenda",
    "Ann|type|person",
    "Carl|type|person",
    "Acme Motors|type|company",
    "Brix Foods|type|company",
    "Zenda|type|city",
]


def test_where_asks_for_nothing_typed_like_the_neighbour_it_names(tmp_path):
    """"Where was the founder of X's employer born": his birthplace, not the other firm he founded, however much the
    scorer prefers it; as in a KG without types, where it asks for nothing of the named neighbour's kind."""
    first = _first_of(subgraph_from_lines(tmp_path, "founders", FOUNDERS, "Ann"), {"Brix Foods": 100.0, "Zenda": 50.0})
    assert first("where was the founder of something's employer born") == "Zenda"
    assert first("which company did the founder of something's employer found too") == "Brix Foods"  # not asked where
