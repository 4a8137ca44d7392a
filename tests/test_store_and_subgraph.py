"""The embedded store's read side and the Subgraph arrays."""

from __future__ import annotations

import pytest
import torch

from kgqa import retrieve
from kgqa.core.errors import StoreError, UnknownKG
from kgqa.loaders import load_file
from kgqa.core.namespace import KGNamespace
from kgqa.sparql.embedded import EmbeddedStore, EmbeddedWriter
from conftest import DEMO_KG

NS = KGNamespace("demo")


def test_resolve_exact_then_normalised(demo_kg):
    store, _ = demo_kg
    found = store.resolve(["Kismet", "KISMET", "william   dieterle.", "No Such Film"])
    assert [h.match for h in found["Kismet"]] == ["exact"]
    assert found["KISMET"][0].entity.iri == NS.entity("Kismet") and found["KISMET"][0].match == "normalised"
    assert found["william   dieterle."][0].entity.label == "William Dieterle"
    assert found["No Such Film"] == []
    assert store.resolve(["directed_by"])["directed_by"] == []  # relations are not entities


def test_counts_relations_and_labels(demo_kg):
    store, triples = demo_kg
    counts = store.counts()
    assert counts.facts == len(set(triples))
    assert counts.entities == len({e for s, _, o in triples for e in (s, o)})
    by_label = {r.label: r.facts for r in store.relations()}
    assert by_label["hub_link"] == 400 and sum(by_label.values()) == counts.facts
    assert store.labels([NS.entity("Kismet"), NS.relation("directed_by")]) == {
        NS.entity("Kismet"): "Kismet", NS.relation("directed_by"): "directed_by"}


def test_subgraph_arrays_and_pyg(demo_kg):
    store, _ = demo_kg
    sg = retrieve(store, [NS.entity("Kismet")], hops=2, lam=100)
    assert sg.edge_index.dtype.name == "int64" and sg.edge_index.shape == (2, sg.num_edges)
    assert set(sg.edge_hop.tolist()) == {1, 2} and sg.node_hop[sg.topics].tolist() == [0]
    assert sg.edge_type.max() < sg.num_relation_types
    data = sg.to_pyg()
    assert data.num_nodes == sg.num_nodes and data.edge_index.shape == (2, sg.num_edges)
    assert data.edge_index.data_ptr() == torch.from_numpy(sg.edge_index).data_ptr()  # shared, not copied
    assert int(data.topic_mask.sum()) == 1
    data.validate(raise_on_error=True)
    payload = sg.to_json()
    assert len(payload["edges"]) == sg.num_edges and payload["trace"]["round_trips"] == 3


def test_hop_zero_and_bad_parameters(demo_kg):
    store, _ = demo_kg
    sg = retrieve(store, [NS.entity("Kismet")], hops=0)
    assert sg.num_nodes == 1 and sg.num_edges == 0
    with pytest.raises(ValueError, match="lam"):
        retrieve(store, [NS.entity("Kismet")], lam=-1)
    with pytest.raises(ValueError, match="topic"):
        retrieve(store, [], hops=1)


def test_on_disk_store_opens_read_only(tmp_path):
    writer = EmbeddedWriter.open(tmp_path / "s", "demo")
    load_file(writer, DEMO_KG)
    del writer
    store = EmbeddedStore.open(tmp_path / "s")
    assert store.kg == "demo"
    with pytest.raises(RuntimeError, match="read-write"):
        store._store.update("INSERT DATA { <urn:a:b> <urn:a:b> <urn:a:b> }")
    with pytest.raises(UnknownKG, match="no KG named 'other'"):
        EmbeddedStore.open(tmp_path / "s", "other")
    with pytest.raises(StoreError, match="no embedded store"):
        EmbeddedStore.open(tmp_path / "nothing-here")


def test_rows_read_from_tsv_are_the_terms_lexical_values():
    """The embedded store reads results as SPARQL TSV (`embedded._rows`): every kind of term comes back as the
    term object's `.value` would give it — escapes undone, language tags and datatypes dropped, numbers and
    booleans as written, blank nodes by id — and an unbound variable is absent, even a row's only one."""
    import pyoxigraph as ox

    from kgqa.sparql.embedded import _rows

    xsd = "http://www.w3.org/2001/XMLSchema#"
    texts = ['x" } ; DROP ALL', "line\nbreak\r\ttab", "back\\slash\\", '"""triple"""', "\x00\x01\x7f\b\f control", "unicode ✓ ⁻¹ Michèle 𝄞",
             "", "a\\nb", "tab\tend\\", "<not an IRI>", "_:not a blank node"]
    terms = [ox.Literal(t) for t in texts] + [ox.Literal(t, language="en") for t in texts[:3]]
    terms += [ox.Literal(v, datatype=ox.NamedNode(xsd + d)) for v, d in
              [("1944", "gYear"), ("01", "integer"), ("-3", "integer"), ("2.50", "decimal"), ("1.5e0", "double"), ("true", "boolean"), ("0", "boolean")]]
    terms += [ox.NamedNode("urn:x:a%20b(c)"), ox.NamedNode("http://ex.org/é#x"), ox.BlankNode("b0")]
    store = ox.Store()
    for i, term in enumerate(terms):
        store.add(ox.Quad(ox.NamedNode(f"urn:s:{i}"), ox.NamedNode("urn:p"), term))
    query = "SELECT ?s ?o ?none ?n ?b WHERE { ?s <urn:p> ?o OPTIONAL { ?s <urn:q> ?none } BIND(7 AS ?n) BIND(false AS ?b) } ORDER BY ?s"
    expected = [{"s": q.subject.value, "o": q.object.value, "n": "7", "b": "false"} for q in store.quads_for_pattern(None, None, None)]
    assert sorted(_rows(store.query(query)), key=lambda r: r["s"]) == sorted(expected, key=lambda r: r["s"])
    assert _rows(store.query("SELECT ?none WHERE { ?s <urn:p> ?o OPTIONAL { ?s <urn:q> ?none } }")) == [{}] * len(terms)
    assert _rows(store.query("SELECT ?x WHERE { ?x <urn:none> ?y }")) == []
