"""Virtuoso's two silent traps, against a real Virtuoso configured to spring them: a result cut at
ResultSetMaxRows (HTTP 200, X-SPARQL-MaxRows), and partial results when a query's time runs out
(HTTP 200, X-SQL-State: S1TAT). Both must raise, never pass as complete."""

from __future__ import annotations

import pytest

from kgqa import open_writer
from kgqa.loaders import load_file
from kgqa.sparql.endpoint import EndpointError, SparqlEndpointStore
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
    with pytest.raises(EndpointError, match="S1TAT"):
        store._execute("slow", SLOW)


def test_the_server_stops_a_query_before_its_client_gives_up(strict_virtuoso):
    """With no server_timeout_ms, Virtuoso is told the client's timeout less 3 s: the slow query ends
    on the server with its partial-results error, not with the client leaving it running."""
    store = SparqlEndpointStore.connect(strict_virtuoso.sparql_url, timeout=5)
    with pytest.raises(EndpointError, match="S1TAT"):
        store._execute("slow", SLOW)
    assert len(store.relations()) == 9  # the server is free again
