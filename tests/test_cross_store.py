"""Cross-store equivalence on real KGs (../shared/data): the embedded store, `oxigraph serve`,
Virtuoso and Neo4j return the same APP subgraph — same edges, same hops, same labels — for the same
topics."""

from __future__ import annotations

import gzip
import json
import random
import re
import time

import pytest

from kgqa import open_store, open_writer, retrieve
from kgqa.loaders import load_file
from kgqa.sparql.embedded import EmbeddedWriter
from kgqa.sparql.endpoint import SparqlEndpointStore
from conftest import all_label_pages, shared_data


def _load_everywhere(kg: str, files: list[tuple[str, str | None]], oxigraph_server, virtuoso_server, neo4j_server) -> dict:
    stores = {}
    embedded = EmbeddedWriter.open(None, kg)
    for path, fmt in files:
        load_file(embedded, path, fmt)
    stores["embedded"] = embedded.reader()
    for name, writer_url, reader_url in [
        ("oxigraph-server", "oxigraph+" + oxigraph_server.url, "oxigraph+" + oxigraph_server.url),
        ("virtuoso", virtuoso_server.writer_url, "sparql+" + virtuoso_server.sparql_url),
        ("neo4j", neo4j_server.url, neo4j_server.url),
    ]:
        started = time.perf_counter()
        writer = open_writer(writer_url, kg)
        for path, fmt in files:
            load_file(writer, path, fmt)
        writer.close()
        print(f"{kg} into {name}: {time.perf_counter() - started:.1f}s")
        stores[name] = store = open_store(reader_url, kg)
        if isinstance(store, SparqlEndpointStore):
            # What is compared here is the subgraph, not its speed (bench/ measures that). In one CI run
            # (2026-12-05) Virtuoso passed the default 57 s limit on a 3-hop FB15k-237 retrieval that
            # takes it 0.5 s (0.45-0.52 s in 30 runs here, each after its procedure was installed again).
            stores[name] = SparqlEndpointStore.connect(store.url, kg, timeout=300, max_values=store.max_values)
            store.close()
    return stores


def _assert_same(stores: dict, topics: list[str], hops: int, lam: int) -> None:
    results = {name: retrieve(store, topics, hops, lam) for name, store in stores.items()}
    reference = results.pop("embedded")
    for name, sg in results.items():
        assert sg.edge_set() == reference.edge_set() and sg.num_edges == reference.num_edges, (name, topics, hops, lam)
        assert sg.nodes == reference.nodes and sg.node_labels == reference.node_labels, (name, topics, hops, lam)
        assert sg.relations == reference.relations and sg.relation_labels == reference.relation_labels, (name, topics, hops, lam)
    # one round trip per hop (+ labels); an endpoint with a VALUES limit may slice long lists
    assert reference.trace.round_trips <= hops + 1


@pytest.fixture(scope="module")
def metaqa_stores(oxigraph_server, virtuoso_server, neo4j_server):
    kb = shared_data("metaqa", "kb_reconstructed.txt")
    return _load_everywhere("metaqa", [(str(kb), None)], oxigraph_server, virtuoso_server, neo4j_server)


@pytest.fixture(scope="module")
def fb15k_stores(oxigraph_server, virtuoso_server, neo4j_server, tmp_path_factory):
    train = shared_data("fb15k237", "train.txt.gz")
    with gzip.open(shared_data("fb15k237", "entity2wikidata.json.gz"), "rt", encoding="utf-8") as f:
        names = json.load(f)
    labels = tmp_path_factory.mktemp("fb15k") / "labels.tsv"
    labels.write_text("".join(f"{mid}\t{info['label']}\n" for mid, info in sorted(names.items()) if info.get("label")), encoding="utf-8")
    return _load_everywhere("fb15k237", [(str(train), "tsv"), (str(labels), "labels")], oxigraph_server, virtuoso_server, neo4j_server)


def test_metaqa_same_subgraph_on_every_store(metaqa_stores):
    sets = []
    for hop in (1, 2, 3):
        with open(shared_data("metaqa", f"{hop}-hop", "qa_dev.txt"), encoding="utf-8") as f:
            sets += [re.findall(r"\[([^\]]+)\]", line.split("\t")[0]) for line in f]
    embedded = metaqa_stores["embedded"]
    checked = 0
    for names in random.Random(3).sample(sets, 330):
        topics = [hits[0].entity.iri for hits in embedded.resolve(names).values() if hits]
        if not topics:
            continue  # the reconstructed KB lacks a few topics
        for hops in (1, 2, 3):
            for lam in (10, 100):
                _assert_same(metaqa_stores, topics, hops, lam)
        checked += 1
    assert checked >= 300


def test_fb15k237_same_subgraph_on_every_store(fb15k_stores):
    embedded = fb15k_stores["embedded"]
    assert embedded.labels([embedded.ns.entity("/m/010016")]) == {embedded.ns.entity("/m/010016"): "Denton"}
    for name, store in fb15k_stores.items():
        assert store.counts() == embedded.counts(), name
    with gzip.open(shared_data("fb15k237", "train.txt.gz"), "rt", encoding="utf-8") as f:
        entities = sorted({line.split("\t")[0] for line in f})
    rng = random.Random(5)
    # 3 hops at λ=100 reach up to ~100k edges per topic on FB15k-237: minutes per topic set on the
    # servers, so that configuration is left to the MetaQA test above.
    configs = [(1, 10), (1, 100), (2, 10), (2, 100), (3, 10)]
    for i in range(100):
        topics = [embedded.ns.entity(e) for e in rng.sample(entities, rng.choice([1, 2]))]
        hops, lam = configs[i % len(configs)]
        _assert_same(fb15k_stores, topics, hops, lam)


def test_fb15k237_subject_relations_are_the_files_on_every_store(fb15k_stores):
    """What the answer's kind reads Freebase types from: the relations an entity is the subject of."""
    subject_of: dict[str, set[str]] = {}
    objects = set()
    with gzip.open(shared_data("fb15k237", "train.txt.gz"), "rt", encoding="utf-8") as f:
        for line in f:
            s, r, o = line.rstrip("\n").split("\t")
            subject_of.setdefault(s, set()).add(r)
            objects.add(o)
    rng = random.Random(7)
    mids = rng.sample(sorted(subject_of), 60) + sorted(objects - set(subject_of))[:5]  # some are only objects
    ns = fb15k_stores["embedded"].ns
    expected = {ns.entity(m): sorted(subject_of[m]) for m in mids if m in subject_of}
    for name, store in fb15k_stores.items():
        found = store.subject_relations([ns.entity(m) for m in mids])
        assert {e: sorted(rs) for e, rs in found.items()} == expected, name


def test_the_biokg_reader_loads_alike_into_every_store(oxigraph_server, virtuoso_server, neo4j_server, tmp_path):
    """Issue 45's real graph in every store: a slice shaped as Debian's org.Hs.eg.sqlite and GO.sqlite
    (tests/test_biokg.py), loaded by `--format biokg` into each store, holds the same facts and gives
    the same subgraph around a gene, a GO term and a chromosome."""
    from test_biokg import make_biokg

    org, go = make_biokg(tmp_path / "biokg")
    stores = _load_everywhere("bioslice", [(str(org), "biokg"), (str(go), "biokg")], oxigraph_server, virtuoso_server, neo4j_server)
    embedded = stores["embedded"]
    pairs = all_label_pages(embedded, 500)
    for name, store in stores.items():
        assert store.counts() == embedded.counts(), name
        # the labels `kgqa synth` reads in one pass (a stream, or pages that seek) are the sorted pages'
        assert sorted(store.label_pairs(page=7)) == pairs, name
    found = embedded.resolve(["TP53", "apoptotic process", "chromosome 17"])
    assert all(found.values()), found
    for hits in found.values():
        for hops in (1, 2, 3):
            _assert_same(stores, [hits[0].entity.iri], hops, 100)
