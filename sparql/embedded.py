"""The embedded store: pyoxigraph on disk (RocksDB) or in memory. The zero-set-up default.

Reads go through the SPARQL in this folder's *.rq files; the engine opens on-disk stores read-only.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator, Sequence
from itertools import groupby, islice
from pathlib import Path

import pyoxigraph as ox

from kgqa.core.errors import StoreError
from kgqa.loaders.load import EMBEDDED_BATCH
from kgqa.sparql import escape
from kgqa.sparql.label_index import LabelIndex, embedded_index_path
from kgqa.sparql.queries import graph_terms, render
from kgqa.sparql.reader import Row, SparqlReader, pick_kg
from kgqa.sparql.writer import _FACT_COUNT, _LABEL, _RELATION, _TYPE, XSD_INTEGER, RdfWriter


#: Every hop query carries the numbered relations' VALUES block: 1,000 relations cost ~1.5 ms a hop to
#: parse, 10,000 ~13 ms (and ~19 ms to escape), more than naming them by IRI saves on a small subgraph.
MAX_NUMBERED_RELATIONS = 1_000


class EmbeddedStore(SparqlReader):
    """Read side (`kgqa.store.GraphStore`) over a pyoxigraph store."""

    def __init__(self, store: ox.Store, kg: str, label_index: LabelIndex | Path | None = None):
        super().__init__(kg, label_index)
        self._store = store
        self._numbering: tuple[Sequence[str], escape.SparqlTerm] | None = None  # see _relation_numbering

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
        relations = set(self.relation_nodes())
        for q in self._store.quads_for_pattern(None, _LABEL, None, meta):
            if q.subject not in relations and isinstance(q.subject, ox.NamedNode) and isinstance(q.object, ox.Literal):
                yield q.subject.value, q.object.value

    def relation_nodes(self) -> list[ox.NamedNode]:
        """The KG's relations (typed so in its meta graph by the loader), by IRI."""
        meta = ox.NamedNode(self.ns.meta_graph)
        found = {q.subject for q in self._store.quads_for_pattern(None, _TYPE, _RELATION, meta) if isinstance(q.subject, ox.NamedNode)}
        return sorted(found, key=lambda node: node.value)

    def _relation_numbering(self) -> tuple[Sequence[str], escape.SparqlTerm]:
        """Read from the meta graph without a query and rendered once; relations loaded later come back
        by IRI, and so do all of a KG with more than `MAX_NUMBERED_RELATIONS`."""
        if self._numbering is None:
            relations = [node.value for node in self.relation_nodes()]
            numbered = 0 < len(relations) <= MAX_NUMBERED_RELATIONS
            self._numbering = (relations, escape.numbered_iris(relations)) if numbered else ((), escape.NOTHING_NUMBERED)
        return self._numbering

    def select_asked(self, query: str) -> list[Row] | bool:
        graphs = [ox.NamedNode(g) for g in self.asked_graphs]
        self.round_trips += 1
        solutions = self._store.query(query, default_graph=graphs, named_graphs=graphs)
        return bool(solutions) if isinstance(solutions, ox.QueryBoolean) else _rows(solutions)

    def _execute(self, name: str, query: str) -> list[Row]:
        return _rows(self._store.query(query))


DELETE_STEP = 100_000  # quads per DELETE DATA when the count graphs are cleared
LOAD_STEP = 200_000  # count quads per bulk load: Oxigraph's bulk loader holds a step in memory (~1 KB a quad)


class _ChunkedLoad:
    """N-Quads lines handed to the store's bulk loader `LOAD_STEP` at a time."""

    def __init__(self, store: ox.Store):
        self._store, self._lines = store, []  # type: ignore[var-annotated]

    def __enter__(self) -> "_ChunkedLoad":
        return self

    def __exit__(self, kind: object, *rest: object) -> None:
        if kind is None:
            self._load()

    def add(self, line: str) -> None:
        self._lines.append(line)
        if len(self._lines) >= LOAD_STEP:
            self._load()

    def _load(self) -> None:
        if self._lines:
            self._store.bulk_load(input="\n".join(self._lines) + "\n", format=ox.RdfFormat.N_QUADS)
            self._lines = []


def _rows(solutions: ox.QuerySolutions) -> list[Row]:
    """Each row's lexical values (as `Term.value` gives them), read from the results written as SPARQL
    TSV rather than as term objects: building a Python object per term holds the GIL, so two threads
    retrieving at once ran slower than one (8 human FB15k-237 3-hop retrievals: 13.1 s in one thread,
    15.1 in two; from TSV, 13.2 and 9.6). A field is written in N-Triples syntax; none holds a raw
    tab or newline; an unbound one is empty."""
    lines = solutions.serialize(format=ox.QueryResultsFormat.TSV).decode("utf-8").split("\n")
    names = [name[1:] for name in lines[0].split("\t")]  # "?s"
    return [{n: (f[1:-1] if f[0] == "<" else _tsv_value(f)) for n, f in zip(names, line.split("\t")) if f} for line in lines[1:-1]]


_TSV_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))", re.S)
_TSV_CHARS = {"t": "\t", "n": "\n", "r": "\r", "b": "\b", "f": "\f"}


def _tsv_value(field: str) -> str:
    """The lexical value of a TSV field other than an IRI: a quoted literal (its language tag or
    datatype dropped, escapes undone), a bare number or boolean, or a blank node `_:id`."""
    if field[0] == '"':
        body = field[1 : field.rindex('"')]  # a tag or datatype IRI after it holds no quote
        return _TSV_ESCAPE.sub(_unescaped, body) if "\\" in body else body
    return field[2:] if field.startswith("_:") else field


def _unescaped(match: re.Match[str]) -> str:
    code = match.group(1) or match.group(2)
    return chr(int(code, 16)) if code else _TSV_CHARS.get(match.group(3), match.group(3))


def _runs(path: Path) -> Iterator[tuple[str, int]]:
    """Each run of equal lines of a TSV result file (header skipped), with its length."""
    with open(path, encoding="utf-8") as rows:
        next(rows, None)
        for line, same in groupby(rows):
            yield line.rstrip("\n"), sum(1 for _ in same)


def _term(text: str) -> str:
    """A term of a TSV result as N-Quads: the data graph holds IRIs (and skolemised blank nodes) only."""
    if not text.startswith("<"):
        raise StoreError(f"counting fan-outs: {text[:80]!r} is not an IRI; kgqa's data graph holds IRIs only")
    return text


def list_kgs(store: ox.Store) -> list[str]:
    return sorted(str(row["name"].value) for row in store.query(render("kgs")))


class EmbeddedWriter(RdfWriter):
    """Loads into a pyoxigraph store (on disk, or in memory with `path=None`)."""

    batch_size = EMBEDDED_BATCH

    def __init__(self, store: ox.Store, kg: str, label_index: LabelIndex, path: Path | None = None):
        super().__init__(kg, EmbeddedStore(store, kg, label_index), label_index)
        self._store = store
        self._path = path

    @classmethod
    def open(cls, path: str | Path | None, kg: str) -> "EmbeddedWriter":
        """On disk, the label index goes beside the store (`label_index.embedded_index_path`); in
        memory (`path=None`), in memory too."""
        path = Path(path) if path is not None else None
        index = LabelIndex.create(embedded_index_path(path, kg) if path is not None else None)
        writer = cls(ox.Store(str(path)) if path is not None else ox.Store(), kg, index, path)
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
            if self._path is not None:  # an in-memory index stays open for the readers sharing it
                super().close()
        self._store = self._read = None  # type: ignore[assignment]

    def _add(self, quads, bulk: bool) -> None:  # type: ignore[no-untyped-def]
        # bulk_extend skips per-transaction costs (MetaQA on disk: 19 s → 9.6 s; counts after a
        # 1M-edge hub: 114 s → 47 s); progress markers use the transactional extend.
        (self._store.bulk_extend if bulk else self._store.extend)(quads)

    def _update(self, sparql_update: str) -> None:
        self._store.update(sparql_update)

    def _recount(self) -> None:
        """The counts `RdfWriter._recount` writes, without grouping in a query: Oxigraph holds every
        group of a GROUP BY in memory (GBs at a few million facts). The facts are read in the order of
        the store's own indexes, where each (s, r) group and, relation by relation, each (o, r⁻¹)
        group is one run; the store writes the rows to a file itself (TSV, ~10x faster than Python
        objects), runs are counted line by line, and the counts go back through the bulk loader as
        N-Quads, a step at a time. Memory stays flat whatever the KG's size; the file takes ~70 bytes
        a fact for a moment. (An in-memory store keeps no such order: it groups in a query, as other stores do.)"""
        if self._path is None:
            super()._recount()
            return
        integer = f"^^<{XSD_INTEGER.value}>"
        fanout, fanin = escape.iri(self.ns.fanout_graph), escape.iri(self.ns.fanin_graph)
        with tempfile.TemporaryDirectory(prefix="kgqa-counts-", dir=self._scratch) as tmp:
            rows = Path(tmp) / "rows.tsv"
            self._clear_counts(rows)
            with _ChunkedLoad(self._store) as out:
                self._rows(rows, render("stream_groups_out", **graph_terms(self.ns)))
                for line, n in _runs(rows):
                    s, r = line.split("\t")
                    out.add(f'{_term(s)} {_term(r)} "{n}"{integer} {fanout} .')
                for relation in (node.value for node in self._read.relation_nodes()):
                    self._rows(rows, render("stream_groups_in", **graph_terms(self.ns), relation=escape.iri(relation)))
                    total = 0
                    for o, n in _runs(rows):
                        out.add(f'{_term(o)} {escape.iri(relation)} "{n}"{integer} {fanin} .')
                        total += n
                    out.add(f'{escape.iri(relation)} <{_FACT_COUNT.value}> "{total}"{integer} {escape.iri(self.ns.meta_graph)} .')

    def _clear_counts(self, scratch: Path) -> None:
        """Delete the count graphs in steps of `DELETE_STEP` quads: one CLEAR GRAPH is one transaction,
        which Oxigraph holds in memory (3.5 GB and 100 s for the counts of 2M facts)."""
        self._update(render("clear_fact_counts", **graph_terms(self.ns)))
        for graph in (self.ns.fanout_graph, self.ns.fanin_graph):
            if next(iter(self._store.quads_for_pattern(None, None, None, ox.NamedNode(graph))), None) is None:
                continue
            self._rows(scratch, render("stream_graph", graph=escape.iri(graph)))
            with open(scratch, encoding="utf-8") as lines:
                next(lines, None)
                while step := list(islice(lines, DELETE_STEP)):
                    body = " .\n".join(line.rstrip("\n").replace("\t", " ") for line in step)
                    self._update(f"DELETE DATA {{ GRAPH {escape.iri(graph)} {{\n{body} .\n}} }}")
                    self._store.flush()  # the deletions' memtables to disk: without it they grow to GBs

    @property
    def _scratch(self) -> str | None:
        """Where the recount's files go: beside the store (its disk has room for the store's size)."""
        return str(self._path.parent) if self._path is not None else None

    def _rows(self, path: Path, query: str) -> None:
        self._store.query(query).serialize(str(path), ox.QueryResultsFormat.TSV)

    def _flush(self) -> None:
        self._store.flush()
