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
