"""Virtuoso's two silent traps, against a real Virtuoso configured to spring them: a result cut at
ResultSetMaxRows (HTTP 200, X-SPARQL-MaxRows), and partial results when a query's time runs out
(HTTP 200, X-SQL-State: S1TAT). Both must raise, never pass as complete."""

from __future__ import annotations

import logging

import pytest

from kgqa import open_writer, retrieve
from kgqa.core.errors import StoreError
from kgqa.loaders import load_file
from kgqa.core.namespace import KGNamespace
from kgqa.sparql import virtuoso_app
from kgqa.sparql.endpoint import APP_RECHECK_S, EndpointError, SparqlEndpointStore
from kgqa.sparql.virtuoso import Isql
from kgqa.core.types import Edge
from conftest import DEMO_KG
from launchers import VirtuosoServer

SLOW = "SELECT ?a ?d WHERE { ?a ?b ?c . ?d ?e ?f . FILTER(STRLEN(STR(?c)) + STRLEN(STR(?f)) = 7 && ?a != ?d) } LIMIT 90"


@pytest.fixture(scope="module")
def strict_virtuoso(tmp_path_factory):
    with VirtuosoServer(tmp_path_factory.mktemp("virtuoso-strict"), max_rows=100) as server:
        writer = open_writer(server.writer_url, "demo")
        load_file(writer, DEMO_KG)
        writer.close()
        yield server


def test_row_limit_truncation_raises(strict_virtuoso):
    store = SparqlEndpointStore.connect(strict_virtuoso.sparql_url)
    assert len(store.relations()) == 9  # under the limit: fine
    assert store.counts().facts == 12283
    assert len(store.neighbours("urn:kgqa:kg:demo:e:English", "urn:kgqa:kg:demo:r:in_language", inverse=True)) == 47
    with pytest.raises(EndpointError, match="X-SPARQL-MaxRows"):
        store.neighbours("urn:kgqa:kg:demo:e:Drama", "urn:kgqa:kg:demo:r:has_genre", inverse=True)  # 370 rows, cut at 100


def test_partial_result_on_timeout_raises(strict_virtuoso):
    store = SparqlEndpointStore.connect(strict_virtuoso.sparql_url, server_timeout_ms=500)
    # Virtuoso usually answers with partial rows marked S1TAT; once in a CI run (2026-11-26) it
    # cancelled the statement instead (HTTP 500, SR203). Either way the caller must get an error,
    # never the rows that happened to be found in time.
    with pytest.raises(EndpointError, match="S1TAT|SR203"):
        store._execute("slow", SLOW)


def test_the_server_stops_a_query_before_its_client_gives_up(strict_virtuoso):
    """With no server_timeout_ms, Virtuoso is told the client's timeout less 3 s: the slow query ends
    on the server with its partial-results error, not with the client leaving it running."""
    store = SparqlEndpointStore.connect(strict_virtuoso.sparql_url, timeout=5)
    with pytest.raises(EndpointError, match="S1TAT"):
        store._execute("slow", SLOW)
    assert len(store.relations()) == 9  # the server is free again


# --- kgqa's APP procedure (sparql/virtuoso_app.sql): a whole retrieval in one SPARQL round trip ---

DEMO = KGNamespace("demo").entity
# HUB is not in the KG: a topic the store has never seen has no edges, and its label is its IRI's.
# Drama's has_genre⁻¹ group (370) is over λ and |S_{h-1}|: probed with the entities reached before.
CASES = [([DEMO("Kismet")], 1, 10), ([DEMO("Kismet")], 2, 100), ([DEMO("HUB"), DEMO("William Dieterle"), DEMO("Drama")], 2, 10), ([DEMO("William Dieterle")], 3, 5)]


def _hop_by_hop(url: str) -> SparqlEndpointStore:
    store = SparqlEndpointStore.connect(url)
    store.has_app_procedure = False
    return store


def test_a_retrieval_is_one_call_of_the_app_procedure_with_the_hop_by_hop_result(strict_virtuoso):
    store, reference = SparqlEndpointStore.connect(strict_virtuoso.sparql_url), _hop_by_hop(strict_virtuoso.sparql_url)
    for topics, hops, lam in CASES:
        got, want = retrieve(store, topics, hops, lam), retrieve(reference, topics, hops, lam)
        assert got.num_edges == want.num_edges > 0 and got.edge_set() == want.edge_set(), (topics, hops, lam)
        assert (got.nodes, got.node_labels, got.relation_labels) == (want.nodes, want.node_labels, want.relation_labels)
        assert got.trace.round_trips == 1 and store.has_app_procedure
        assert want.trace.round_trips >= 2  # hop by hop: group sizes of hop 1, then a query per hop


def test_a_subgraph_too_large_for_one_answer_is_retrieved_hop_by_hop(strict_virtuoso):
    store, reference = SparqlEndpointStore.connect(strict_virtuoso.sparql_url), _hop_by_hop(strict_virtuoso.sparql_url)
    store.app_max_bytes = 300
    topics, hops, lam = [DEMO("Kismet")], 2, 100
    got, want = retrieve(store, topics, hops, lam), retrieve(reference, topics, hops, lam)
    assert got.num_edges == want.num_edges > 20 and got.edge_set() == want.edge_set()
    assert got.node_labels == want.node_labels
    assert got.trace.round_trips == 1 + hops + 1 and store.has_app_procedure  # the call, then hop by hop


def test_the_app_procedure_stops_at_the_time_limit_with_an_error(strict_virtuoso):
    store = SparqlEndpointStore.connect(strict_virtuoso.sparql_url, server_timeout_ms=1)
    everything = [DEMO(name) for name in ("HUB", "Drama", "English", "Comedy", "Kismet")]
    with pytest.raises(EndpointError, match="stopped the retrieval at its time limit"):
        retrieve(store, everything, 3, 10_000)


def test_without_the_app_procedure_the_reader_goes_hop_by_hop(strict_virtuoso, caplog):
    store, reference = SparqlEndpointStore.connect(strict_virtuoso.sparql_url), _hop_by_hop(strict_virtuoso.sparql_url)
    strict_virtuoso.isql("drop procedure DB.DBA.KGQA_APP_1")
    try:
        with caplog.at_level(logging.WARNING, logger="kgqa.sparql.endpoint"):
            got = retrieve(store, [DEMO("Kismet")], 2, 100)
        assert store.has_app_procedure is False and "procedure is missing" in caplog.text
        want = retrieve(reference, [DEMO("Kismet")], 2, 100)
        assert got.edge_set() == want.edge_set() and got.node_labels == want.node_labels
        assert retrieve(store, [DEMO("Kismet")], 2, 100).trace.round_trips == 3  # not asked again yet
        store._app_missing_at -= APP_RECHECK_S  # the recheck is due: asked, still missing, not warned again
        caplog.clear()
        assert retrieve(store, [DEMO("Kismet")], 2, 100).trace.round_trips == 1 + 3
        assert store.has_app_procedure is False and "procedure is missing" not in caplog.text
    finally:
        strict_virtuoso.isql(*virtuoso_app.procedure_statements())
    assert retrieve(SparqlEndpointStore.connect(strict_virtuoso.sparql_url), [DEMO("Kismet")], 2, 100).trace.round_trips == 1
    assert retrieve(store, [DEMO("Kismet")], 2, 100).trace.round_trips == 3  # installed, but not due yet
    store._app_missing_at -= APP_RECHECK_S  # a long-running reader finds the procedure a load installed
    assert retrieve(store, [DEMO("Kismet")], 2, 100).trace.round_trips == 1 and store.has_app_procedure


def test_the_app_procedure_answer_is_read_strictly():
    topic = "urn:x:a"
    whole = virtuoso_app.parse("kgqa-app 1\nN\turn:x:a\nN\turn:x:r\nN\turn:x:b\nE\t1\t0\t1\t1\t2\nL\t2\tb\\\\c\\td\\ne\nP\t0\tA\n", [topic], "test")
    assert whole is not None and whole.edges == [(Edge("urn:x:a", "urn:x:r", True, "urn:x:b"), 1)]
    assert whole.labels == {"urn:x:a": "A", "urn:x:b": "b\\c\td\ne", "urn:x:r": "r"}
    assert virtuoso_app.parse("kgqa-app 1 too-large", [topic], "test") is None
    with pytest.raises(StoreError, match="not 'kgqa-app 1'"):
        virtuoso_app.parse("kgqa-app 2\n", [topic], "test")
    with pytest.raises(StoreError, match="cannot read"):
        virtuoso_app.parse("kgqa-app 1\nE\t1\t0\t1\t0\t2\n", [topic], "test")  # numbers before their N lines
    with pytest.raises(ValueError, match="forbidden character"):
        virtuoso_app.topic_list(["urn:x:a urn:x:b"])  # a space would split one topic in two


def test_a_load_goes_on_when_the_app_procedure_cannot_be_installed(strict_virtuoso, monkeypatch, caplog, tmp_path):
    """Virtuoso refuses to install the procedure (here: text it cannot compile; in life, a loading
    user who may not create procedures): the load still completes, with a warning."""
    monkeypatch.setattr(virtuoso_app, "procedure_statements", lambda: ["create procedure DB.DBA.KGQA_APP_BROKEN () { return 1 +; }"])
    kb = tmp_path / "tiny.txt"
    kb.write_text("a|r|b\nb|r|c\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="kgqa.sparql.virtuoso"):
        writer = open_writer(strict_virtuoso.writer_url, "tiny")
        report = load_file(writer, kb)
        writer.close()
    assert report.facts_in_store == 2 and "APP procedure was not installed" in caplog.text


def test_the_app_procedure_is_created_again_once_the_loads_facts_and_counts_are_in(strict_virtuoso, monkeypatch, tmp_path):
    """Virtuoso plans a procedure's queries when it is created, from the data there then: created only
    when the writer opens, before a first load, its plans are made for empty graphs. So a load creates
    it again after its facts and counts (and still at open, for a load that finds its file loaded)."""
    ran: list[str] = []
    real_run = Isql.run

    def recording_run(self: Isql, *statements: str) -> str:
        ran.extend(statements)
        return real_run(self, *statements)

    monkeypatch.setattr(Isql, "run", recording_run)
    kb = tmp_path / "tiny.txt"
    kb.write_text("a|r|b\nb|r|c\n", encoding="utf-8")
    writer = open_writer(strict_virtuoso.writer_url, "tinyplans")
    load_file(writer, kb)
    writer.close()
    creates = [i for i, text in enumerate(ran) if text.startswith("create procedure DB.DBA.KGQA_APP_1 (")]
    bulk_loads = [i for i, text in enumerate(ran) if text == "rdf_loader_run()"]
    recounts = [i for i, text in enumerate(ran) if "GROUP BY S, P" in text]
    assert len(creates) == 2 and bulk_loads and recounts
    assert creates[0] < bulk_loads[0] and creates[1] > max(bulk_loads + recounts)
    tiny = KGNamespace("tinyplans")
    store = SparqlEndpointStore.connect(strict_virtuoso.sparql_url, "tinyplans")
    reference = SparqlEndpointStore.connect(strict_virtuoso.sparql_url, "tinyplans")
    reference.has_app_procedure = False
    got, want = retrieve(store, [tiny.entity("a")], 2, 10), retrieve(reference, [tiny.entity("a")], 2, 10)
    assert store.has_app_procedure and got.trace.round_trips == 1
    a, r, b, c = tiny.entity("a"), tiny.relation("r"), tiny.entity("b"), tiny.entity("c")
    assert {(a, r, False, b, 1), (b, r, False, c, 2)} <= got.edge_set() == want.edge_set()
