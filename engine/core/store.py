"""The store protocols.

`GraphStore` is everything the engine may do at question time: read-only, one round trip per call
(each call counts itself in `round_trips`). `GraphWriter` is used only by loaders.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from kgqa.core.namespace import local_name
from kgqa.core.types import Edge, LinkedEntity


@dataclass(frozen=True)
class RelationInfo:
    iri: str
    label: str
    facts: int


@dataclass(frozen=True)
class StoreCounts:
    facts: int
    entities: int
    relations: int


@dataclass(frozen=True)
class SourceNode:
    """One end of a fact as a loader read it: its IRI and the label to keep for it."""

    iri: str
    label: str | None

    @property
    def kept_label(self) -> str:
        """The label every store keeps for it: the one read, else a readable part of the IRI."""
        return self.label if self.label is not None else local_name(self.iri)


@dataclass(frozen=True)
class SourceFact:
    subject: SourceNode
    relation: SourceNode
    object: SourceNode


@dataclass
class LoadState:
    """What the store already holds of one source: committed records, and whether it finished."""

    source_key: str
    committed: int = 0
    complete: bool = False


@runtime_checkable
class GraphStore(Protocol):
    kg: str
    round_trips: int

    def resolve(self, labels: Sequence[str]) -> dict[str, list[LinkedEntity]]:
        """Entities whose label equals each given label, or failing that its normalised form."""
        ...

    def expand(self, frontier: Sequence[str], reached: Collection[str], lam: int) -> list[Edge]:
        """One APP hop (KGFR eq. 7) for the whole frontier: edges out of and into each frontier entity;
        groups of more than `lam` edges keep only those whose far end is in `reached`."""
        ...

    def labels(self, iris: Iterable[str]) -> dict[str, str]: ...

    def label_page(self, after: tuple[str, str] | None, limit: int) -> list[tuple[str, str]]:
        """Up to `limit` (entity IRI, label) pairs of the KG's entities, every label an entity has,
        in (IRI, label) order after the key `after`: for building local label indexes page by page."""
        ...

    def label_pairs(self, page: int = 5000) -> Iterator[tuple[str, str]]:
        """Every (entity IRI, label) pair of the KG's entities, in no set order, read in one pass where
        the store can (the embedded store's index, one streamed Neo4j query, one streamed SPARQL
        result; an endpoint that caps results is read with `label_page`, whose sorted pages make a
        large KG quadratic)."""
        ...

    def relations(self) -> list[RelationInfo]: ...

    def counts(self) -> StoreCounts: ...

    def close(self) -> None: ...


@runtime_checkable
class SearchesLabels(Protocol):
    """A store that can find the few labels a misspelt name may mean through a text index (Neo4j's
    full-text index, Virtuoso's free-text index, or kgqa's on-disk index beside an RDF store), never
    by reading every label of the KG. The linker's fallbacks use it."""

    def search_labels(self, texts: Sequence[str], any_word: bool = False, limit: int = 50) -> dict[str, list[tuple[str, str]]]:
        """For each text, up to `limit` (entity IRI, label) candidate pairs: labels that hold every
        word of the text, each as written or about one letter off (`any_word`: any of its words),
        labels of about the text's length first. The caller decides which candidates match.
        Raises `kgqa.core.errors.NoLabelIndex` where the KG has no such index."""
        ...


@runtime_checkable
class KnowsSubjectRelations(Protocol):
    """A store that says which relations entities are the subject of from its load-time fan-out
    counts (one row per (entity, relation), never the facts): where relation names give their
    subjects' types (Freebase's `/people/person/…`), the answer's kind reads them for candidates the
    subgraph shows only as objects."""

    def subject_relations(self, iris: Sequence[str]) -> dict[str, list[str]]:
        """Each given entity that is the subject of some fact → the labels of those facts' relations."""
        ...


@dataclass(frozen=True)
class WholeRetrieval:
    """An APP retrieval from one store call: every edge with the hop it was reached at, and the
    label of every node and relation in it."""

    edges: list[tuple[Edge, int]]
    labels: dict[str, str]


@runtime_checkable
class ExpandsAllHops(Protocol):
    """A store that runs every hop of an APP retrieval and fetches its labels itself, in fewer round
    trips or cheaper queries than hop by hop: Neo4j chains the hops inside one Cypher query; Virtuoso
    runs them in kgqa's stored procedure (without it, it brings labels along with the entities it
    reads). `retrieve` uses it where a store has it."""

    def expand_hops(self, topics: Sequence[str], hops: int, lam: int) -> WholeRetrieval:
        """The edges `expand` would give hop by hop from `topics`, each with its hop number."""
        ...


@runtime_checkable
class GraphWriter(Protocol):
    kg: str

    def load_state(self, source_key: str) -> LoadState: ...

    def write_batch(self, facts: Sequence[SourceFact], state: LoadState, committed: int) -> None:
        """Write facts and labels, then record `committed` source records as done: the record is
        written only after the facts it vouches for, so a crash can lose progress but never facts."""
        ...

    def add_labels(self, labels: Sequence[tuple[str, str]]) -> None:
        """Explicit labels for entities (rdfs:label and the like, from RDF sources)."""
        ...

    def finish(self, state: LoadState, recount: bool = True) -> None:
        """Recompute fan-out counts and relation statistics from the stored facts; mark the source done.
        `recount=False` (all but the last file of a load): leave the counts to a later finish and mark
        the KG's counts stale until then."""
        ...

    def counts_stale(self) -> bool:
        """Whether a finish without recount left the KG's counts behind its facts."""
        ...

    def fact_count(self) -> int: ...

    def close(self) -> None: ...
