"""Loading into Virtuoso: the bulk loader (`ld_dir` + `rdf_loader_run`) over an isql connection as a
privileged user — never through the SPARQL endpoint the engine reads, which stays read-only.

Store URL for loading: `virtuoso://HOST:SQLPORT?sparql=http://HOST:HTTPPORT/sparql&load_dir=DIR`
(user and password from KGQA_VIRTUOSO_USER / KGQA_VIRTUOSO_PASSWORD, default dba/dba). The server
must see DIR (add `&server_dir=PATH` when it sees it under another path, as in a container), and it
must be in the server's DirsAllowed; `&checkpoint_s=SECONDS` (default 600) bounds what a server crash
mid-load can lose. Read with `sparql+http://HOST:HTTPPORT/sparql`.

The writer also keeps Virtuoso's free-text index over the KG's labels and its words' deletion keys
(`_key_quads`), which the reader's `search_labels` queries with `bif:contains`: the rules are added when the writer
opens, before any batch (virtuoso_text_index.sql), the meta graph then says so (`k:labelTextIndex`,
what the reader checks), and the index is brought up to date at the end of each load.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterable
from itertools import islice
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pyoxigraph as ox

from kgqa.core.errors import StoreError
from kgqa.core.inflight import OneInFlight
from kgqa.core.namespace import vocab
from kgqa.sparql import escape, virtuoso_app
from kgqa.core.labels import MIN_FUZZY_WORD
from kgqa.sparql.endpoint import (
    KEYS_INDEX_MARK, LABEL_KEYS, LABEL_WORDS, NORMALISED_LABEL, TEXT_INDEX_MARK, WORD_KEYS, WORDS_INDEX_MARK, SparqlEndpointStore,
    label_keys_text, label_words_text, word_keys_text,
)
from kgqa.sparql.queries import sql_call, sql_procedure, sql_statements
from kgqa.sparql.writer import RdfWriter
from kgqa.core.store import LoadState

CHUNK = 500_000  # quads per bulk-loader file
CHECKPOINT_S = 600.0  # a load's longest stretch without a checkpoint (`checkpoint_s=` in the store URL)
#: The limit of one isql call that works through a share of the whole KG (a relation's fan-out counts, the
#: labels queued for the free-text index): at 50M facts one of them passed the session's 1,800 s.
LONG_CALL_S = 6 * 3600.0
_RELATION_ROW = re.compile(r"KGQA_RELATION (\d+) (\S+)")
_RELATIONS_ROW = re.compile(r"KGQA_RELATIONS (\d+)")
log = logging.getLogger(__name__)
_SAFE_PATH = re.compile(r"^[A-Za-z0-9_./\-]+$")
_LABEL_KEYS, _LABEL_WORDS, _WORD_KEYS = ox.NamedNode(LABEL_KEYS), ox.NamedNode(LABEL_WORDS), ox.NamedNode(WORD_KEYS)
_INDEXED_PREDICATES = (ox.NamedNode(NORMALISED_LABEL), _LABEL_KEYS, _LABEL_WORDS, _WORD_KEYS)
#: The (labels, keys) predicates whose literals the text index holds, by the KG's mark (virtuoso_text_index.sql).
_INDEXED_BY_MARK = {WORDS_INDEX_MARK: (LABEL_WORDS, WORD_KEYS), KEYS_INDEX_MARK: (NORMALISED_LABEL, LABEL_KEYS),
                    TEXT_INDEX_MARK: (NORMALISED_LABEL, LABEL_KEYS)}
#: Words whose k:wordKeys literal a writer remembers having written (then forgets them all): a word
#: written again is the same quad, which the store keeps once, so this only saves writing it.
RECENT_WORDS = 200_000
#: The meta graph's mark that the KG's labels are in Virtuoso's free-text index (its value names how:
#: WORDS_INDEX_MARK, KEYS_INDEX_MARK or TEXT_INDEX_MARK); `SparqlEndpointStore.search_labels` finds nothing to search without it.
LABEL_TEXT_INDEX = vocab("labelTextIndex")


class Isql:
    """Runs SQL (and `SPARQL …` statements) through Virtuoso's `isql` client, one session per call."""

    def __init__(self, host_port: str, user: str = "dba", password: str = "dba", timeout_s: float = 1800):
        self.host_port, self.user, self.password, self.timeout_s = host_port, user, password, timeout_s
        self.binary = shutil.which("isql-vt") or shutil.which("isql")
        if self.binary is None:
            raise StoreError("Virtuoso's isql client (isql-vt) is missing: apt-get install virtuoso-opensource")

    def run(self, *statements: str, timeout_s: float | None = None) -> str:
        """`timeout_s`: this call's limit instead of the session's."""
        script = "\n".join(s.rstrip().rstrip(";") + ";" for s in statements) + "\n"
        limit = self.timeout_s if timeout_s is None else timeout_s
        try:
            out = subprocess.run(
                [self.binary, self.host_port, self.user, self.password, "VERBOSE=OFF", "BANNER=OFF", "PROMPT=OFF", "ECHO=OFF", "ERRORS=STDOUT"],
                input=script.encode(), capture_output=True, timeout=limit,
            )
        except subprocess.TimeoutExpired as exc:
            raise StoreError(f"isql to Virtuoso at {self.host_port} took over {limit:.0f}s: {statements[-1][:200]}") from exc
        text = out.stdout.decode(errors="replace")
        if out.returncode != 0 or "*** Error" in text:
            raise StoreError(f"Virtuoso at {self.host_port} refused a statement: {text.strip()[-1500:]} {out.stderr.decode(errors='replace')[-300:]}")
        return text


def _sql_path(path: Path) -> str:
    text = str(path)
    if not _SAFE_PATH.match(text):
        raise StoreError(f"load_dir {text!r}: use a path of letters, digits, '_', '-', '.', '/' only")
    return text


def _quad_text(q: ox.Quad) -> str:
    """A quad as SPARQL INSERT DATA text, every term through the escaping module."""
    def term(t) -> str:  # type: ignore[no-untyped-def]
        if isinstance(t, ox.NamedNode):
            return escape.iri(t.value)
        if isinstance(t, ox.Literal):
            return escape.literal(t.value) + "^^" + escape.iri(t.datatype.value)
        raise StoreError(f"cannot write {t!r} to Virtuoso")

    return f"GRAPH {term(q.graph_name)} {{ {term(q.subject)} {term(q.predicate)} {term(q.object)} }}"


def _label_keys_first(quads: list[ox.Quad]) -> list[ox.Quad]:
    """The normalised-label quads of a bulk-loader file first. The loader stores each literal of a
    file once, flagged for the free-text index or not as the first quad that holds it says, so a key
    equal to its label ("1776", "manhattan": rdfs:label comes first in a batch) stayed out of the
    index (measured, Virtuoso 7.2.5; a later file that holds it flags it)."""
    keys, rest = [], []
    for quad in quads:
        (keys if quad.predicate in _INDEXED_PREDICATES else rest).append(quad)
    return keys + rest if keys and rest else quads


class VirtuosoWriter(RdfWriter):
    def __init__(
        self, isql: Isql, sparql_url: str, load_dir: Path, kg: str, server_dir: Path | None = None,
        checkpoint_s: float = CHECKPOINT_S,
    ):
        """Batches are written to `load_dir`; the server reads them as `server_dir` (the same folder
        seen from the server, e.g. a container's mount point; defaults to `load_dir`). After a batch,
        once `checkpoint_s` seconds have passed since the last checkpoint, the writer asks for one: the
        bulk loader's quads and the progress markers are unlogged, so only a checkpoint makes them
        durable, and a server that crashes loses everything loaded since the last one (measured: a
        50M-fact load's server dropped after 88 minutes and restarted empty)."""
        super().__init__(kg, SparqlEndpointStore(sparql_url, kg))
        self.isql = isql
        self.load_dir = Path(load_dir)
        self.server_dir = Path(server_dir) if server_dir else self.load_dir
        self.load_dir.mkdir(parents=True, exist_ok=True)
        self._in_flight = OneInFlight("kgqa-virtuoso-load")
        self.checkpoint_s = checkpoint_s
        self._checkpointed_at = time.monotonic()
        self._app_installed = False
        self._text_indexed = False
        self._index_mark = WORDS_INDEX_MARK  # how this KG's labels are indexed (`_index_label_keys` reads it)
        self._recent_words: set[str] = set()
        self._kg_node = ox.NamedNode(self.ns.iri)

    @classmethod
    def from_url(cls, url: str, kg: str) -> "VirtuosoWriter":
        parts = urlsplit(url)
        query = parse_qs(parts.query)
        if not parts.hostname or not parts.port or "sparql" not in query or "load_dir" not in query:
            raise StoreError(f"store {url!r}: use virtuoso://HOST:SQLPORT?sparql=http://HOST:HTTPPORT/sparql&load_dir=DIR")
        isql = Isql(f"{parts.hostname}:{parts.port}", os.environ.get("KGQA_VIRTUOSO_USER", "dba"), os.environ.get("KGQA_VIRTUOSO_PASSWORD", "dba"))
        server_dir = Path(query["server_dir"][0]) if "server_dir" in query else None
        try:
            checkpoint_s = float(query.get("checkpoint_s", [CHECKPOINT_S])[0])
        except ValueError:
            raise StoreError(f"store {url!r}: checkpoint_s must be a number of seconds") from None
        writer = cls(isql, query["sparql"][0], Path(query["load_dir"][0]), kg, server_dir, checkpoint_s)
        writer._install_app_procedure()  # here too: a load that finds its file loaded already ends without `finish`
        writer.register()
        writer._index_label_keys()  # here too: a KG an older kgqa loaded gets its index by loading its files again
        return writer

    def _add_batch(self, quads: list[ox.Quad], marker: ox.Quad) -> None:
        """Loaded in the background, so that the next batch is read and built meanwhile (MetaQA: 3.5 s
        → 2.9 s); one batch in flight at most, and every other write waits for it first. Its marker
        still follows its quads, and an error surfaces at the next write or at `close`."""
        self._in_flight.submit(self._load_batch, quads, marker)

    def _load_batch(self, quads: list[ox.Quad], marker: ox.Quad) -> None:
        self._write(quads, bulk=True)
        self._write([marker], bulk=False)
        if time.monotonic() - self._checkpointed_at >= self.checkpoint_s:
            # the labels loaded since the last checkpoint into the free-text index now, by the writer alone
            # (virtuoso_text_index.sql): one update of a whole 50M-fact load's labels at its end ran for
            # minutes, beside the scheduler's own, and crashed Virtuoso 7.2 (segfault, twice, 2026-11-29)
            self._index_pending_labels()
            self.isql.run("checkpoint")  # the batch and its marker durable together
            self._checkpointed_at = time.monotonic()

    def close(self) -> None:
        try:
            self._in_flight.close()
            self._schedule_text_index()
        finally:
            super().close()

    def _schedule_text_index(self) -> None:
        """Virtuoso's own text-index updates back on (every minute, its default), which
        virtuoso_text_index.sql turned off while this writer indexed the labels itself."""
        if self._text_indexed:
            try:
                self.isql.run("DB.DBA.VT_BATCH_UPDATE ('DB.DBA.RDF_OBJ', 'ON', 1)")
            except StoreError as exc:
                log.warning("Virtuoso at %s: its scheduled free-text index updates could not be turned back on "
                            "(run DB.DBA.VT_BATCH_UPDATE ('DB.DBA.RDF_OBJ', 'ON', 1) as dba): %s", self.isql.host_port, exc)

    def _add(self, quads: Iterable[ox.Quad], bulk: bool) -> None:
        self._in_flight.wait()  # bulk loads must not overlap: rdf_loader_run takes any file ld_dir listed
        self._write(quads, bulk)

    def _write(self, quads: Iterable[ox.Quad], bulk: bool) -> None:
        it = iter(quads)
        if not bulk:  # a handful of bookkeeping quads (progress markers, registration)
            rows = list(it)
            if rows:
                # Unlogged like the bulk loader's quads, so that both become durable at the same
                # checkpoint: a logged marker survived a server crash that lost the quads it vouched
                # for (tests/test_loaders.py, a server killed mid-load: 22,000 committed, 0 facts).
                self.isql.run("log_enable(2, 1)", "SPARQL INSERT DATA { " + " ".join(_quad_text(q) for q in rows) + " }")
            return
        while chunk := list(islice(it, CHUNK)):
            path = self.load_dir / f"kgqa-{uuid.uuid4().hex}.nq"
            path.write_bytes(ox.serialize(_label_keys_first(chunk), format=ox.RdfFormat.N_QUADS))
            where, name = _sql_path(self.server_dir), path.name
            try:
                out = self.isql.run(
                    f"ld_dir('{where}', '{name}', 'urn:kgqa:unused')",
                    "rdf_loader_run()",
                    f"SELECT 'LOADERROR', ll_error FROM DB.DBA.LOAD_LIST WHERE ll_file = '{where}/{name}' AND ll_error IS NOT NULL",
                    f"DELETE FROM DB.DBA.LOAD_LIST WHERE ll_file = '{where}/{name}'",
                )
            finally:
                path.unlink(missing_ok=True)
            if "LOADERROR" in out:
                raise StoreError(f"Virtuoso's bulk loader rejected a batch: {out.strip()[-1000:]}")

    def _recount(self) -> None:
        """In the database, in SQL (virtuoso_counts.sql): no million-row result crosses the wire or
        meets ResultSetMaxRows. One isql call per relation, each with the long limit and a log line."""
        self._in_flight.wait()
        ns = self.ns
        out = self.isql.run(*sql_procedure("virtuoso_counts"), sql_call("DB.DBA.KGQA_COUNTS_CLEAR", ns.fanout_graph, ns.fanin_graph, ns.meta_graph),
                            timeout_s=LONG_CALL_S)
        relations = [(int(number), iri) for number, iri in _RELATION_ROW.findall(out)]
        total = _RELATIONS_ROW.search(out)
        if total is None or int(total.group(1)) != len(relations):
            raise StoreError(f"Virtuoso at {self.isql.host_port}: could not read KG {self.kg!r}'s relations for its fan-out counts: {out.strip()[-500:]}")
        for i, (number, iri) in enumerate(relations, 1):
            started = time.monotonic()
            self.isql.run(sql_call("DB.DBA.KGQA_COUNTS_REL", ns.data_graph, ns.fanout_graph, ns.fanin_graph, ns.meta_graph, number),
                          timeout_s=LONG_CALL_S)
            log.info("Virtuoso at %s: fan-out counts of KG %s, relation %d of %d (%s) in %.1f s",
                     self.isql.host_port, self.kg, i, len(relations), iri, time.monotonic() - started)

    def _flush(self) -> None:
        self._in_flight.wait()
        self.isql.run("checkpoint")

    def _update(self, sparql_update: str) -> None:
        self._in_flight.wait()
        self.isql.run("log_enable(2, 1)", "SPARQL " + sparql_update)  # unlogged, as the markers are (see _write)

    def finish(self, state: LoadState, recount: bool = True) -> None:
        """Also creates kgqa's APP procedure again, now that the load's data and counts are in:
        Virtuoso plans a procedure's queries when it is created, from the data there then, so one
        created before a first load (against empty graphs) kept plans made for no data until it was
        created again. Measured on a fresh server after one MetaQA load, p50 over 60 dev topics per
        row: 1-hop λ=100 8.0 → 2.6 ms, 2-hop 32.1 → 5.3 ms, 3-hop 182 → 27 ms."""
        self._in_flight.wait()
        self._index_pending_labels()  # the load's labels searchable now, not at the scheduler's next round
        super().finish(state, recount)
        if self._app_installed:
            self._install_app_procedure()

    def _index_pending_labels(self) -> None:
        """Index the label literals flagged since the last update. Asked unlogged, as the load's quads
        are (Virtuoso still logs part of it; a checkpoint follows)."""
        if self._text_indexed:
            started = time.monotonic()
            self.isql.run("log_enable(2, 1)", "DB.DBA.VT_INC_INDEX_DB_DBA_RDF_OBJ()", timeout_s=LONG_CALL_S)
            log.info("Virtuoso at %s: free-text index brought up to date in %.1f s", self.isql.host_port, time.monotonic() - started)

    def _key_quads(self, entity: ox.NamedNode, key: str) -> list[ox.Quad]:
        """With WORDS_INDEX_MARK, the label's words (`label_words_text`) and each word not written
        lately with its deletion keys on the KG's node (`word_keys_text`): the index then holds the
        deletion keys of each word of the KG once, not those of each word of each label. Else the
        label's deletion keys (`label_keys_text`)."""
        quads = super()._key_quads(entity, key)
        if self._index_mark in (KEYS_INDEX_MARK, TEXT_INDEX_MARK):
            return [*quads, ox.Quad(entity, _LABEL_KEYS, ox.Literal(label_keys_text(key)), self._meta)]
        quads.append(ox.Quad(entity, _LABEL_WORDS, ox.Literal(label_words_text(key)), self._meta))
        for word in dict.fromkeys(key.split()):
            if len(word) >= MIN_FUZZY_WORD and word not in self._recent_words:
                if len(self._recent_words) >= RECENT_WORDS:
                    self._recent_words.clear()
                self._recent_words.add(word)
                quads.append(ox.Quad(self._kg_node, _WORD_KEYS, ox.Literal(word_keys_text(word)), self._meta))
        return quads

    def _index_label_keys(self) -> None:
        """Virtuoso's free-text index over the KG's labels and deletion keys (virtuoso_text_index.sql:
        the rules, which also index what an older kgqa loaded, then the index brought up to date), and
        the meta graph's mark of how: WORDS_INDEX_MARK where the KG had no labels yet (or had that
        mark); KEYS_INDEX_MARK where it had that one (a KG loaded by the kgqa of 2026-11 is loaded on
        as it began); else TEXT_INDEX_MARK (labels an older kgqa loaded have no keys: readers search
        them by wildcards). Idempotent. Where Virtuoso refuses (a loading user who may not add rules;
        a cluster), the load goes on with a warning and readers' `search_labels` says the KG has no
        label index."""
        marks = self._read.label_index_marks()
        if WORDS_INDEX_MARK in marks or not (marks or self._read._select("has_labels")):
            self._index_mark = WORDS_INDEX_MARK
        else:
            self._index_mark = KEYS_INDEX_MARK if KEYS_INDEX_MARK in marks else TEXT_INDEX_MARK
        labels, keys = _INDEXED_BY_MARK[self._index_mark]
        statements = sql_statements("virtuoso_text_index", meta=self.ns.meta_graph, labels=labels, keys=keys)
        try:
            self.isql.run(*statements)
        except StoreError as exc:
            self._text_indexed = False
            log.warning("Virtuoso at %s did not index KG %r's labels for text search; the entity linker's fuzzy "
                        "fallbacks will be off for it: %s", self.isql.host_port, self.kg, exc)
            return
        self._text_indexed = True
        if self._index_mark not in marks:
            self._add([ox.Quad(self._kg_node, ox.NamedNode(LABEL_TEXT_INDEX), ox.Literal(self._index_mark), self._meta)], bulk=False)

    def _install_app_procedure(self) -> None:
        """(Re)install kgqa's APP procedure, which readers call; where Virtuoso refuses, warn once."""
        try:
            self.isql.run(*virtuoso_app.procedure_statements())
        except StoreError as exc:  # e.g. a loading user who may not create procedures: readers go hop by hop
            self._app_installed = False
            log.warning("kgqa's APP procedure was not installed in Virtuoso at %s; readers will retrieve hop by hop: %s", self.isql.host_port, exc)
        else:
            self._app_installed = True
