"""Core value types: entities, relations, triples.

Everything a store returns is addressed by IRI; the label is the original string a dataset used.
A relation seen from its object side is the same `Relation` with ``inverse=True`` (KGFR §III: every
fact (s, r, o) also stands as (o, r⁻¹, s)).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Entity:
    iri: str
    label: str


@dataclass(frozen=True, slots=True)
class Relation:
    iri: str
    label: str
    inverse: bool = False

    @property
    def name(self) -> str:
        """Readable name, with the inverse marked the way the KGFR paper writes it."""
        return f"{self.label}⁻¹" if self.inverse else self.label

    def reversed(self) -> "Relation":
        return Relation(self.iri, self.label, not self.inverse)


@dataclass(frozen=True, slots=True)
class Triple:
    """A fact as a dataset states it: original strings, before they become IRIs."""

    subject: str
    relation: str
    object: str


@dataclass(frozen=True, slots=True)
class Edge:
    """One directed edge of the retrieval graph, inverse edges included, in store IRIs."""

    head: str
    relation: str
    inverse: bool
    tail: str


@dataclass(frozen=True, slots=True)
class LinkedEntity:
    """A label the store resolved, with how it matched (``exact``, ``normalised``, or the linker's
    fallbacks ``fuzzy`` / ``embedding`` with their similarity in ``score``)."""

    query: str
    entity: Entity
    match: str
    score: float = 1.0
