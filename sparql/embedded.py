"""The embedded store: pyoxigraph on disk (RocksDB) or in memory. The zero-set-up default.

Reads go through the SPARQL in this folder's *.rq files; the engine opens on-disk stores read-only.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice
from pathlib import Path

import pyoxigraph as ox

from kgqa.core.errors import StoreError
from kgqa.sparql.label_index import LabelIndex, embedded_index_path
from kgqa.sparql.queries import graph_terms, render
from kgqa.sparql.reader import Row, SparqlReader, pick_kg
from kgqa.sparql.writer import _FACT_COUNT, _LABEL, _RELATION, _TYPE, XSD_INTEGER, RdfWriter


class EmbeddedStore(SparqlReader):
    """Read side (`kgqa.store.GraphStore`) over a pyoxigraph store."""

    def __init__(self, store: ox.Store, kg: str, label_index: LabelIndex | Path | None = None):
        super().__init__(kg, label_index)
        self._store = store

    @classmethod
    def open(cls, path: str | Path, kg: str | None = None) -> "EmbeddedStore":
        path = Path(path)
        if not (path / "CURRENT").exists():
            raise StoreError(f"no embedded store at {path} (load a KG into it first: kgqa load … --store oxigraph://{path})")
        store = ox.Store.read_only(str(path))
        kg = pick_kg(list_kgs(store), kg, str(path))
        return cls(store, kg, embedded_index_path(path, kg))

    def label_pairs(self, page: int = 5000) -> Iterator[tuple[str, str]]:
        """Every (entity IRI, label) pair, streamed from the store's index in one pass (relations'
        labels left out)."""
        meta = ox.NamedNode(self.ns.meta_graph)
        relations = {q.subject for q in self._store.quads_for_pattern(None, _TYPE, _RELATION, meta)}
        for q in self._store.quads_for_pattern(None, _LABEL, None, meta):
            if q.subject not in relations and isinstance(q.subject, ox.NamedNode) and isinstance(q.object, ox.Literal):
                yield q.subject.value, q.object.value

    def _execute(self, name: str, query: str) -> list[Row]:
        solutions = self._store.query(query)
        names = [v.value for v in solutions.variables]
        return [{n: t.value for n, t in zip(names, solution) if t is not None} for solution in solutions]


RECOUNT_CHUNK = 500_000  # count quads written at a time


def _runs(keys: Iterator[tuple[ox.Term, ox.NamedNode]], graph: ox.NamedNode) -> Iterator[ox.Quad]:
    """(entity, relation, n) quads for each run of n equal (entity, relation) keys, in `graph`."""
    last, n = None, 0
    for key in keys:
        if key != last:
            if last is not None:
                yield ox.Quad(last[0], last[1], ox.Literal(str(n), datatype=XSD_INTEGER), graph)  # type: ignore[arg-type]
            last, n = key, 0
        n += 1
    if last is not None:
        yield ox.Quad(last[0], last[1], ox.Literal(str(n), datatype=XSD_INTEGER), graph)  # type: ignore[arg-type]


def list_kgs(store: ox.Store) -> list[str]:
    return sorted(str(row["name"].value) for row in store.query(render("kgs")))


class EmbeddedWriter(RdfWriter):
    """Loads into a pyoxigraph store (on disk, or in memory with `path=None`)."""

    def __init__(self, store: ox.Store, kg: str, label_index: LabelIndex):
        super().__init__(kg, EmbeddedStore(store, kg, label_index), label_index)
        self._store = store
        self._in_memory = label_index.location == ":memory:"

    @classmethod
    def open(cls, path: str | Path | None, kg: str) -> "EmbeddedWriter":
        """On disk, the label index goes beside the store (`label_index.embedded_index_path`); in
        memory (`path=None`), in memory too."""
        index = LabelIndex.create(embedded_index_path(Path(path), kg) if path is not None else None)
        writer = cls(ox.Store(str(path)) if path is not None else ox.Store(), kg, index)
        writer.register()
        return writer

    @property
    def store(self) -> ox.Store:
        return self._store

    def reader(self) -> EmbeddedStore:
        """A reader over the same store and label index (for in-memory stores, which cannot be reopened)."""
        return EmbeddedStore(self._store, self.kg, self.label_index)

    def close(self) -> None:
        """Flush and let go of the store: RocksDB closes an on-disk store when its last handle does,
        so that a read-only open in this process afterwards (the CLI in a test) sees a finished one.
        An in-memory label index stays open for the readers that share it."""
        if self._store is not None:
            self._store.flush()
            if not self._in_memory:
                super().close()
        self._store = self._read = None  # type: ignore[assignment]

    def _add(self, quads, bulk: bool) -> None:  # type: ignore[no-untyped-def]
        # bulk_extend skips per-transaction costs (MetaQA on disk: 19 s → 9.6 s; counts after a
        # 1M-edge hub: 114 s → 47 s); progress markers use the transactional extend.
        (self._store.bulk_extend if bulk else self._store.extend)(quads)

    def _update(self, sparql_update: str) -> None:
        self._store.update(sparql_update)

    def _recount(self) -> None:
        """The counts `RdfWriter._recount` writes, by streaming the data graph in index order instead
        of grouping in a query (Oxigraph holds every group of a GROUP BY in memory: GBs at a few
        million facts). (s, r) groups are runs in the graph's subject-predicate-object order; for
        each relation, (o, r⁻¹) groups are runs in its predicate-object-subject order. Memory stays
        at one chunk of count quads, whatever the KG's size. (An in-memory store keeps no such order:
        it groups in a query, as other RDF stores do.)"""
        if self._in_memory:
            super()._recount()
            return
        self._update(render("clear_counts", **graph_terms(self.ns)))
        data = ox.NamedNode(self.ns.data_graph)
        fanout, fanin = ox.NamedNode(self.ns.fanout_graph), ox.NamedNode(self.ns.fanin_graph)
        self._add_chunked(_runs(((q.subject, q.predicate) for q in self._store.quads_for_pattern(None, None, None, data)), fanout))
        facts: list[ox.Quad] = []
        relations = {q.subject for q in self._store.quads_for_pattern(None, _TYPE, _RELATION, self._meta) if isinstance(q.subject, ox.NamedNode)}
        for relation in sorted(relations, key=lambda t: t.value):
            total = 0

            def objects(relation: ox.NamedNode = relation):  # type: ignore[no-untyped-def]
                nonlocal total
                for q in self._store.quads_for_pattern(None, relation, None, data):
                    total += 1
                    yield q.object, relation

            self._add_chunked(_runs(objects(), fanin))
            facts.append(ox.Quad(relation, _FACT_COUNT, ox.Literal(str(total), datatype=XSD_INTEGER), self._meta))
        self._add(facts, bulk=True)

    def _add_chunked(self, quads: Iterator[ox.Quad]) -> None:
        while chunk := list(islice(quads, RECOUNT_CHUNK)):
            self._add(chunk, bulk=True)

    def _flush(self) -> None:
        self._store.flush()
