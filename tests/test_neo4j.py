"""Neo4j specifics against a real Neo4j 5.26: read-only question time, timeouts that say so,
hostile strings that stay values, and hubs that are never scanned."""

from __future__ import annotations

import pytest

from kgqa import open_store, open_writer, retrieve
from kgqa.cypher import store as cypher_store
from kgqa.cypher.connection import Neo4jStoreError, Neo4jTarget, Neo4jTimeout
from kgqa.cypher.queries import cypher, repeated
from kgqa.core.errors import StoreError
from kgqa.loaders import load_file
from kgqa.core.namespace import KGNamespace

HOSTILE = [
    "x' }) DETACH DELETE n //",
    'a"b`c}-[:FACT]->(z) MATCH (n) DETACH DELETE n',
    "$kg", "\\u0027", "line\nbreak", "`Entity`", "{{frontier}}",
]
NS = KGNamespace("hostile")


@pytest.fixture(scope="module")
def hostile_kg(neo4j_server, tmp_path_factory):
    path = tmp_path_factory.mktemp("hostile") / "kb.txt"
    lines = [f"{name}|rel|plain {i}" for i, name in enumerate(HOSTILE) if "\n" not in name]
    lines += [f"hub|hub_link|leaf {i}" for i in range(5000)] + ["plain 0|to_hub|hub", "leaf 7|near|plain 1"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    writer = open_writer(neo4j_server.url, "hostile")
    load_file(writer, path)
    writer.close()
    store = open_store(neo4j_server.url, "hostile")
    yield store
    store.close()


def test_hostile_strings_are_values_not_cypher(hostile_kg):
    before = hostile_kg.counts()
    found = hostile_kg.resolve(HOSTILE)
    for name in HOSTILE:
        if "\n" in name:
            continue
        assert [hit.entity.iri for hit in found[name]] == [NS.entity(name)], name
    assert hostile_kg.expand([NS.entity(h) for h in HOSTILE], [], 10) != []
    assert hostile_kg.expand(["') MATCH (n) DETACH DELETE n //"], [], 10) == []
    assert hostile_kg.labels([NS.entity(HOSTILE[0])]) == {NS.entity(HOSTILE[0]): HOSTILE[0]}
    assert hostile_kg.counts() == before


def test_question_time_sessions_refuse_writes(hostile_kg, monkeypatch):
    before = hostile_kg.counts()
    monkeypatch.setattr(cypher_store, "cypher", lambda name: "CREATE (:Entity {kg: $kg, iri: 'intruder'}) RETURN 1 AS n")
    with pytest.raises(Neo4jStoreError, match="count_facts.cypher failed"):
        hostile_kg._query("count_facts")
    monkeypatch.undo()
    assert hostile_kg.counts() == before


def test_a_timeout_is_an_error_that_says_so(neo4j_server, hostile_kg, monkeypatch):
    store = open_store(neo4j_server.url + "?timeout=0.5", "hostile")
    slow = "UNWIND range(1, 1000000000) AS x WITH x WHERE x % 7 = 8 RETURN count(x) AS n"
    monkeypatch.setattr(cypher_store, "cypher", lambda name: slow)
    with pytest.raises(Neo4jTimeout, match="transaction timeout"):
        store._query("expand_hop")
    store.close()


def test_a_hub_group_is_probed_never_scanned(neo4j_server, hostile_kg):
    """PROFILE the hop query from the hub with λ=10: its 5,000-edge group is never read; only the
    reached entities are probed."""
    import neo4j

    hub = NS.entity("hub")
    reached = [hub, NS.entity("plain 0"), NS.entity("leaf 7"), NS.entity("plain 1")]
    with neo4j.GraphDatabase.driver(neo4j_server.url, auth=None, notifications_min_severity="OFF") as driver:
        with driver.session(default_access_mode=neo4j.READ_ACCESS) as session:
            result = session.run("PROFILE " + cypher("expand_hop"), kg="hostile", frontier=[hub], reached=reached, lam=10, scan_limit=10)
            rows = result.data()
            profile = result.consume().profile

    def hits(plan) -> int:  # type: ignore[no-untyped-def]
        return plan.get("dbHits", 0) + sum(hits(child) for child in plan.get("children", []))

    assert {(r["r"], r["o"]) for r in rows} == {(NS.relation("hub_link"), NS.entity("leaf 7")), (NS.relation("to_hub"), NS.entity("plain 0"))}
    assert hits(profile) < 500, hits(profile)
    sg = retrieve(hostile_kg, [hub], hops=2, lam=10)
    assert sg.num_edges < 20 and sg.trace.round_trips == 1


def test_the_whole_retrieval_query_probes_the_hub_too(neo4j_server, hostile_kg):
    """expand_hops.cypher (every hop in one query) keeps the hub's 5,000-edge group unread as well."""
    import neo4j

    with neo4j.GraphDatabase.driver(neo4j_server.url, auth=None, notifications_min_severity="OFF") as driver:
        with driver.session(default_access_mode=neo4j.READ_ACCESS) as session:
            result = session.run("PROFILE " + repeated("expand_hops", 2), kg="hostile", topics=[NS.entity("plain 0")], lam=10)
            row = result.single()
            profile = result.consume().profile

    def hits(plan) -> int:  # type: ignore[no-untyped-def]
        return plan.get("dbHits", 0) + sum(hits(child) for child in plan.get("children", []))

    # plain 0 -to_hub-> hub at hop 1; at hop 2 none of the hub's 5,000 leaves was reached before
    got = {(e[1], e[3], e[4]) for e in row["edges"]}
    assert (NS.relation("to_hub"), NS.entity("hub"), 1) in got
    assert not any(r == NS.relation("hub_link") for r, _, _ in got)
    assert hits(profile) < 500, hits(profile)


class _HopByHop:
    """The same real store seen without `expand_hops`, so `retrieve` asks it hop by hop."""

    def __init__(self, store):  # type: ignore[no-untyped-def]
        self._store = store

    def __getattr__(self, name):  # type: ignore[no-untyped-def]
        if name == "expand_hops":
            raise AttributeError(name)
        return getattr(self._store, name)


@pytest.mark.parametrize("hops,lam", [(0, 10), (1, 10), (2, 10), (3, 10), (3, 5000)])
def test_one_query_retrieval_is_the_hop_by_hop_one(hostile_kg, hops, lam):
    topics = [NS.entity("plain 0"), NS.entity("leaf 7"), NS.entity(HOSTILE[0]), NS.entity("not in the KG")]
    whole = retrieve(hostile_kg, topics, hops, lam)
    stepwise = retrieve(_HopByHop(hostile_kg), topics, hops, lam)  # type: ignore[arg-type]
    assert whole.trace.round_trips == 1 and stepwise.trace.round_trips == hops + 1
    a, b = whole.to_json(), stepwise.to_json()
    assert a.pop("trace")["edges_per_hop"] == b.pop("trace")["edges_per_hop"]
    assert a == b  # same nodes, ids, labels, edges and hops
    assert whole.num_edges > 0 or hops == 0


def test_store_urls_are_checked():
    assert Neo4jTarget.parse("bolt://u:p%40ss@127.0.0.1:7999?database=kg&timeout=5") == Neo4jTarget(
        "bolt://127.0.0.1:7999", "u", "p@ss", "kg", 5.0
    )
    for url, message in [
        ("bolt://127.0.0.1:7999?timeout=-1", "timeout must be > 0"),
        ("bolt://127.0.0.1:7999?db=x", "unknown parameter"),
        ("bolt:///nohost", "a Neo4j URL looks like"),
    ]:
        with pytest.raises(StoreError, match=message):
            Neo4jTarget.parse(url)
    with pytest.raises(StoreError, match="unreachable"):
        open_store("bolt://127.0.0.1:9", "x")
