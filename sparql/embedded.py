"""The embedded store: pyoxigraph on disk (RocksDB) or in memory. The zero-set-up default.

Reads go through the SPARQL in this folder's *.rq files; the engine opens on-disk stores read-only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path

import pyoxigraph as ox

from kgqa.errors import StoreError, UnknownKG
from kgqa.labels import normalise_label
from kgqa.namespace import RDF_TYPE, RDFS_LABEL, KGNamespace, local_name, vocab
from kgqa.sparql import escape
from kgqa.sparql.queries import render
from kgqa.store import LoadState, RelationInfo, SourceFact, StoreCounts
from kgqa.types import Edge, Entity, LinkedEntity

XSD_INTEGER = ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer")
XSD_BOOLEAN = ox.NamedNode("http://www.w3.org/2001/XMLSchema#boolean")
_LABEL = ox.NamedNode(RDFS_LABEL)
_TYPE = ox.NamedNode(RDF_TYPE)
_NORMALISED = ox.NamedNode(vocab("normalisedLabel"))
_COMMITTED = ox.NamedNode(vocab("committedRecords"))
_COMPLETE = ox.NamedNode(vocab("complete"))


def _int(term: ox.Literal) -> int:
    return int(term.value)


class _Oxigraph:
    def __init__(self, store: ox.Store, kg: str):
        self._store = store
        self.ns = KGNamespace(kg)
        self.kg = kg
        self.round_trips = 0
        self._meta = escape.iri(self.ns.meta_graph)
        self._data = escape.iri(self.ns.data_graph)
        self._fanout = escape.iri(self.ns.fanout_graph)
        self._fanin = escape.iri(self.ns.fanin_graph)

    def _select(self, name: str, **terms: escape.SparqlTerm) -> list[ox.QuerySolution]:
        self.round_trips += 1
        return list(self._store.query(render(name, meta=self._meta, data=self._data, fanout=self._fanout, fanin=self._fanin, **terms)))

    def close(self) -> None:
        # pyoxigraph frees the RocksDB handle with the object; drop our reference.
        self._store = None  # type: ignore[assignment]


def list_kgs(store: ox.Store) -> list[str]:
    return sorted(str(row["name"].value) for row in store.query(render("kgs")))


class EmbeddedStore(_Oxigraph):
    """Read side (`kgqa.store.GraphStore`) over a pyoxigraph store."""

    @classmethod
    def open(cls, path: str | Path, kg: str | None = None) -> "EmbeddedStore":
        path = Path(path)
        if not (path / "CURRENT").exists():
            raise StoreError(f"no embedded store at {path} (load a KG into it first: kgqa load … --store oxigraph://{path})")
        store = ox.Store.read_only(str(path))
        return cls(store, _pick_kg(store, kg, str(path)))

    def resolve(self, labels: Sequence[str]) -> dict[str, list[LinkedEntity]]:
        found: dict[str, list[LinkedEntity]] = {label: [] for label in labels}
        if not labels:
            return found
        for row in self._select("resolve_exact", labels=escape.SparqlTerm(" ".join(escape.literal(x) for x in set(labels)))):
            label = row["label"].value
            found[label].append(LinkedEntity(label, Entity(row["e"].value, label), "exact"))
        missing = [label for label, hits in found.items() if not hits and normalise_label(label)]
        if missing:
            keys = {normalise_label(label) for label in missing}
            matches: dict[str, set[tuple[str, str]]] = {}
            for row in self._select("resolve_normalised", keys=escape.SparqlTerm(" ".join(escape.literal(k) for k in keys))):
                matches.setdefault(row["key"].value, set()).add((row["e"].value, row["label"].value))
            for label in missing:
                for iri, stored in sorted(matches.get(normalise_label(label), ())):
                    found[label].append(LinkedEntity(label, Entity(iri, stored), "normalised"))
        for label in found:
            found[label].sort(key=lambda hit: hit.entity.iri)
        return found

    def expand(self, frontier: Sequence[str], reached: Collection[str], lam: int) -> list[Edge]:
        if not frontier:
            return []
        rows = self._select(
            "expand_hop",
            frontier=escape.iri_list(frontier),
            reached=escape.iri_list(reached),
            scan_limit=escape.integer(max(lam, len(reached))),
        )
        # Groups over λ that were read whole (λ < n <= scan_limit) keep only edges into `reached`.
        return [
            Edge(r["s"].value, r["r"].value, r["inv"].value == "true", r["o"].value)
            for r in rows
            if int(r["n"].value) <= lam or r["o"].value in reached
        ]

    def labels(self, iris: Iterable[str]) -> dict[str, str]:
        iris = list(dict.fromkeys(iris))
        out = {iri: local_name(iri) for iri in iris}
        if iris:
            for row in self._select("labels", entities=escape.iri_list(iris)):
                out[row["e"].value] = row["label"].value
        return out

    def relations(self) -> list[RelationInfo]:
        return [RelationInfo(r["r"].value, r["label"].value, _int(r["facts"])) for r in self._select("relations")]

    def counts(self) -> StoreCounts:
        facts = _int(self._select("count_facts")[0]["n"])
        entities = _int(self._select("count_entities")[0]["n"])
        return StoreCounts(facts=facts, entities=entities, relations=len(self.relations()))

    # --- baselines for bench/retrieval.py; not used by the engine ---
    def expand_uncapped(self, frontier: Sequence[str]) -> list[Edge]:
        if not frontier:
            return []
        rows = self._select("expand_all", frontier=escape.iri_list(frontier))
        return [Edge(r["s"].value, r["r"].value, r["inv"].value == "true", r["o"].value) for r in rows]

    def relations_of(self, entity: str) -> list[tuple[str, bool]]:
        return [(r["r"].value, r["inv"].value == "true") for r in self._select("relations_of", entity=escape.iri(entity))]

    def neighbours(self, entity: str, relation: str, inverse: bool) -> list[str]:
        name = "neighbours_in" if inverse else "neighbours_out"
        return [r["o"].value for r in self._select(name, entity=escape.iri(entity), relation=escape.iri(relation))]


def _pick_kg(store: ox.Store, kg: str | None, where: str) -> str:
    kgs = list_kgs(store)
    if kg is None:
        if len(kgs) == 1:
            return kgs[0]
        if not kgs:
            raise UnknownKG(f"the store at {where} holds no KG yet")
        raise UnknownKG(f"the store at {where} holds several KGs ({', '.join(kgs)}); name one with --kg")
    if kg not in kgs:
        raise UnknownKG(f"no KG named {kg!r} in the store at {where}; it holds: {', '.join(kgs) or 'none'}")
    return kg


class EmbeddedWriter(_Oxigraph):
    """Write side (`kgqa.store.GraphWriter`), used only by loaders."""

    @classmethod
    def open(cls, path: str | Path | None, kg: str) -> "EmbeddedWriter":
        store = ox.Store(str(path)) if path is not None else ox.Store()
        writer = cls(store, kg)
        writer._register()
        return writer

    @property
    def store(self) -> ox.Store:
        return self._store

    def reader(self) -> EmbeddedStore:
        """A reader over the same store (for in-memory stores, which cannot be reopened)."""
        return EmbeddedStore(self._store, self.kg)

    def _register(self) -> None:
        meta = ox.NamedNode(self.ns.meta_graph)
        kg = ox.NamedNode(self.ns.iri)
        self._store.extend(
            [
                ox.Quad(kg, _TYPE, ox.NamedNode(vocab("KnowledgeGraph")), meta),
                ox.Quad(kg, ox.NamedNode(vocab("name")), ox.Literal(self.kg), meta),
            ]
        )

    def _record(self, source_key: str) -> ox.NamedNode:
        return ox.NamedNode(self.ns.load_record(hashlib.sha256(source_key.encode()).hexdigest()[:32]))

    def load_state(self, source_key: str) -> LoadState:
        record = self._record(source_key)
        meta = ox.NamedNode(self.ns.meta_graph)
        committed = [_int(q.object) for q in self._store.quads_for_pattern(record, _COMMITTED, None, meta)]
        complete = any(True for _ in self._store.quads_for_pattern(record, _COMPLETE, None, meta))
        return LoadState(source_key, max(committed, default=0), complete)

    def write_batch(self, facts: Sequence[SourceFact], state: LoadState, committed: int) -> None:
        data = ox.NamedNode(self.ns.data_graph)
        meta = ox.NamedNode(self.ns.meta_graph)
        quads: list[ox.Quad] = []
        labelled: set[str] = set()
        for fact in facts:
            s, r, o = (ox.NamedNode(n.iri) for n in (fact.subject, fact.relation, fact.object))
            quads.append(ox.Quad(s, r, o, data))
            for node, term in ((fact.subject, s), (fact.object, o)):
                if node.iri in labelled:
                    continue
                labelled.add(node.iri)
                label = node.label if node.label is not None else local_name(node.iri)
                quads.append(ox.Quad(term, _LABEL, ox.Literal(label), meta))
                quads.append(ox.Quad(term, _NORMALISED, ox.Literal(normalise_label(label)), meta))
            if fact.relation.iri not in labelled:
                labelled.add(fact.relation.iri)
                quads.append(ox.Quad(r, _TYPE, ox.NamedNode(vocab("Relation")), meta))
                label = fact.relation.label if fact.relation.label is not None else local_name(fact.relation.iri)
                quads.append(ox.Quad(r, _LABEL, ox.Literal(label), meta))
        self._store.bulk_extend(quads)
        # The progress marker is written only once the facts it vouches for are in the store.
        self._store.extend([ox.Quad(self._record(state.source_key), _COMMITTED, ox.Literal(str(committed), datatype=XSD_INTEGER), meta)])
        state.committed = committed

    def add_labels(self, labels: Iterable[tuple[str, str]]) -> None:
        """Explicit labels (rdfs:label and friends in RDF sources) for entities."""
        meta = ox.NamedNode(self.ns.meta_graph)
        quads = []
        for iri, label in labels:
            term = ox.NamedNode(iri)
            quads.append(ox.Quad(term, _LABEL, ox.Literal(label), meta))
            quads.append(ox.Quad(term, _NORMALISED, ox.Literal(normalise_label(label)), meta))
        self._store.extend(quads)

    def finish(self, state: LoadState) -> None:
        """Fan-out counts per (e, r) and (e, r⁻¹) and per-relation fact counts, from the facts stored."""
        meta = ox.NamedNode(self.ns.meta_graph)
        fanout, fanin = ox.NamedNode(self.ns.fanout_graph), ox.NamedNode(self.ns.fanin_graph)
        self._store.clear_graph(fanout)
        self._store.clear_graph(fanin)
        self._store.update(
            f"DELETE {{ GRAPH {self._meta} {{ ?r <{vocab('factCount')}> ?n }} }} WHERE {{ GRAPH {self._meta} {{ ?r <{vocab('factCount')}> ?n }} }}"
        )
        # bulk_extend skips the per-transaction cost (MetaQA + a 1M-edge hub: finish 114 s → 47 s). Not
        # atomic, which is safe here: the source is marked complete only after the counts are in,
        # so an interrupted recount is redone by the rerun.
        self._store.bulk_extend(
            ox.Quad(row["e"], row["r"], ox.Literal(row["n"].value, datatype=XSD_INTEGER), fanin if row["inv"].value == "true" else fanout)
            for row in self._select("fanout_groups")
        )
        quads: list[ox.Quad] = []
        for row in self._select("relation_counts"):
            quads.append(ox.Quad(row["r"], ox.NamedNode(vocab("factCount")), ox.Literal(row["n"].value, datatype=XSD_INTEGER), meta))
        quads.append(ox.Quad(self._record(state.source_key), _COMPLETE, ox.Literal("true", datatype=XSD_BOOLEAN), meta))
        self._store.extend(quads)
        self._store.flush()
        state.complete = True

    def fact_count(self) -> int:
        return _int(self._select("count_facts")[0]["n"])
