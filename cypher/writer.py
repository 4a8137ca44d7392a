"""The loader side (`kgqa.store.GraphWriter`) for Neo4j: constraints and indexes first, then each
batch as one write transaction of UNWIND … MERGE (idempotent) that also records the progress."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Sequence
from typing import Any

import neo4j
from neo4j.exceptions import Neo4jError

from kgqa.cypher.connection import Neo4jStoreError, Neo4jTarget, explain
from kgqa.cypher.queries import cypher, statements
from kgqa.cypher.store import Neo4jStore
from kgqa.core.inflight import OneInFlight
from kgqa.core.labels import normalise_label
from kgqa.core.namespace import check_kg_name
from kgqa.core.store import LoadState, SourceFact

INDEX_WAIT_S = 300
log = logging.getLogger(__name__)


def source_id(source_key: str) -> str:
    """The LoadRecord's key for a source (a file's path, size and format)."""
    return hashlib.sha256(source_key.encode()).hexdigest()[:32]


class Neo4jWriter:
    def __init__(self, driver: neo4j.Driver, target: Neo4jTarget, kg: str):
        self.kg = check_kg_name(kg)
        self.target = target
        self._driver = driver
        self._in_flight = OneInFlight("kgqa-neo4j-load")

    @classmethod
    def open(cls, url: str, kg: str) -> "Neo4jWriter":
        target = Neo4jTarget.parse(url)
        writer = cls(target.driver(), target, kg)
        try:
            writer._prepare()
        except BaseException:
            writer.close()
            raise
        return writer

    def reader(self) -> Neo4jStore:
        """A read-only store on the same driver (closing it leaves the writer's driver open)."""
        return Neo4jStore(self._driver, self.target, self.kg, own_driver=False)

    def close(self) -> None:
        try:
            self._in_flight.close()
        finally:
            self._driver.close()

    def _auto(self, name: str, text: str, **params: Any) -> list[dict[str, Any]]:
        """An auto-commit statement (schema changes and CALL … IN TRANSACTIONS need one)."""
        self._in_flight.wait()
        try:
            with self._driver.session(database=self.target.database) as session:
                return session.run(text, {"kg": self.kg, **params}).data()
        except Neo4jError as exc:
            raise explain(exc, name, self.target) from exc

    def _write(self, *steps: tuple[str, dict[str, Any]]) -> None:
        self._in_flight.wait()
        self._write_now(*steps)

    def _write_now(self, *steps: tuple[str, dict[str, Any]]) -> None:
        """Several queries in one write transaction: all of them land, or none."""

        def work(tx: neo4j.ManagedTransaction) -> None:
            for name, params in steps:
                tx.run(cypher(name), {"kg": self.kg, **params}).consume()

        try:
            with self._driver.session(database=self.target.database) as session:
                session.execute_write(work)
        except Neo4jError as exc:
            raise explain(exc, "+".join(name for name, _ in steps), self.target) from exc

    def _prepare(self) -> None:
        for statement in statements("schema"):
            self._auto("schema", statement)
        self._auto("schema", "CALL db.awaitIndexes($seconds)", seconds=INDEX_WAIT_S)
        self._write(("register", {}))

    def load_state(self, source_key: str) -> LoadState:
        self._in_flight.wait()
        row = self.reader()._query("load_state", source=source_id(source_key))[0]
        return LoadState(source_key, row["committed"], row["complete"])

    def write_batch(self, facts: Sequence[SourceFact], state: LoadState, committed: int) -> None:
        entities: dict[str, dict[str, str]] = {}
        relations: dict[str, dict[str, str]] = {}
        rows = []
        for fact in facts:
            for node in (fact.subject, fact.object):
                if node.iri not in entities:
                    label = node.kept_label
                    entities[node.iri] = {"iri": node.iri, "label": label, "key": normalise_label(label)}
            if fact.relation.iri not in relations:
                label = fact.relation.kept_label
                relations[fact.relation.iri] = {"iri": fact.relation.iri, "label": label}
            rows.append({"s": fact.subject.iri, "r": fact.relation.iri, "o": fact.object.iri})
        steps = (
            ("write_entities", {"entities": list(entities.values())}),
            ("write_relations", {"relations": list(relations.values())}),
            ("write_facts", {"facts": rows}),
            # in the same transaction: the progress record commits with the facts it vouches for
            ("mark_progress", {"source": source_id(state.source_key), "committed": committed, "complete": False}),
        )
        # Written in the background while the next batch is read and built; one batch in flight at
        # most, every other write waits for it, and its error surfaces at the next write or `close`.
        self._in_flight.submit(self._write_now, *steps)
        state.committed = committed

    def add_labels(self, labels: Iterable[tuple[str, str]]) -> None:
        aliases = [{"iri": iri, "text": text, "key": normalise_label(text)} for iri, text in labels]
        if aliases:
            self._write(("write_aliases", {"aliases": aliases}))

    def finish(self, state: LoadState, recount: bool = True) -> None:
        """Fan-out lists and relation counts from the stored facts, then the source is marked done
        (an interrupted recount is redone by the rerun, as the source is not complete yet). Without
        `recount`: the KG node is marked stale instead, until a later finish recounts."""
        done = ("mark_progress", {"source": source_id(state.source_key), "committed": state.committed, "complete": True})
        if not recount:
            self._write(("mark_counts", {"stale": True}), done)  # one transaction: no complete file without its mark
            state.complete = True
            return
        self._auto("recount_groups", cypher("recount_groups"))
        self._write(("recount_relations", {}))
        # Fresh index statistics before the first question: with the ones sampled while the indexes
        # were empty, the planner may scan a group-key index instead of seeking it (seen in tests:
        # a 5,000-edge hub read whole).
        try:
            self._auto("replan", "CALL db.prepareForReplanning($seconds)", seconds=INDEX_WAIT_S)
        except Neo4jStoreError as exc:  # e.g. a loading user without the right to call it
            log.warning("index statistics not refreshed after the load (%s); Neo4j resamples them later", exc)
        self._write(("mark_counts", {"stale": False}), done)
        state.complete = True

    def counts_stale(self) -> bool:
        self._in_flight.wait()
        return bool(self.reader()._query("counts_stale")[0]["stale"])

    def fact_count(self) -> int:
        self._in_flight.wait()
        return self.reader()._query("count_facts")[0]["n"]
