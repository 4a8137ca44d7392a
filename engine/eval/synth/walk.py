"""Relation paths sampled from a loaded KG, and their answers found by walking it (through the store
protocol only, so any store serves): a topic, then 1–3 steps, each one relation in one direction
(forward or inverse), every edge of it followed — no fan-out cap — so the answer set is exact."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from kgqa.core.store import GraphStore
from kgqa.core.types import Edge

UNCAPPED = 1 << 30  # λ for `expand`: no group is ever cut


@dataclass(frozen=True)
class Step:
    relation: str  # IRI
    label: str  # the relation's label in the store
    inverse: bool  # walked from object to subject

    @property
    def name(self) -> str:
        return self.label + ("⁻¹" if self.inverse else "")


@dataclass(frozen=True)
class Walk:
    """A sampled question's logical form. shape "path": answers = topics[0] · steps[0] · … ;
    shape "and": answers = (topics[0] · steps[0]) ∩ (topics[1] · steps[1])."""

    shape: str
    topics: tuple[str, ...]  # IRIs
    steps: tuple[Step, ...]
    answers: frozenset[str]  # IRIs
    excludes_topic: bool  # the walk came back to the topic's neighbourhood: the topic was taken out


def _groups(edges: Sequence[Edge]) -> dict[tuple[str, bool], set[str]]:
    """(relation, inverse) → the entities those edges reach."""
    out: dict[tuple[str, bool], set[str]] = {}
    for e in edges:
        out.setdefault((e.relation, e.inverse), set()).add(e.tail)
    return out


def follow(store: GraphStore, frontier: set[str], relation: str, inverse: bool) -> set[str]:
    """Every entity one step of `relation` (in that direction) from the frontier: the exact walk."""
    if not frontier:
        return set()
    reached: set[str] = set()
    for e in store.expand(sorted(frontier), (), UNCAPPED):
        if e.relation == relation and e.inverse == inverse:
            reached.add(e.tail)
    return reached


class Walker:
    """Samples walks from random topics; `max_middle` bounds the entities in a walk's middle (a walk
    through a hub is rejected rather than followed), `max_answers` the size of an answer set."""

    def __init__(self, store: GraphStore, entities: Sequence[str], relation_labels: dict[str, str], rng: random.Random,
                 max_middle: int = 30, max_answers: int = 20):
        self.store, self.entities, self.labels, self.rng = store, list(entities), relation_labels, rng
        self.max_middle, self.max_answers = max_middle, max_answers

    def _step(self, relation: str, inverse: bool) -> Step:
        return Step(relation, self.labels.get(relation, relation), inverse)

    def path(self, hops: int, topic: str | None = None, last: frozenset[str] | None = None) -> Walk | None:
        """A walk of `hops` steps; with `last`, its final step is one of those relations walked forwards
        (None where the walk's end has none)."""
        topic = topic or self.rng.choice(self.entities)
        frontier, steps = {topic}, []
        for hop in range(hops):
            groups = _groups(self.store.expand(sorted(frontier), (), UNCAPPED))
            if last is not None and hop == hops - 1:
                groups = {key: tails for key, tails in groups.items() if key[0] in last and not key[1]}
            if not groups:
                return None
            key = self.rng.choice(sorted(groups))
            steps.append(self._step(*key))
            frontier = groups[key]
            if len(frontier) > (self.max_middle if len(steps) < hops else UNCAPPED):
                return None
        came_back = topic in frontier
        answers = frozenset(frontier - {topic})
        if not answers or len(answers) > self.max_answers:
            return None
        return Walk("path", (topic,), tuple(steps), answers, came_back)

    def conjunction(self) -> Walk | None:
        """Two topics, one step each, meeting at the answers: "which film did X direct and Y write"."""
        first = self.path(1)
        if first is None or len(first.answers) < 2:
            return None
        pivot = self.rng.choice(sorted(first.answers))
        groups = _groups(self.store.expand([pivot], (), UNCAPPED))
        back = (first.steps[0].relation, not first.steps[0].inverse)
        options = [(key, tail) for key, tails in sorted(groups.items()) if key != back for tail in sorted(tails)]
        if not options:
            return None
        (relation, inverse), other = self.rng.choice(options)
        if other == first.topics[0]:
            return None
        second = self._step(relation, not inverse)  # the step from the other topic towards the answers
        answers = first.answers & follow(self.store, {other}, relation, not inverse)
        if not answers or answers == first.answers or len(answers) > self.max_answers:
            return None  # the second constraint must narrow the first
        return Walk("and", (first.topics[0], other), (first.steps[0], second), frozenset(answers), False)
