"""The KG as the store sees it, for the text2query prompt: kgqa's data model in the store's language,
its relations (most used first) with a few example facts each, and how to name the topic entities.
Read once per store and KG (cached by the method's context), with the store's own read queries."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from kgqa.core.namespace import KGNamespace, RDFS_LABEL
from kgqa.core.store import GraphStore
from kgqa.retrieval.relation_text import relation_description
from kgqa.sparql import escape

MAX_RELATIONS = 60  # relations shown (most facts first): the prompt of a KG with thousands stays bounded
EXAMPLES = 2  # example facts per relation
_NOT_WORD = re.compile(r"\W+")


@dataclass(frozen=True)
class Schema:
    language: str  # "cypher" or "sparql"
    text: str  # the prompt's schema section
    params: dict[str, Any] = field(default_factory=dict)  # Cypher: $kg and one $r_… per relation (values never in the text)
    graphs: tuple[str, ...] = ()  # SPARQL: the KG's graphs, the only ones a query may read
    example: dict[str, str] = field(default_factory=dict)  # the prompt's worked example, from this KG's own first fact


def _example(relation_label: str, subject_label: str, topic: str, query: str) -> dict[str, str]:
    """A worked example over this KG (small models copy the example's graph and IRIs: an example over
    another KG teaches them to read a graph the checks then refuse)."""
    words = relation_description(relation_label, False)
    return {"example_question": f'what is "{subject_label}" {words}?', "example_topics": f'{topic} is "{subject_label}"',
            "example_query": query}


def is_cypher_store(store: GraphStore) -> bool:
    from kgqa.cypher.store import Neo4jStore

    return isinstance(store, Neo4jStore)


def relation_parameter(label: str) -> str:
    """"directed_by" → "r_directed_by", "/film/film/genre" → "r_film_film_genre": a Cypher parameter name."""
    return "r_" + (_NOT_WORD.sub("_", label).strip("_") or "relation")


def read_schema(store: GraphStore, examples: int = EXAMPLES) -> Schema:
    relations = sorted(store.relations(), key=lambda r: (-r.facts, r.label))[:MAX_RELATIONS]
    if is_cypher_store(store):
        return _cypher_schema(store, relations, examples)
    return _sparql_schema(store, relations, examples)


def _named(store: GraphStore, pairs: list[tuple[str, str]]) -> list[tuple[str, str, str, str]]:
    labels = store.labels({iri for pair in pairs for iri in pair})
    return [(s, labels.get(s, s), o, labels.get(o, o)) for s, o in pairs]


def _cypher_schema(store: Any, relations: list, examples: int) -> Schema:
    params: dict[str, Any] = {"kg": store.kg}
    lines, example = [], {}
    for relation in relations:
        name = relation_parameter(relation.label)
        while name in params and params[name] != relation.iri:
            name += "_"
        params[name] = relation.iri
        rows = store.read_rows("MATCH (s:Entity {kg: $kg})-[f:FACT {relation: $relation}]->(o:Entity) RETURN s.iri AS s, o.iri AS o LIMIT $n",
                               {"kg": store.kg, "relation": relation.iri, "n": examples}, examples)
        named = _named(store, [(r["s"], r["o"]) for r in rows])
        shown = "; ".join(f"({sl})-[{relation.label}]->({ol})" for _, sl, _, ol in named)
        if named and not example:
            example = _example(relation.label, named[0][1], "$topic0", "MATCH (t:Entity {kg: $kg, iri: $topic0})-[f:FACT]->(a:Entity) "
                               f"WHERE f.relation = ${name} RETURN DISTINCT a.iri AS answer")
        lines.append(f"${name} = {relation.label} ({relation.facts} facts), e.g. {shown}")
    text = ("Graph model: (:Entity {kg, iri, label})-[:FACT {relation}]->(:Entity). Every node of this KG has kg = $kg; "
            "a fact's relation is one of the parameters below, compared as f.relation = $r_name.\n"
            "Relations:\n" + "\n".join(lines))
    return Schema("cypher", text, params, example=example)


def _sparql_schema(store: Any, relations: list, examples: int) -> Schema:
    ns = KGNamespace(store.kg)
    data, meta = escape.iri(ns.data_graph), escape.iri(ns.meta_graph)
    lines, example = [], {}
    for relation in relations:
        relation_iri = escape.iri(relation.iri)
        rows = store.select_asked(f"SELECT ?s ?o WHERE {{ GRAPH {data} {{ ?s {relation_iri} ?o }} }} LIMIT {escape.integer(examples)}")
        named = _named(store, [(r["s"], r["o"]) for r in rows if "s" in r and "o" in r])
        shown = "; ".join(f"{escape.iri(s)} ({sl}) {relation_iri} {escape.iri(o)} ({ol})" for s, sl, o, ol in named)
        if named and not example:
            subject = escape.iri(named[0][0])
            example = _example(relation.label, named[0][1], subject,
                               f"SELECT DISTINCT ?answer WHERE {{ GRAPH {data} {{ {subject} {relation_iri} ?answer }} }}")
        lines.append(f"{relation_iri} = {relation.label} ({relation.facts} facts), e.g. {shown}")
    text = (f"Facts are triples <subject> <relation> <object> in GRAPH {data}; every entity's name is its "
            f"{escape.iri(RDFS_LABEL)} in GRAPH {meta}.\n"
            "Relations:\n" + "\n".join(lines))
    return Schema("sparql", text, graphs=store.asked_graphs, example=example)
