"""The read side (`kgqa.store.GraphStore`) over Neo4j: read-access sessions only, every value a
`$parameter`, each call one query in one read transaction with the store URL's timeout."""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import Any

import neo4j
from neo4j.exceptions import Neo4jError

from kgqa.cypher.connection import Neo4jStoreError, Neo4jTarget, explain
from kgqa.cypher.queries import cypher, repeated
from kgqa.core.errors import NoLabelIndex
from kgqa.core.labels import MIN_FUZZY_WORD, display_label, normalise_label, resolved
from kgqa.core.namespace import check_kg_name
from kgqa.sparql.reader import pick_kg
from kgqa.core.store import RelationInfo, StoreCounts, WholeRetrieval
from kgqa.core.types import Edge, LinkedEntity

Record = dict[str, Any]
log = logging.getLogger(__name__)

LABEL_INDEX = "kgqa_label_keys"  # the full-text index of entity and alias keys (schema.cypher)
MAX_SEARCH_WORDS = 16  # words of a text searched: each fuzzy term expands to ≤ 50 Lucene clauses, ≤ 1,024 in all
LUCENE_OVERFETCH = 4  # Lucene ranks the nodes of every KG in the database; the KG filter comes after
_PLAIN_WORD = re.compile(r"[^\W_]+")  # letters and digits only: none of Lucene's + - & | ! ( ) { } [ ] ^ " ~ * ? : \ /
_LUCENE_KEYWORDS = {"AND", "OR", "NOT", "TO"}


def lucene_query(words: Sequence[str], any_word: bool = False) -> str:
    """The Lucene query (classic syntax) that finds keys holding every word (`any_word`: any of them),
    each as written or one edit away: `word~1` (Lucene's fuzzy term: one letter deleted, added,
    replaced, or two adjacent swapped) for words of 3 characters or more, `word` for shorter ones,
    joined by AND (OR). Words are normalised ones (`normalise_label(text).split()`); anything else —
    an empty word, one with a Lucene operator or special character, or an operator keyword — is
    refused with ValueError, so no text can change the query's structure."""
    if not words:
        raise ValueError("a Lucene query needs at least one word")
    for word in words:
        if not _PLAIN_WORD.fullmatch(word) or word in _LUCENE_KEYWORDS:
            raise ValueError(f"not a plain word, refused in a Lucene query: {word!r}")
    terms = [f"{word}~1" if len(word) >= MIN_FUZZY_WORD else word for word in words]
    return (" OR " if any_word else " AND ").join(terms)


def _no_such_index(exc: BaseException | None, kind: str = "fulltext") -> bool:
    """Whether a driver error says the full-text (or `kind` "vector") index does not exist (a KG loaded
    by an older kgqa; no `kgqa index --vectors` yet): Neo4j 5 answers
    Neo.ClientError.Procedure.ProcedureCallFailed, "There is no such fulltext schema index"."""
    if not isinstance(exc, Neo4jError):
        return False
    code, message = exc.code or "", (exc.message or "").lower()
    return code.startswith("Neo.ClientError.") and f"no such {kind} schema index" in message


class Neo4jStore:
    def __init__(self, driver: neo4j.Driver, target: Neo4jTarget, kg: str, own_driver: bool = True):
        self.kg = check_kg_name(kg)
        self.round_trips = 0
        self.target = target
        self._driver = driver
        self._own_driver = own_driver

    @classmethod
    def connect(cls, url: str, kg: str | None = None) -> "Neo4jStore":
        target = Neo4jTarget.parse(url)
        driver = target.driver()
        try:
            rows = _read(driver, target, "kgs", {})
            store = cls(driver, target, pick_kg([r["name"] for r in rows], kg, target.uri))
            if any(r["name"] == store.kg and r["indexes_pending"] for r in rows):
                log.warning(
                    "KG %r on %s was bulk-imported and kgqa's indexes are not built yet, so retrieval scans "
                    "instead of seeking: run `kgqa load` of the same files with --store %s once (it builds them)",
                    store.kg, target.uri, target.uri,
                )
            return store
        except BaseException:
            driver.close()
            raise

    def _query(self, name: str, **params: Any) -> list[Record]:
        self.round_trips += 1
        return _read(self._driver, self.target, name, {"kg": self.kg, **params})

    def close(self) -> None:
        if self._own_driver:
            self._driver.close()

    def explain(self, text: str, params: dict[str, Any]) -> tuple[str, dict[str, Any], str | None]:
        """A query written elsewhere (text2query), planned and not run: (its query type — "r" read
        only, "rw", "w", "s" schema —, its plan as the driver gives it, the database it would run on).
        Neo4jError when the server cannot plan it (the caller refuses it with the server's words)."""
        self.round_trips += 1
        with self._driver.session(database=self.target.database, default_access_mode=neo4j.READ_ACCESS) as session:
            summary = session.run(neo4j.Query("EXPLAIN " + text, timeout=self.target.timeout_s), params).consume()  # type: ignore[arg-type]
        database = getattr(summary, "database", None)
        return summary.query_type or "", dict(summary.plan or {}), database

    def read_rows(self, text: str, params: dict[str, Any], limit: int) -> list[Record]:
        """At most `limit` rows of a checked query (text2query), as every query here: a READ-access
        session with the store's transaction timeout; the rest of the result is discarded, so the server stops."""
        self.round_trips += 1
        return _read(self._driver, self.target, "text2query", params, text, limit)

    def resolve(self, labels: Sequence[str]) -> dict[str, list[LinkedEntity]]:
        return resolved(
            labels,
            lambda wanted: [(r["label"], r["e"]) for r in self._query("resolve_exact", labels=wanted)],
            lambda keys: [(r["key"], r["e"], r["label"]) for r in self._query("resolve_normalised", keys=keys)],
        )

    def expand(self, frontier: Sequence[str], reached: Collection[str], lam: int) -> list[Edge]:
        """One query for the hop (see expand_hop.cypher)."""
        if not frontier:
            return []
        reached = list(reached)
        rows = self._query("expand_hop", frontier=list(frontier), reached=reached, lam=lam, scan_limit=max(lam, len(reached)))
        return [Edge(r["s"], r["r"], r["inv"], r["o"]) for r in rows]

    def expand_hops(self, topics: Sequence[str], hops: int, lam: int) -> WholeRetrieval:
        """Every hop and every label in one query (see expand_hops.cypher)."""
        self.round_trips += 1
        query = repeated("expand_hops", hops)
        row = _read(self._driver, self.target, "expand_hops", {"kg": self.kg, "topics": list(topics), "lam": lam}, query)[0]
        labels = {iri: display_label(iri, [label] if label is not None else [], aliases) for iri, label, aliases in row["nodes"]}
        labels.update((iri, label) for iri, label in row["relations"])
        for iri in topics:  # a topic the store does not hold keeps a readable name, as labels() gives it
            labels.setdefault(iri, display_label(iri, [], []))
        return WholeRetrieval([(Edge(s, r, inv, o), hop) for s, r, inv, o, hop in row["edges"]], labels)

    def labels(self, iris: Iterable[str]) -> dict[str, str]:
        iris = list(dict.fromkeys(iris))
        found = {r["iri"]: r for r in self._query("labels", iris=iris)} if iris else {}
        shown: dict[str, str] = {}
        for iri in iris:
            row = found.get(iri, {"label": None, "aliases": []})
            shown[iri] = display_label(iri, [row["label"]] if row["label"] is not None else [], row["aliases"])
        return shown

    def label_page(self, after: tuple[str, str] | None, limit: int) -> list[tuple[str, str]]:
        iri, label = after or ("", "")
        return [(r["e"], r["label"]) for r in self._query("label_page", after_iri=iri, after_label=label, limit=limit)]

    def label_pairs(self, page: int = 5000) -> Iterator[tuple[str, str]]:
        """Every (entity IRI, label) pair in one streamed query (label_pairs.cypher), `page` rows
        fetched at a time: what `kgqa synth` reads of a KG. It reads the whole KG, so the store's
        per-query timeout does not apply; the session is READ-access like every other."""
        self.round_trips += 1
        try:
            with self._driver.session(database=self.target.database, default_access_mode=neo4j.READ_ACCESS, fetch_size=page) as session:
                for row in session.run(neo4j.Query(cypher("label_pairs")), {"kg": self.kg}):  # type: ignore[arg-type]
                    names = {*row["aliases"], *([row["label"]] if row["label"] is not None else [])}
                    yield from ((row["e"], name) for name in sorted(names))
        except Neo4jError as exc:
            raise explain(exc, "label_pairs", self.target) from exc

    def search_labels(self, texts: Sequence[str], any_word: bool = False, limit: int = 50) -> dict[str, list[tuple[str, str]]]:
        """Candidates through Neo4j's full-text index of entity and alias keys, every text in one query
        (see search_labels.cypher and `lucene_query`; `kgqa.core.store.SearchesLabels`)."""
        out: dict[str, list[tuple[str, str]]] = {text: [] for text in texts}
        queries = []
        for text in out:
            key = normalise_label(text)
            words = key.split()[:MAX_SEARCH_WORDS]
            if words:
                queries.append({"text": text, "lucene": lucene_query(words, any_word), "length": len(key)})
        if not queries or limit <= 0:
            return out
        try:
            rows = self._query("search_labels", queries=queries, limit=limit, asked=limit * LUCENE_OVERFETCH)
        except Neo4jStoreError as exc:
            if _no_such_index(exc.__cause__):
                raise NoLabelIndex(
                    f"KG {self.kg!r} on {self.target.uri} has no full-text index of its labels ({LABEL_INDEX}; it was "
                    f"loaded by an older kgqa or imported in bulk): run `kgqa load` of the same files with --kg {self.kg} "
                    f"--store {self.target.uri} once (it creates the index and finds the files already loaded)"
                ) from None
            raise
        for row in rows:
            out[row["text"]] = [(e, label) for e, label in row["pairs"]]
        return out

    def nearest_labels(self, texts: Sequence[str], vectors: Any, limit: int = 10) -> dict[str, list[tuple[str, str]]]:
        """For each text, the (entity IRI, label) pairs whose label vectors are nearest its vector (a row
        of `vectors`), through the opt-in vector index (`kgqa index --vectors`); {} where the KG has none."""
        if not texts or limit <= 0:
            return {}
        queries = [{"text": text, "vector": [float(x) for x in vector]} for text, vector in zip(texts, vectors)]
        try:
            rows = self._query("nearest_labels", queries=queries, limit=limit, asked=limit * LUCENE_OVERFETCH)
        except Neo4jStoreError as exc:
            if _no_such_index(exc.__cause__, "vector"):
                return {}
            raise
        return {row["text"]: [(e, label) for e, label in row["pairs"]] for row in rows}

    def relations(self) -> list[RelationInfo]:
        return [RelationInfo(r["r"], r["label"], r["facts"]) for r in self._query("relations")]

    def subject_relations(self, iris: Sequence[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for r in self._query("subject_relations", iris=list(dict.fromkeys(iris))) if iris else []:
            out.setdefault(r["e"], []).append(r["label"])
        return out

    def counts(self) -> StoreCounts:
        facts = self._query("count_facts")[0]["n"]
        entities = self._query("count_entities")[0]["n"]
        return StoreCounts(facts=facts, entities=entities, relations=len(self.relations()))

    # --- baselines for bench/retrieval.py; not used by the engine ---
    def expand_uncapped(self, frontier: Sequence[str]) -> list[Edge]:
        if not frontier:
            return []
        return [Edge(r["s"], r["r"], r["inv"], r["o"]) for r in self._query("expand_all", frontier=list(frontier))]

    def relations_of(self, entity: str) -> list[tuple[str, bool]]:
        return [(r["r"], r["inv"]) for r in self._query("relations_of", entity=entity)]

    def neighbours(self, entity: str, relation: str, inverse: bool) -> list[str]:
        name = "neighbours_in" if inverse else "neighbours_out"
        return [r["o"] for r in self._query(name, entity=entity, relation=relation)]


def _read(driver: neo4j.Driver, target: Neo4jTarget, name: str, params: dict[str, Any], text: str | None = None,
          limit: int | None = None) -> list[Record]:
    """One query as one auto-commit transaction in a READ-access session (the server refuses any
    write in it), with the store's timeout. Auto-commit: one network round trip where an explicit
    transaction takes three (measured on loopback: 1.2 ms against 3.9 ms for `RETURN 1`). `limit`:
    at most that many rows are pulled, the rest discarded (the server stops producing them)."""
    query = neo4j.Query(text or cypher(name), timeout=target.timeout_s)  # type: ignore[arg-type]
    fetch = {} if limit is None else {"fetch_size": limit + 1}
    try:
        with driver.session(database=target.database, default_access_mode=neo4j.READ_ACCESS, **fetch) as session:
            result = session.run(query, params)
            keys = result.keys()
            if limit is None:
                return [dict(zip(keys, values)) for values in result.values()]
            return [dict(zip(keys, record.values())) for record in itertools.islice(result, limit)]
    except Neo4jError as exc:
        raise explain(exc, name, target) from exc
