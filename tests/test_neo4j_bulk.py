"""`kgqa load --bulk`: a new Neo4j database built by Neo4j's own importer from kgqa's CSV files holds
what the Bolt loader writes — same counts, labels, aliases and APP subgraphs as the reference store —
and, once the first writer has built kgqa's indexes, finds its files already loaded. A rerun is
"already complete"; bad lines name file:line and import nothing; a database is never replaced
without --overwrite."""

from __future__ import annotations

import logging
import random
import subprocess
import sys

import pytest
from conftest import all_label_pages
from launchers import Neo4jServer, ensure_neo4j_jars

from kgqa import open_store, open_writer, retrieve
from kgqa.core.errors import BadInputLine
from kgqa.cypher.bulk import BulkImportError, bulk_load
from kgqa.loaders import load_file
from kgqa.sparql.embedded import EmbeddedWriter

pytestmark = pytest.mark.slow
KG = "bulk"


def kgqa(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kgqa", *args], capture_output=True, text=True, timeout=600)


def test_bad_input_and_an_existing_database_are_refused_before_anything_is_written(tmp_path, demo_file):
    home = tmp_path / "home"
    home.mkdir()
    bad = tmp_path / "bad.txt"
    bad.write_text("a|r|b\nonly two|fields\n", encoding="utf-8")
    with pytest.raises(BadInputLine, match=r"bad\.txt:2"):
        bulk_load(home, KG, [bad])
    assert not (home / "data").exists()
    (home / "data" / "databases" / "neo4j").mkdir(parents=True)
    with pytest.raises(BulkImportError, match="--overwrite"):
        bulk_load(home, KG, [demo_file])
    with pytest.raises(BulkImportError, match="no such file"):
        bulk_load(home, KG, [tmp_path / "absent.txt"])
    both = kgqa("load", str(demo_file), "--kg", KG, "--bulk", str(home), "--store", "bolt://127.0.0.1:1")
    assert both.returncode != 0 and "leave --store out" in both.stderr and "Traceback" not in both.stderr


def test_bulk_import_holds_what_the_bolt_loader_writes(tmp_path, demo_file, caplog):
    ensure_neo4j_jars()
    labels = tmp_path / "labels.tsv"
    # an alias for an entity with facts, a second for the same text, and an entity named only here
    labels.write_text("Kismet\tKismet (1944 film)\nWilliam Dieterle\tDieterle\nOnly Named\tA \"quoted\", named thing\n", encoding="utf-8")
    files = [demo_file, labels]
    home = tmp_path / "neo4j" / "home"
    home.mkdir(parents=True)
    imported = kgqa("load", str(demo_file), str(labels), "--format", "metaqa", "--kg", KG, "--bulk", str(home))
    # one --format for both files: the labels file is no MetaQA file, and its first line says so
    assert imported.returncode != 0 and "labels.tsv:1" in imported.stderr and "Traceback" not in imported.stderr
    assert not (home / "data").exists()
    first = bulk_load(home, KG, files, [None, "labels"])
    reference_writer = EmbeddedWriter.open(None, KG)
    for path, fmt in zip(files, [None, "labels"]):
        load_file(reference_writer, path, fmt)
    reference = reference_writer.reader()
    assert (first.facts, first.entities) == (reference.counts().facts, reference.counts().entities) and not first.already_complete
    again = kgqa("load", str(demo_file), str(labels), "--format", "metaqa", "--format", "labels", "--kg", KG, "--bulk", str(home))
    assert again.returncode == 0 and "already holds these files" in again.stdout, again.stderr

    with Neo4jServer(tmp_path / "neo4j") as server:
        with caplog.at_level(logging.WARNING, logger="kgqa.cypher.store"):
            before_indexes = open_store(server.url, KG)
        assert "indexes are not built yet" in caplog.text
        assert before_indexes.counts() == reference.counts()
        before_indexes.close()
        # the first writer builds the indexes and finds both files loaded
        writer = open_writer(server.url, KG)
        for path, fmt in zip(files, [None, "labels"]):
            assert load_file(writer, path, fmt).already_complete
        writer.close()
        caplog.clear()
        store = open_store(server.url, KG)
        assert "indexes are not built yet" not in caplog.text
        assert store.counts() == reference.counts()
        assert all_label_pages(store, 500) == all_label_pages(reference, 500)
        assert {r.iri: (r.label, r.facts) for r in store.relations()} == {r.iri: (r.label, r.facts) for r in reference.relations()}
        ns = reference.ns
        named = [ns.entity("Kismet"), ns.entity("Only Named"), ns.entity("HUB")]
        assert store.labels(named) == reference.labels(named)
        assert store.resolve(["Dieterle", "Kismet (1944 film)"]) == reference.resolve(["Dieterle", "Kismet (1944 film)"])
        entities = sorted(iri for iri, _ in all_label_pages(reference, 500))
        rng = random.Random(11)
        for i in range(40):
            topics = [ns.entity("HUB")] if i % 8 == 0 else rng.sample(entities, rng.choice([1, 2]))
            hops, lam = [(1, 10), (2, 10), (2, 100), (3, 100)][i % 4]
            got, want = retrieve(store, topics, hops, lam), retrieve(reference, topics, hops, lam)
            assert got.edge_set() == want.edge_set() and got.nodes == want.nodes, (topics, hops, lam)
            assert got.node_labels == want.node_labels and got.relation_labels == want.relation_labels, (topics, hops, lam)
        # the database takes Bolt writes beside the import: a new fact lands and is counted
        extra = tmp_path / "extra.txt"
        extra.write_text("Kismet|sequel_of|Only Named\n", encoding="utf-8")
        writer = open_writer(server.url, KG)
        assert load_file(writer, extra).facts_in_store == reference.counts().facts + 1
        writer.close()
        store.close()


def test_the_spool_sorts_on_disk_to_what_the_facts_say(tmp_path):
    """Without Neo4j: the CSV files written from the on-disk spool hold each fact once, each entity's
    first label (tabs, line breaks and backslashes kept), its fan-out lists and one node per alias text."""
    import csv

    from kgqa.core.store import SourceFact, SourceNode
    from kgqa.cypher.bulk import ARRAY_DELIMITER, BulkReport, _Spool, _write_csv

    def node(iri: str, label: str | None = None) -> SourceNode:
        return SourceNode(f"urn:x:{iri}", label)

    facts = [(node("a", "first\tlabel\\n"), node("r"), node("b", "line\nbreak")), (node("a", "second"), node("r"), node("c")),
             (node("a"), node("r"), node("b")), (node("c"), node("q"), node("a")), (node("a"), node("q"), node("c"))]
    spool = _Spool(tmp_path)
    for s, r, o in facts:
        spool.add(SourceFact(s, r, o))
    spool.add_alias("urn:x:only", "Only \"named\"")
    spool.add_alias("urn:x:a", "Only \"named\"")
    spool.add_alias("urn:x:a", "Only \"named\"")
    spool.positions["file"] = 7
    spool.close()
    report = BulkReport("home", "neo4j", KG, ["file"])
    arguments = _write_csv(tmp_path, spool, KG, ["file"], report)
    assert "--multiline-fields=true" in arguments and (report.facts, report.entities, report.relations, report.aliases) == (4, 4, 2, 1)
    with open(tmp_path / "entities.csv", encoding="utf-8", newline="") as f:
        rows = {row["iri:ID(Entity)"]: row for row in csv.DictReader(f)}
    assert rows["urn:x:a"]["label"] == "first\tlabel\\n" and rows["urn:x:b"]["label"] == "line\nbreak" and rows["urn:x:only"]["label"] == ""
    a = rows["urn:x:a"]
    assert (a["out_rel:string[]"].split(ARRAY_DELIMITER), a["out_n:long[]"].split(ARRAY_DELIMITER)) == (["urn:x:q", "urn:x:r"], ["1", "2"])
    assert (a["in_rel:string[]"], a["in_n:long[]"]) == ("urn:x:q", "1")
    with open(tmp_path / "facts.csv", encoding="utf-8", newline="") as f:
        assert len(list(csv.DictReader(f))) == 4
    with open(tmp_path / "names.csv", encoding="utf-8", newline="") as f:
        assert sorted(row[":END_ID(Entity)"] for row in csv.DictReader(f)) == ["urn:x:a", "urn:x:only"]
    assert not list(tmp_path.glob("*.tsv*"))  # the spool's files are gone once the CSV files are written
    (tmp_path / "again").mkdir()
    refusing = _Spool(tmp_path / "again")
    with pytest.raises(BulkImportError, match="control character"):  # it would break the sorted merge
        refusing.add(SourceFact(node("a\x01b"), node("r"), node("c")))
    refusing.close()
