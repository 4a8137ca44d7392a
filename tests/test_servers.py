"""Real servers — `oxigraph serve`, Virtuoso 7 and Neo4j 5.26 — loaded through their writers, read
through their query interfaces (SPARQL endpoints, Bolt): the same subgraphs as the embedded store."""

from __future__ import annotations

import bisect
import random
from pathlib import Path

import pytest

from conftest import all_label_pages

from kgqa import open_store, open_writer, retrieve
from kgqa.core.errors import StoreError
from kgqa.loaders import load_file
from kgqa.retrieval.linking import link
from kgqa.core.namespace import KGNamespace
from kgqa.sparql.endpoint import EndpointError, SparqlEndpointStore


def _urls(request) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    """(writer URL, reader URL) for the server a test is parametrised with."""
    if request.param == "oxigraph":
        server = request.getfixturevalue("oxigraph_server")
        return "oxigraph+" + server.url, "oxigraph+" + server.url
    if request.param == "neo4j":
        server = request.getfixturevalue("neo4j_server")
        return server.url, server.url
    server = request.getfixturevalue("virtuoso_server")
    return server.writer_url, "sparql+" + server.sparql_url


@pytest.fixture(scope="module", params=["oxigraph", "virtuoso", "neo4j"])
def server_store(request, demo_file):
    writer_url, reader_url = _urls(request)
    writer = open_writer(writer_url, "demo")
    first = load_file(writer, demo_file)
    again = load_file(writer, demo_file, force=True)
    assert first.facts_in_store == again.facts_in_store  # idempotent on the server too
    writer.close()
    return open_store(reader_url, "demo")  # other tests add KGs to the same session servers


def test_misspelt_names_link_as_on_the_embedded_store_through_each_stores_own_label_index(server_store, demo_kg):
    """Neo4j's full-text index, Virtuoso's free-text index and the SQLite index the oxigraph-server
    loader wrote: the same topics as the embedded store's index for misspelt names."""
    embedded, _ = demo_kg
    for question in ("which films did William Dieterel direct", "who directed Zorrba the Greek", "who directed kismett",
                     "which films did Dieterle William direct"):
        ours, theirs = link(server_store, question), link(embedded, question)
        assert ours.iris == theirs.iris and ours.iris, (question, ours.topics_json(), theirs.topics_json())
        assert [t.match for t in ours.topics] == [t.match for t in theirs.topics], question


def test_server_subgraphs_equal_embedded(server_store, demo_kg):
    embedded, triples = demo_kg
    entities = sorted({e for s, _, o in triples for e in (s, o)})
    hub = KGNamespace("demo").entity("HUB")
    rng = random.Random(11)
    for i in range(100):
        topics = rng.sample(entities, rng.choice([1, 2])) + ([hub] if i % 5 == 0 else [])
        hops, lam = 1 + i % 3, (2, 10, 100)[i % 3]
        a = retrieve(server_store, topics, hops, lam)
        b = retrieve(embedded, topics, hops, lam)
        assert a.edge_set() == b.edge_set() and a.num_edges == b.num_edges, (topics, hops, lam)
        assert a.nodes == b.nodes and a.node_labels == b.node_labels
        # Virtuoso: one call of kgqa's APP procedure (virtuoso_app.sql); Neo4j: one Cypher query;
        # Oxigraph: one per hop plus one for the labels.
        if isinstance(server_store, SparqlEndpointStore) and server_store.is_virtuoso:
            assert a.trace.round_trips == 1 and server_store.has_app_procedure, (topics, hops, lam)
        assert a.trace.round_trips <= hops + 1, (topics, hops, lam)


@pytest.fixture(params=["oxigraph", "virtuoso", "neo4j"])
def server_urls(request) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    return _urls(request)


def _loaded_both_ways(server_urls: tuple[str, str], kg: str, files: list[tuple[Path, str | None]]):  # type: ignore[no-untyped-def]
    """(the server's reader, an in-memory embedded reference), both holding `files` as KG `kg`."""
    from kgqa.sparql.embedded import EmbeddedWriter

    writer_url, reader_url = server_urls
    embedded = EmbeddedWriter.open(None, kg)
    writer = open_writer(writer_url, kg)
    for w in (embedded, writer):
        for path, fmt in files:
            load_file(w, path, fmt)
    writer.close()
    return open_store(reader_url, kg), embedded.reader()


def test_entities_with_several_labels_give_each_edge_once(server_urls, tmp_path):
    """A labels file adds a second label to ids that already have one; where labels come back with
    the edges (Virtuoso), an entity with two labels must not make its edges count twice."""
    kb, names = tmp_path / "kb.tsv", tmp_path / "names.tsv"
    kb.write_text("/m/a\t/film/directed_by\t/m/b\n/m/a\t/film/genre\t/m/c\n/m/d\t/film/directed_by\t/m/b\n", encoding="utf-8")
    names.write_text("/m/a\tKismet\n/m/b\tWilliam Dieterle\n/m/b\tW. Dieterle\n/m/c\tDrama\n", encoding="utf-8")
    store, reference = _loaded_both_ways(server_urls, "labelled", [(kb, None), (names, "labels")])
    topic = KGNamespace("labelled").entity("/m/a")
    for hops, lam in [(1, 10), (2, 10), (2, 1)]:
        a, b = retrieve(store, [topic], hops, lam), retrieve(reference, [topic], hops, lam)
        assert a.num_edges == b.num_edges and a.edge_set() == b.edge_set(), (hops, lam)
        assert a.node_labels == b.node_labels and a.relation_labels == b.relation_labels


def test_labels_with_quotes_commas_tabs_and_newlines_come_back_whole(server_urls, tmp_path):
    """Endpoints answer in CSV (endpoint.py): a label with the characters CSV quotes or splits on
    must come back exactly as loaded, and so must the edges beside it."""
    import pyoxigraph as ox

    awkward = ['Say "hi", then go', "tab\there", "two\nlines", "back\\slash \u00e9\u6f22", " padded ", "comma,only"]
    node, label_of = (lambda i: ox.NamedNode(f"urn:x:e{i}")), ox.NamedNode("http://www.w3.org/2000/01/rdf-schema#label")
    triples = [ox.Triple(node(0), ox.NamedNode("urn:x:r"), node(i)) for i in range(1, len(awkward))]
    triples += [ox.Triple(node(i), label_of, ox.Literal(label)) for i, label in enumerate(awkward)]
    kb = tmp_path / "awkward.nt"
    kb.write_bytes(ox.serialize(triples, format=ox.RdfFormat.N_TRIPLES))
    store, reference = _loaded_both_ways(server_urls, "awkward", [(kb, None)])
    got, want = retrieve(store, ["urn:x:e0"], 1, 10), retrieve(reference, ["urn:x:e0"], 1, 10)
    assert got.edge_set() == want.edge_set() and got.num_edges == want.num_edges == 5
    assert got.node_labels == want.node_labels
    assert dict(zip(got.nodes, got.node_labels)) == {f"urn:x:e{i}": label for i, label in enumerate(awkward)}
    assert store.resolve(['Say "hi", then go'])['Say "hi", then go'][0].entity.iri == "urn:x:e0"


def test_server_store_reads_like_the_embedded_one(server_store, demo_kg):
    embedded, _ = demo_kg
    assert server_store.kg == "demo"
    assert server_store.counts() == embedded.counts()
    assert server_store.relations() == embedded.relations()
    assert server_store.resolve(["kismet", "No Such Film"]) == embedded.resolve(["kismet", "No Such Film"])



def test_label_pages_are_the_same_on_every_store(server_store, demo_kg):
    """The linker's fallback index is read page by page (keyset on (IRI, label)); a page must neither
    skip nor repeat a pair, and every store must give the same pairs in the same order. The whole
    index is read once in pages of 500; the keyset itself is checked with pages of 7 after chosen keys
    (every page of 7 from every server took ten minutes)."""
    embedded, _ = demo_kg
    whole = all_label_pages(embedded, 100_000)
    assert len(whole) >= embedded.counts().entities and whole == sorted(whole)
    assert all_label_pages(server_store, 500) == whole
    positions = sorted({0, 1, len(whole) - 8, len(whole) - 3, len(whole) - 1, *range(0, len(whole), max(1, len(whole) // 25))})
    for store in (embedded, server_store):
        assert store.label_page(None, 7) == whole[:7]
        for i in positions:
            iri, label = whole[i]
            assert store.label_page((iri, label), 7) == whole[i + 1:i + 8], (store, i)
            first = bisect.bisect_left(whole, (iri, ""))  # the IRI's first label
            assert store.label_page((iri, ""), 7) == whole[first:first + 7], (store, i)  # same IRI, a smaller label


def test_label_pairs_are_read_in_one_pass_where_the_store_gives_them_whole(server_store, demo_kg, monkeypatch):
    """`kgqa index` over a store reads every label once: an endpoint sends them as one streamed result
    (Neo4j: one streamed query); an endpoint that refuses that query is read in sorted pages (one that
    cuts it, test_virtuoso). Queries asked while it streams, and a reader stopped half-way, leave the
    store usable."""
    import kgqa.sparql.endpoint as endpoint

    embedded, _ = demo_kg
    whole = all_label_pages(embedded, 100_000)
    before = server_store.round_trips
    assert sorted(server_store.label_pairs(page=40)) == whole
    if isinstance(server_store, SparqlEndpointStore):
        pages = len(whole) // 40 + 1
        assert server_store.round_trips - before == 1
        partly = server_store.label_pairs(page=40)
        first = [next(partly) for _ in range(3)]
        assert server_store.counts() == embedded.counts()  # asked meanwhile: on a connection of its own
        assert sorted(first + list(partly)) == whole
        stopped = server_store.label_pairs(page=40)
        next(stopped)
        stopped.close()  # the reply half read: its connection is closed, the next query gets a fresh one
        assert server_store.counts() == embedded.counts()
        refused = endpoint.render
        monkeypatch.setattr(endpoint, "render", lambda name, **terms: "SELECT nonsense" if name == "label_pairs" else refused(name, **terms))
        before = server_store.round_trips
        assert sorted(server_store.label_pairs(page=40)) == whole
        assert server_store.round_trips - before == 1 + pages


def test_endpoint_errors_are_clear(oxigraph_server):
    with pytest.raises(EndpointError, match="unreachable"):
        SparqlEndpointStore.connect("http://127.0.0.1:9/query")
    with pytest.raises(StoreError, match="no KG named 'nope'"):
        SparqlEndpointStore.connect(oxigraph_server.url + "/query", "nope")
    with pytest.raises(StoreError, match="read-only SPARQL endpoint"):
        open_writer("sparql+" + oxigraph_server.url + "/query", "demo")


def test_a_404_from_virtuoso_that_answered_before_is_asked_again_a_bounded_number_of_times(monkeypatch):
    """Virtuoso answers 404 on its endpoint while it writes a checkpoint; a store that knows it is
    talking to Virtuoso asks again after a pause (the pauses bounded), and an endpoint it has not
    heard from yet (a wrong URL) fails at once."""
    import kgqa.sparql.endpoint as endpoint

    pauses: list[float] = []
    monkeypatch.setattr(endpoint.time, "sleep", pauses.append)
    replies: list[tuple[int, dict[str, str], bytes]] = []
    store = SparqlEndpointStore("http://127.0.0.1:9/sparql", "kg")
    store._http.post = lambda *args, **kwargs: replies.pop(0)  # type: ignore[method-assign]
    virtuoso = {"server": "Virtuoso/07.20.3240 (Linux) x86_64-pc-linux-gnu"}
    replies[:] = [(404, virtuoso, b"Not found")]
    with pytest.raises(EndpointError, match="HTTP 404"):
        store._post("kgs.rq", {"query": "ASK {}"}, "text/csv")
    assert pauses == [] and store.is_virtuoso
    replies[:] = [(404, virtuoso, b"Not found"), (404, virtuoso, b"Not found"), (200, virtuoso, b"x\r\n1\r\n")]
    assert store._post("kgs.rq", {"query": "ASK {}"}, "text/csv")[1] == b"x\r\n1\r\n"
    assert pauses == list(endpoint.CHECKPOINT_PAUSES_S[:2])
    pauses.clear()
    replies[:] = [(404, virtuoso, b"Not found")] * (len(endpoint.CHECKPOINT_PAUSES_S) + 1)
    with pytest.raises(EndpointError, match="HTTP 404"):
        store._post("kgs.rq", {"query": "ASK {}"}, "text/csv")
    assert pauses == list(endpoint.CHECKPOINT_PAUSES_S) and replies == []


def test_labels_beyond_ascii_resolve_on_every_server(server_urls, tmp_path):
    """Exact and normalised look-ups of accented and non-Latin labels find what the embedded store
    finds (Virtuoso writes a term of the query text back as Latin-1, '?' for the rest: a resolver that
    read its own terms back lost "Tōkyō Story" and failed on "Les Misérables")."""
    kb = tmp_path / "intl.txt"
    kb.write_text("Les Misérables|in_language|French\nTōkyō Story|directed_by|Yasujirō Ozu\n東京物語|directed_by|小津安二郎\n", encoding="utf-8")
    store, reference = _loaded_both_ways(server_urls, "intl", [(kb, None)])
    asked = ["Les Misérables", "Tōkyō Story", "東京物語", "小津安二郎", "les miserables", "TOKYO STORY!", "東京物語 !", "Nowhere"]
    got, want = store.resolve(asked), reference.resolve(asked)
    assert got == want
    for label in asked:  # alone, as a request's one topic is (a query without a term beyond Latin-1)
        assert store.resolve([label]) == reference.resolve([label]), label
    assert [h.entity.label for label in asked[:7] for h in want[label]] == asked[:4] + ["Les Misérables", "Tōkyō Story", "東京物語"]
