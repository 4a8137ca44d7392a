"""What GLOW reads from the store about the question's entity: its one-hop facts (the relational
context RC of eq. 1, at most a few per relation) and, where the KG has it, the asked fact itself.

RC leaves out the facts along the target relation e_t whose far end is one of the pattern's classes
(any of them could be the gold answer: §4 "excluding the gold answer (if present) from RC") and keeps
the others: Countries' `locatedin` also leads to a subregion, which is context, not the answer."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from kgqa.core.namespace import KGNamespace
from kgqa.core.store import GraphStore
from kgqa.core.types import Edge
from kgqa.methods.glow.patterns import Pattern

LAMBDA = 100  # a (subject, relation) group larger than this is not read (APP's cap): context, not a census


@dataclass(frozen=True)
class Fact:
    subject: str  # labels, as the prompt shows them
    relation: str
    object: str

    def as_tuple_text(self) -> str:
        return f'("{self.subject}", "{self.relation}", "{self.object}")'


def context_facts(store: GraphStore, entity: str, pattern: Pattern, per_relation: int = 3) -> tuple[list[Fact], list[Edge]]:
    """RC: the entity's facts in both directions except those along e_t to a class, the first
    `per_relation` of each (relation, direction) group by label; and the edges the entity has along
    the pattern's first step (for `stored_answers`)."""
    ns = KGNamespace(store.kg)
    target = ns.relation(pattern.target.relation)
    first = ns.relation(pattern.path[0].relation)
    classes = {ns.entity(c) for c in pattern.labels}
    edges = store.expand([entity], {entity}, LAMBDA)
    names = store.labels({entity} | {e.tail for e in edges} | {e.relation for e in edges})
    groups: dict[tuple[str, bool], list[Edge]] = defaultdict(list)
    along_first = []
    for edge in edges:
        if edge.relation == first and edge.inverse == (pattern.path[0].direction == "in"):
            along_first.append(edge)
        if edge.relation == target and edge.tail in classes:
            continue
        groups[(edge.relation, edge.inverse)].append(edge)
    facts = []
    for key in sorted(groups, key=lambda k: (names.get(k[0], k[0]), k[1])):
        for edge in sorted(groups[key], key=lambda e: names.get(e.tail, e.tail))[:per_relation]:
            head, tail = names.get(edge.head, edge.head), names.get(edge.tail, edge.tail)
            relation = names.get(edge.relation, edge.relation)
            facts.append(Fact(tail, relation, head) if edge.inverse else Fact(head, relation, tail))
    return facts, along_first


def stored_answers(store: GraphStore, pattern: Pattern, along_first: list[Edge]) -> list[str]:
    """IRIs the store already holds as the answer (the closed-world case): the ends of the pattern's
    path, one more store call for a two-step pattern."""
    ends = [e.tail for e in along_first]
    if pattern.hops == 1 or not ends:
        return ends
    ns = KGNamespace(store.kg)
    step = pattern.path[1]
    relation = ns.relation(step.relation)
    return sorted({e.tail for e in store.expand(ends, set(ends), LAMBDA)
                   if e.relation == relation and e.inverse == (step.direction == "in")})
