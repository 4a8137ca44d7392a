"""What the question asks for (issue 46, part 2): the answer's kind read from the question's words
(kgfr/asked_kind.py) and each candidate's kind read from the KG, so that a candidate of the wrong kind
loses ("which country was X born in" is not answered with X's birth year; "when was X released" not
with its director).

Kinds a KG shows without a model:
- literals: a label that is a year, a date or a number (MetaQA's release years, Freebase dates; kgfr/literal_kind.py);
- types: where the KG has a type relation (rdf:type, "instance of", Wikidata's P31, Freebase's
  `/type/object/type`), the labels of a candidate's types, matched to the asked kind's words by the
  sentence encoder ("which film" against types "film", "person", "country"); where it has none but
  its relations are Freebase properties, the type each property's subjects have (the subject of
  `/people/person/nationality` is a person, of `/location/country/capital` a country) and what its
  last property calls its objects (a "company", a "profession", a "nationality"), for the
  candidates that are an end of some fact of the subgraph;
- roles: where the asked noun is what a relation's objects are called ("which actors" and
  `starred_actors`, "which genres" and `has_genre`; "what kind of films" and `has_genre` too), the
  candidates that are the object of no such relation in the subgraph (the films a "which actors has X
  directed" walks through, and those a "what kinds of films has X been in" walks through).
A KG without types or such words (the scale KG's `located_in` holds cities and countries alike)
tells a city from a country only through its paths, which the path reader reads
(kgfr/path_reader.py); this gate adds what a pooled or per-hop cosine cannot be sure of.
By literals and types, a candidate whose kind is unknown is never penalised; where the noun names a
relation's objects, every candidate that is none of them is. "Where" names no kind, but it never
asks for a person: a person-typed candidate loses. "Who" names no kind either, but in a KG without types
it never asks for a work: the subject of a fact whose relation names its object's agent (a film
`directed_by` someone) loses unless some fact of the subgraph has it as its object; in any KG of cased labels, nor for
a common noun ("carpenter": kgfr/asked_who.py). Where the question says nothing of time, a candidate reached only
through a year or a number is no answer (born the same year is no tie). The gate does nothing unless the subgraph
holds candidates of both the asked and another kind."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache, partial

import numpy as np
import torch

from kgqa.core.store import KnowsSubjectRelations
from kgqa.core.subgraph import Subgraph
from kgqa.methods.kgfr.asked_direction import VERB_FLOOR, wrong_direction
from kgqa.methods.kgfr.asked_kind import NAME_WORDS, WHO, AskedKind, asked_kind, asks_for_country, asks_for_it, beside_topic, clause_neighbour, named_neighbour, names_people, other_nouns, outer_neighbour, role_words, speaks_of_time, where_is_neighbour
from kgqa.methods.kgfr.literal_kind import fact_ends, literal_mismatch, literal_nodes, subjects
from kgqa.methods.kgfr.asked_who import describes_topic, uncased, works
from kgqa.methods.kgfr.reach import around, beyond, next_to, past
from kgqa.methods.kgfr.sideways import only_through_topics_kind
from kgqa.methods.kgfr.subject_kinds import of_kind, same_kind, subject_relations
from kgqa.methods.kgfr.type_sets import type_lists
from kgqa.retrieval.relation_text import agent_noun, freebase_object_word, freebase_subject_type, is_freebase_path, relation_words, singular

# instance typing only: a taxonomy's "is a" / "subclass of" (GO, UMLS) links classes, not answers to their kinds
TYPE_RELATION = re.compile(r"(?:^|[/#:_ ])(?:type|instance[_ ]of|P31)$", re.IGNORECASE)
TYPE_MATCH_FLOOR = 0.5  # the best typed candidate's type must read this much like the asked noun for types to count
# the asked noun must be (nearly) the word a relation's objects are called by: "actors" ~ "starred actors" 0.81,
# "genres" ~ "genre" 0.91 count; "company" ~ "industry" 0.71 or "films" ~ "director" 0.56 do not
ROLE_MATCH_FLOOR = 0.75
NAMED_FLOOR = 0.6  # a candidate's type must read this much like that noun to be taken for the neighbour ("institution" ~ "university" 0.73)
SAME_NOUN = 0.8  # a neighbour's noun this close to the asked noun is the asked one ("films" and "film")
STORE_TYPED = 50  # the best-scored candidates the store is asked the subject relations of (Freebase-named KGs)
STORE_TYPED_OBJECTS = 500  # and among this many best, those the subgraph shows as no fact's subject (a country reached by `containedby` alone)
TYPE_MATCH_SLACK = 0.15  # a typed candidate whose best type is this far below the best typed candidate's is of another kind

SubjectRelations = Callable[[], dict[int, list[str]]]  # node → labels of the relations it is the subject of
Typed = Callable[[], tuple[dict[int, list[str]], set[int]]]  # `node_types` of one subgraph, read once however many rules ask


def is_type_relation(label: str) -> bool:
    """rdf:type, "instance of", P31, Freebase's `/type/object/type`; not a Freebase property that names
    a kind of its subject (`…/educational_institution/school_type`, `…/administrative_area_type`: a
    school's type is "public university", and its schools are no classes)."""
    label = label.strip()
    if is_freebase_path(label):
        return label.rsplit("/", 1)[-1].lower() == "type"
    return bool(TYPE_RELATION.search(label))


def type_relations(sg: Subgraph) -> list[int]:
    """The subgraph's relations that type instances (`is_type_relation`)."""
    return [i for i, label in enumerate(sg.relation_labels) if is_type_relation(label)]


def node_types(sg: Subgraph, subject_relations: SubjectRelations | None = None) -> tuple[dict[int, list[str]], set[int]]:
    """Each node's type labels, from the subgraph's facts of a type relation, and the nodes that are types themselves; in
    a KG without a type relation, the types Freebase property names give their subjects (`freebase_subject_type`),
    read from the subgraph's facts and, for the nodes `subject_relations` knows (the store's, for the best
    candidates), from all of their facts; no node is a type then (neither: {}, set())."""
    typing = type_relations(sg)
    if not typing:
        return _domain_types(sg, subject_relations), set()
    typed, kinds = fact_ends(sg)
    out: dict[int, set[str]] = {}
    classes: set[int] = set()
    for e in np.flatnonzero(np.isin(np.asarray(sg.edge_type) // 2, typing)).tolist():
        node, kind = int(typed[e]), int(kinds[e])
        out.setdefault(node, set()).add(sg.node_labels[kind])
        classes.add(kind)
    return {node: sorted(types) for node, types in out.items()}, classes


def _domain_types(sg: Subgraph, subject_relations: SubjectRelations | None, objects: bool = True) -> dict[int, list[str]]:
    """The kinds Freebase property names give the ends of their facts: a subject the type they give their subjects
    ("person" for `/people/person/spouse_s./people/marriage/spouse`), an object what the last property calls its
    objects ("spouse"; "company" for `…/employment_tenure/company`, "profession", "director" for
    `/film/film/directed_by`; not with `objects=False`): from the subgraph's facts, and subject types from the
    relations `subject_relations` gives (node → relation labels). Objects count because many answers are only ever
    objects: a profession or an industry has no subject type, and was never demoted ("in which country is the company
    X works for based" answered "surgeon"; measured in the README, "What a Freebase property calls its objects")."""
    domains = [freebase_subject_type(label) for label in sg.relation_labels]
    if sg.num_edges == 0 or not any(domains):
        return {}
    ranges = [_freebase_object_role(label) for label in sg.relation_labels]
    relation = np.asarray(sg.edge_type, dtype=np.int64) // 2
    subject, obj = fact_ends(sg)
    sides = ((domains, subject), (ranges, obj)) if objects else ((domains, subject),)
    number = {word: i for i, word in enumerate(sorted({word for words, _ in sides for word in words if word}))}
    pairs = []
    for words, ends in sides:
        edge_word = np.asarray([number[w] if w else -1 for w in words], dtype=np.int64)[relation]
        pairs.append(ends[edge_word >= 0].astype(np.int64) * len(number) + edge_word[edge_word >= 0])
    out = type_lists(np.concatenate(pairs), list(number), sg.num_nodes)
    for node, labels in (subject_relations() if subject_relations else {}).items():
        if stored := {t for label in labels if (t := freebase_subject_type(label))}:
            out[node] = sorted(stored.union(out.get(node, ())))
    return out


def _type_mismatch(sg: Subgraph, noun: str, encoder, typed: Typed) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Typed nodes whose best type reads less like the asked noun than the best typed node's does, and the types
    themselves (a class is no answer to "which film")."""
    mismatch = np.zeros(sg.num_nodes, dtype=bool)
    types, classes = typed()
    if not types:
        return mismatch
    best = _reads_as(types, noun, encoder)
    top = max(best.values())
    if top < TYPE_MATCH_FLOOR:  # no type of the subgraph is what the question asks for: the types say nothing
        return mismatch
    for node, value in best.items():
        mismatch[node] = value < top - TYPE_MATCH_SLACK
    mismatch[list(classes - set(types))] = True
    return mismatch


def _own_kind(sg: Subgraph, noun: str, encoder, subject_relations: SubjectRelations | None) -> np.ndarray:  # type: ignore[no-untyped-def]
    """The nodes whose own properties say they are what the question asks for: a type their Freebase properties give
    their subjects (the subgraph's facts and the store's) that reads like the noun (SAME_NOUN): the Soviet Union, subject
    of `/location/country/…`, is a country whatever it is the object of here; not what other facts call a node ("region"
    for the object of `…/region`). Per relation: `_domain_types(objects=False)`'s nodes, ~14 ms a call sooner."""
    own = np.zeros(sg.num_nodes, dtype=bool)
    domains = [freebase_subject_type(label) for label in sg.relation_labels]
    if sg.num_edges == 0 or not any(domains):
        return own
    stored = {node: {t for label in labels if (t := freebase_subject_type(label))} for node, labels in (subject_relations() if subject_relations else {}).items()}
    names = sorted({word for word in domains if word} | {t for types in stored.values() for t in types})
    alike = {name for name, value in _similarity(names, noun, encoder).items() if value >= SAME_NOUN}
    relation_alike = np.asarray([word in alike for word in domains], dtype=bool)
    subject, _ = fact_ends(sg)
    own[subject[relation_alike[np.asarray(sg.edge_type, dtype=np.int64) // 2]]] = True
    for node, types in stored.items():
        own[node] |= bool(types & alike)
    return own


def _persons(sg: Subgraph, encoder, typed: Typed) -> np.ndarray:  # type: ignore[no-untyped-def]
    """The typed nodes that are people: a type that reads as "person" (ROLE_MATCH_FLOOR) more than any of its types reads
    as "place". "Where" may ask for a city, a country, a university or a company ("where did X study / work"), never for
    a person: the founder is no answer to "where was the founder of X born"."""
    mismatch = np.zeros(sg.num_nodes, dtype=bool)
    types, _ = typed()
    if not types:
        return mismatch
    person, place = _reads_as(types, "person", encoder), _reads_as(types, "place", encoder)
    for node in types:
        mismatch[node] = person[node] >= ROLE_MATCH_FLOOR and place[node] < person[node]
    return mismatch


def _similarity(names: list[str], noun: str, encoder) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """Each name → how much it reads like `noun` (cosine; the encoder caches texts)."""
    return dict(zip(names, (encoder.encode(names) @ encoder.encode([noun])[0]).tolist()))


def _reads_as(types: dict[int, list[str]], noun: str, encoder) -> dict[int, float]:  # type: ignore[no-untyped-def]
    """Each typed node → how much its best type reads like `noun` (once per list: nodes of one kind share theirs)."""
    lists = {id(ts): ts for ts in types.values()}
    similarity = _similarity(sorted({t for ts in lists.values() for t in ts}), noun, encoder)
    best = {key: max(similarity[t] for t in ts) for key, ts in lists.items()}
    return {node: best[id(ts)] for node, ts in types.items()}


def object_role(label: str) -> str:
    """What a relation's objects are called: "director" for `directed_by`, "genre" for `has_genre`,
    "starred actors", "release year"; a relation of no such word keeps its words ("located in")."""
    kind, words = relation_words(label)
    return (agent_noun(words) or words) if kind == "passive" else words


def _freebase_object_role(label: str) -> str | None:
    """What a Freebase property calls its objects ("company" for `…/employment_tenure/company`); None off Freebase."""
    return object_role(word) if (word := freebase_object_word(label)) else None


def _role_mismatch(sg: Subgraph, nouns: list[str], encoder) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Where the asked noun (or, for a kind of it, its genre: `role_words`) is what some relation's objects are called
    ("which actors" and `starred_actors`), in both numbers ("companies" reads like `industry` 0.76, "company" 0.71;
    "actors" like `starred_actors` 0.81, "actor" 0.78): the nodes that are the object of no such relation in the subgraph."""
    mismatch = np.zeros(sg.num_nodes, dtype=bool)
    if sg.num_edges == 0:
        return mismatch
    roles = [object_role(label) for label in sg.relation_labels]
    forms = encoder.encode([form for noun in nouns for form in (noun, singular(noun))])
    similarity = (encoder.encode(roles) @ forms.T).reshape(len(roles), len(nouns), 2).min(axis=2).max(axis=1)
    top = float(similarity.max())
    if top < ROLE_MATCH_FLOOR:
        return mismatch
    matched = np.flatnonzero(similarity >= top - TYPE_MATCH_SLACK)
    playing = fact_ends(sg)[1][np.isin(np.asarray(sg.edge_type) // 2, matched)]
    mismatch[:] = True
    mismatch[playing] = False
    return mismatch


def _neighbour_mismatch(sg: Subgraph, asked: AskedKind, probe: str, encoder, typed: Typed) -> np.ndarray:  # type: ignore[no-untyped-def]
    """The typed nodes that read as the neighbour the question names on the way to its answer (the company, for "who
    founded the company X works for"): one hop from a topic, their best type reads like that noun (NAMED_FLOOR) and
    more than like the asked noun; where some do, the topic's other one-hop neighbours too, unless the named one leads
    to them, and every node the named ones do not reach within the subgraph's hops less one, not through a topic
    (`beyond`); where it names one past that one too ("the employer of X's husband"), that one likewise
    (`_outer_mismatch`). Nothing where the question names no neighbour, or names the asked kind again ("which films
    share a director with the film X"). In a KG without types a clause of the topic names one too ("the people X
    knows", "the city where X was born": `clause_neighbour`), linked by the relation its verb reads like. "Where is the
    headquarters of X" asks for the neighbour itself where its link's word is the noun's own (ROLE_MATCH_FLOOR); any
    other "where" (or "which country") asks for nothing of the named one's kind (`same_kind`; with types, nothing typed
    like its noun, and "which country" is read by the types)."""
    mismatch = np.zeros(sg.num_nodes, dtype=bool)
    noun, verb = named_neighbour(probe), None
    clause = clause_neighbour(probe)
    if clause is not None and noun in (None, clause[0]) and not typed()[0]:
        noun, verb = clause
    if noun is None or asks_for_it(probe, asked):
        return mismatch
    if asked.noun is not None and asked.noun not in NAME_WORDS:
        named, wanted = encoder.encode([noun, asked.noun])
        if float(named @ wanted) >= SAME_NOUN:
            return mismatch
    types, _ = typed()
    like_named = _linked_as(sg, noun, encoder, types, verb) or (_reads_as(types, noun, encoder) if types else {})
    if not like_named or (where_is_neighbour(probe) and max(like_named.values()) >= ROLE_MATCH_FLOOR):  # the place its link names
        return mismatch
    like_asked = _reads_as(types, asked.noun, encoder) if asked.noun else {}
    for node, value in like_named.items():  # "X's N" is one hop from X: what lies farther is not it ("industry" ~ "company" 0.71)
        mismatch[node] = sg.node_hop[node] == 1 and value >= NAMED_FLOOR and value > like_asked.get(node, -1.0)
    if mismatch.any():
        named, through = np.flatnonzero(mismatch), next_to(sg, mismatch)
        mismatch |= past(sg, mismatch, through)
        if (asked.place or asks_for_country(probe)) and not types:  # "where", "which country": nothing of the named one's kind
            mismatch |= same_kind(sg, named)
        elif asked.place:  # nor, in a typed KG, one typed like the named noun ("the founder of X's employer": his other firm)
            mismatch[[node for node, value in _reads_as(types, noun, encoder).items() if value >= NAMED_FLOOR]] = True
        mismatch |= only_through_topics_kind(sg, named, types, like_asked, mismatch, TYPE_MATCH_FLOOR)  # not a colleague's nationality
        if (outer := outer_neighbour(probe)) is not None:  # "the employer of X's husband": the husband's employer is on the way too
            mismatch |= _outer_mismatch(sg, through, _reads_as(types, outer, encoder), like_asked)
    return mismatch


def _other_mismatch(sg: Subgraph, asked: AskedKind, probe: str, encoder, already: np.ndarray, typed: Typed) -> np.ndarray:  # type: ignore[no-untyped-def]
    """The typed nodes that read as another noun of the question (`other_nouns`; NAMED_FLOOR) more than as the asked one:
    the university of "which city did X attend university in", a "location" as the city is (0.65 to "city", within
    TYPE_MATCH_SLACK of the city's "citytown", 0.79) but an "educational institution" too (0.75 to "university").
    Nothing unless some candidate that reads like the asked noun is left (by these and the `already` demoted): in
    "what neighbor of X has a country calling code of 31" the country is no noun on the way."""
    mismatch = np.zeros(sg.num_nodes, dtype=bool)
    words = other_nouns(probe, asked)
    types, _ = typed() if words else ({}, set())
    like_asked = _reads_as(types, asked.noun, encoder) if types else {}
    if not like_asked or (top := max(like_asked.values())) < TYPE_MATCH_FLOOR:
        return mismatch
    vectors = encoder.encode([asked.noun, *words])
    neighbours = np.zeros_like(mismatch)
    beside = beside_topic(probe) if named_neighbour(probe) is None else set()  # "the company X's spouse works for" is not X's own
    for word in (w for w, v in zip(words, vectors[1:]) if float(v @ vectors[0]) < NAMED_FLOOR):  # "location" in "what place …" is none
        for node, value in _reads_as(types, word, encoder).items():  # on the way: something lies past it
            if sg.node_hop[node] < sg.hops and value >= NAMED_FLOOR and value > like_asked[node]:
                mismatch[node] = True
                neighbours[node] |= word in beside and sg.node_hop[node] == 1  # "X attended university": past it, as a named one
    if neighbours.any():
        mismatch |= past(sg, neighbours, next_to(sg, neighbours))
    out = mismatch | already
    out[np.asarray(sg.topics, dtype=np.int64)] = True
    kept = any(not out[node] and value >= top - TYPE_MATCH_SLACK for node, value in like_asked.items())
    return mismatch if kept else np.zeros_like(mismatch)


def _linked_as(sg: Subgraph, noun: str, encoder, types: dict[int, list[str]], verb: str | None = None) -> dict[int, float]:  # type: ignore[no-untyped-def]
    """The topics' one-hop neighbours → how much a relation linking them to a topic reads like `noun` (its object word): "X's wife"
    is the one X is married to, not a friend another marriage makes a spouse. From the topic's side, else (a KG states a
    marriage once) from a neighbour sharing a type with it: not a job title whose `…/company` is the bank X. In a KG without
    types, only a neighbour of the topic's kind or, where the link's word is the noun's own (ROLE_MATCH_FLOOR), an entity,
    from either side (`of_kind`: a spouse is born somewhere as X is, X's birthplace is located somewhere; an occupation,
    whose `occupation` reads like "employer" 0.65, is the subject of nothing), or one linked by a relation whose words
    read like the clause's `verb` that names it (VERB_FLOOR: "knows" and `knows` 1.0, "born" and `born_in` 0.85)."""
    roles = [_freebase_object_role(label) or object_role(label) for label in sg.relation_labels]
    reading = encoder.encode(roles) @ encoder.encode([noun])[0]
    subject, obj = fact_ends(sg)
    relation = np.asarray(sg.edge_type) // 2
    is_topic = np.zeros(sg.num_nodes, dtype=bool)
    is_topic[np.asarray(sg.topics, dtype=np.int64)] = True
    own = None if types else subject_relations(sg, np.unique(np.concatenate([subject[is_topic[obj]], obj[is_topic[subject]], sg.topics])))
    said = encoder.encode([relation_words(label)[1] for label in sg.relation_labels]) @ encoder.encode([verb])[0] if verb and own is not None else None
    for near, far, from_neighbour in ((subject, obj, False), (obj, subject, True)):
        edges = np.flatnonzero(is_topic[near] & ~is_topic[far])
        value = reading[relation[edges]]
        if own is not None:
            value = np.where(of_kind(own, near[edges], far[edges], relation[edges], value >= ROLE_MATCH_FLOOR), value, -np.inf)
            if said is not None:
                value = np.maximum(value, np.where(said[relation[edges]] >= VERB_FLOOR, said[relation[edges]], -np.inf))
            edges, value = edges[value > -np.inf], value[value > -np.inf]
        elif from_neighbour:  # only a neighbour that shares a type with its topic
            keep = [bool(set(types.get(int(far[e]), ())) & set(types.get(int(near[e]), ()))) for e in edges.tolist()]
            edges, value = edges[keep], value[keep]
        best = np.full(sg.num_nodes, -np.inf)
        np.maximum.at(best, far[edges], value)
        if edges.size and best.max() >= NAMED_FLOOR:
            return {int(node): float(best[node]) for node in np.unique(far[edges])}
    return {}


def _outer_mismatch(sg: Subgraph, near_named: np.ndarray, like_outer: dict[int, float], like_asked: dict[int, float]) -> np.ndarray:
    """The nodes `near_named` (next to the named neighbours), two hops out, whose type reads like the outer noun (NAMED_FLOOR, and more
    than like the asked noun), and every node they do not reach within hops − 2, not through a topic."""
    outer = np.zeros(sg.num_nodes, dtype=bool)
    for node, value in like_outer.items():
        outer[node] = near_named[node] and sg.node_hop[node] == 2 and value >= NAMED_FLOOR and value > like_asked.get(node, -1.0)
    if not outer.any():
        return outer
    return outer | ~beyond(sg, np.flatnonzero(outer), max(1, sg.hops - 2))


def wrong_kind(sg: Subgraph, probe: str, encoder, subject_relations: SubjectRelations | None = None) -> np.ndarray:  # type: ignore[no-untyped-def]
    """The nodes whose kind is not the one the question asks for (a bool per node; all False when the question names no
    kind or the subgraph shows none). `subject_relations`: called only when types are read, the relations some nodes
    are the subject of beyond the subgraph (`store_subject_relations`)."""
    asked = asked_kind(probe)
    mismatch = np.zeros(sg.num_nodes, dtype=bool)
    typed = cache(partial(node_types, sg, subject_relations))  # ~0.5 s for a 3-hop FB15k-237 subgraph of 245k edges
    if asked.literal is not None:
        mismatch |= literal_mismatch(sg, asked.literal)
    if asked.noun and asked.literal == "entity" and encoder is not None:
        by_type = partial(_type_mismatch, sg, asked.noun, encoder, typed)
        by_role = partial(_role_mismatch, sg, role_words(asked.noun, asked.category), encoder)
        # a KG's own type facts say most; without them, a noun that names a relation's objects ("which
        # industry" and `industry`) says more than the types Freebase property names give (all companies
        # are "business operation"s, and an industry, only ever an object, has none), except for a
        # candidate whose own properties make it one: the subgraph may hold none of its facts of that
        # role ("what country was Stalin in charge of": the Soviet Union, the object of no `…/country` fact here)
        if type_relations(sg):
            found = by_type()
            mismatch |= found if found.any() else by_role()
        else:
            found = by_role()
            mismatch |= found & ~_own_kind(sg, asked.noun, encoder, subject_relations) if found.any() else by_type()
    elif asked.place and encoder is not None:
        mismatch |= _persons(sg, encoder, typed)
    elif asked.literal == "entity" and asked.noun is None and WHO.search(probe.lower()):
        mismatch |= works(sg) if not node_types(sg)[0] else mismatch
        mismatch |= uncased(sg) if not describes_topic(probe) else mismatch  # a common noun is no one (kgfr/asked_who.py)
    if names_people(asked):  # "which people …" asks for someone, as "who" does
        mismatch |= uncased(sg)
    if asked.literal == "entity" and not speaks_of_time(probe):  # born the same year as X is no tie to X
        mismatch |= ~around(sg, np.asarray([k in ("time", "number") for k in literal_nodes(sg)], dtype=bool), sg.hops)
    if encoder is not None:
        mismatch |= wrong_direction(sg, probe, encoder)
    if asked.literal == "entity" and encoder is not None:
        mismatch |= _neighbour_mismatch(sg, asked, probe, encoder, typed)
        if asked.noun is not None:
            mismatch |= _other_mismatch(sg, asked, probe, encoder, mismatch, typed)
    return mismatch


def store_subject_relations(store: object, sg: Subgraph, scores: torch.Tensor) -> SubjectRelations | None:
    """For a KG whose relations are Freebase properties, in a store that knows its entities' subject relations
    (`KnowsSubjectRelations`): the relations the STORE_TYPED best-scored candidates are the subject of, and those
    of the STORE_TYPED_OBJECTS best that are the subject of no fact of the subgraph, asked in one round trip when
    first needed. A candidate reached at the subgraph's last hop shows only the facts that reached it, so the
    subgraph alone leaves it untyped, or typed by what those facts call their objects only (a country reached
    through `containedby` and `nationality`): the countries the subgraph happened to show as the subject of
    `/location/country/capital` were the only ones read as countries, and one of them won "in what nation was
    the spouse of X born" where the KG's scores had no idea (measured in the README)."""
    if not isinstance(store, KnowsSubjectRelations) or not any(map(is_freebase_path, sg.relation_labels)):
        return None

    @cache  # one round trip however many kinds are read
    def ask() -> dict[int, list[str]]:
        finite = torch.isfinite(scores)
        best = [int(i) for i in torch.argsort(scores, descending=True)[:STORE_TYPED_OBJECTS] if finite[i]]
        subject = subjects(sg)
        top = best[:STORE_TYPED] + [i for i in best[STORE_TYPED:] if not subject[i]]
        found = store.subject_relations([sg.nodes[i] for i in top])
        return {i: found[sg.nodes[i]] for i in top if sg.nodes[i] in found}

    return ask


def demote_wrong_kind(scores: torch.Tensor, sg: Subgraph, probe: str, encoder, store: object = None) -> tuple[torch.Tensor, int]:  # type: ignore[no-untyped-def]
    """Scores where every candidate of the wrong kind ranks below every other (their order kept among themselves), and
    how many were demoted. Nothing moves when every finite candidate is of the wrong kind (the question's kind was
    misread, or the subgraph holds none of it). `store`: where it knows its entities' subject relations, the best
    candidates are typed from it too."""
    finite = torch.isfinite(scores)
    mismatch = torch.from_numpy(wrong_kind(sg, probe, encoder, store_subject_relations(store, sg, scores))) & finite
    if not mismatch.any() or bool((finite & ~mismatch).sum() == 0):
        return scores, 0
    spread = float(scores[finite].max() - scores[finite].min()) + 1.0
    return torch.where(mismatch, scores - spread, scores), int(mismatch.sum())
