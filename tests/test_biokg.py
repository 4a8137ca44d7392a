"""The `biokg` reader (NCBI Gene's org.Hs.eg.sqlite and GO.sqlite from Debian's Bioconductor
packages) on a tiny pair of SQLite files with the real files' schema, built here; and, where the
real files are already in the cache, on their first 50,000 records."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

import pyoxigraph as ox
import pytest

from kgqa.core.errors import BadInputLine, KGQAError
from kgqa.core.namespace import KGNamespace
from kgqa.loaders import load_file
from kgqa.loaders.biokg import fetch, kind
from kgqa.loaders.load import source_key
from kgqa.loaders.readers import detect_format, read
from kgqa.sparql.embedded import EmbeddedWriter

KG = "bio"
NS = KGNamespace(KG)

# The tables' DDL as org.Hs.eg.sqlite (Debian r-bioc-org.hs.eg.db 3.16.0) and GO.sqlite (r-bioc-go.db 3.16.0) have it.
_GENE_TABLE = "CREATE TABLE {} (_id INTEGER NOT NULL, {} NOT NULL, FOREIGN KEY (_id) REFERENCES genes (_id))"
ORG_SCHEMA = [
    "CREATE TABLE genes (_id INTEGER PRIMARY KEY, gene_id VARCHAR(10) NOT NULL UNIQUE)",
    "CREATE TABLE gene_info (_id INTEGER NOT NULL UNIQUE, gene_name VARCHAR(255) NOT NULL, symbol VARCHAR(80) NOT NULL, "
    "FOREIGN KEY (_id) REFERENCES genes (_id))",
    _GENE_TABLE.format("genetype", "gene_type VARCHAR(20)"),
    _GENE_TABLE.format("chromosomes", "chromosome VARCHAR(2)"),
    _GENE_TABLE.format("cytogenetic_locations", "cytogenetic_location VARCHAR(20)"),
    _GENE_TABLE.format("alias", "alias_symbol VARCHAR(80)"),
    *(f"CREATE TABLE {t} (_id INTEGER NOT NULL, go_id CHAR(10) NOT NULL, evidence CHAR(3) NOT NULL, "
      "FOREIGN KEY (_id) REFERENCES genes (_id))" for t in ("go_bp", "go_mf", "go_cc", "go_bp_all")),
    _GENE_TABLE.format("kegg", "path_id CHAR(5)"),
    "CREATE TABLE pfam (_id INTEGER NOT NULL, ipi_id CHAR(11), pfam_id CHAR(7) NULL, FOREIGN KEY (_id) REFERENCES genes (_id))",
    "CREATE TABLE prosite (_id INTEGER NOT NULL, ipi_id CHAR(11), prosite_id CHAR(7) NULL, FOREIGN KEY (_id) REFERENCES genes (_id))",
    _GENE_TABLE.format("ec", "ec_number VARCHAR(13)"),
    _GENE_TABLE.format("omim", "omim_id CHAR(6)"),
    _GENE_TABLE.format("uniprot", "uniprot_id VARCHAR(20)"),
    _GENE_TABLE.format("ensembl", "ensembl_id VARCHAR(20)"),
    _GENE_TABLE.format("refseq", "accession VARCHAR(20)"),
    _GENE_TABLE.format("pubmed", "pubmed_id VARCHAR(10)"),
]
GO_SCHEMA = [
    "CREATE TABLE go_term (_id INTEGER PRIMARY KEY, go_id CHAR(10) NOT NULL UNIQUE, term VARCHAR(255) NOT NULL, "
    "ontology VARCHAR(9) NOT NULL, definition TEXT NULL)",
    *(f"CREATE TABLE {t} (_id INTEGER NOT NULL, _parent_id INTEGER NOT NULL, relationship_type VARCHAR(7) NOT NULL)"
      for t in ("go_bp_parents", "go_mf_parents", "go_cc_parents")),
    "CREATE TABLE go_synonym (_id INTEGER NOT NULL, synonym VARCHAR(255) NOT NULL, secondary CHAR(10) NULL, like_go_id SMALLINT)",
]

GENES = [(1, "7157", "tumor protein p53", "TP53"), (2, "672", "BRCA1 DNA repair associated", "BRCA1"), (3, "3630", "insulin", "INS"),
         (4, "25", "ABL proto-oncogene 1, non-receptor tyrosine kinase", "ABL1")]  # a name that sorts before its symbol
ORG_ROWS = {
    "genetype": [(1, "protein-coding"), (2, "protein-coding"), (3, "protein-coding"), (4, "protein-coding")],
    "chromosomes": [(1, "17"), (2, "17"), (3, "11"), (4, "9")],
    "cytogenetic_locations": [(1, "17p13.1"), (2, "17q21.31"), (3, "11p15.5")],
    # TP53's own symbol and another gene's symbol are left out: 2 aliases remain
    "alias": [(1, "TP53"), (1, "P53"), (1, "LFS1"), (1, "BRCA1"), (2, "BRCA1"), (3, "INS")],
    "go_bp": [(1, "GO:0006915", "IDA"), (1, "GO:0006915", "TAS"), (2, "GO:0006281", "IMP"), (3, "GO:0042593", "IDA")],
    "go_mf": [(1, "GO:0003700", "IDA")],
    "go_cc": [(1, "GO:0005634", "IDA"), (2, "GO:0005634", "IDA")],
    "go_bp_all": [(1, "GO:0012501", "IDA")],  # the transitive closure: not read
    "kegg": [(1, "04115"), (2, "03440")],
    "pfam": [(1, "IPI1", "PF00870"), (1, "IPI2", "PF00870"), (1, "IPI3", None)],  # one domain; a NULL is no fact
    "prosite": [(1, "IPI1", "PS00348")],
    "ec": [],
    "omim": [(1, "191170"), (2, "113705")],
    "uniprot": [(1, "P04637")],
    "ensembl": [(1, "ENSG00000141510")],
    "refseq": [(1, "NM_000546")],  # not read
    "pubmed": [(1, "100"), (1, "101"), (2, "101"), (2, "102"), (3, "103")],
}
GO_TERMS = [
    (1, "all", "all", "universal"), (2, "GO:0008150", "biological_process", "BP"), (3, "GO:0006915", "apoptotic process", "BP"),
    (4, "GO:0012501", "programmed cell death", "BP"), (5, "GO:0006281", "DNA repair", "BP"),
    (6, "GO:0043065", "positive regulation of apoptotic process", "BP"), (7, "GO:0003674", "molecular_function", "MF"),
    (8, "GO:0003700", "DNA-binding transcription factor activity", "MF"), (9, "GO:0005575", "cellular_component", "CC"),
    (10, "GO:0005634", "nucleus", "CC"),
]
GO_PARENTS = {
    "go_bp_parents": [(3, 4, "isa"), (4, 2, "isa"), (5, 2, "isa"), (6, 3, "positively regulates"), (2, 1, "isa")],
    "go_mf_parents": [(8, 7, "isa"), (7, 1, "isa")],
    "go_cc_parents": [(10, 9, "part of")],
}
EXPECTED = {  # relation → distinct facts
    "has_gene_type": 4, "located_on_chromosome": 4, "located_at_cytoband": 3, "has_alias": 2, "involved_in_process": 3,
    "has_molecular_function": 1, "located_in_component": 2, "in_pathway": 2, "has_domain": 1, "has_motif": 1,
    "associated_with_omim": 2, "encodes_protein": 1, "has_ensembl_id": 1, "cited_in": 5,
    "is_a": 4, "positively_regulates": 1, "part_of": 1,
}


def _fill(path: Path, schema: list[str], rows: dict[str, list[tuple]]) -> Path:
    con = sqlite3.connect(path)
    for ddl in schema:
        con.execute(ddl)
    for table, values in rows.items():
        for row in values:
            con.execute(f"INSERT INTO {table} VALUES ({', '.join('?' * len(row))})", row)
    con.commit()
    con.close()
    return path


def make_biokg(folder: Path, extra_pubmed: list[tuple] = ()) -> tuple[Path, Path]:  # type: ignore[assignment]
    """org.Hs.eg.sqlite and GO.sqlite side by side in `folder`, as `fetch` leaves them."""
    folder.mkdir(parents=True, exist_ok=True)
    org_rows = {"genes": [g[:2] for g in GENES], "gene_info": [(g[0], g[2], g[3]) for g in GENES], **ORG_ROWS}
    org_rows["pubmed"] = ORG_ROWS["pubmed"] + list(extra_pubmed)
    org = _fill(folder / "org.Hs.eg.sqlite", ORG_SCHEMA, org_rows)
    go = _fill(folder / "GO.sqlite", GO_SCHEMA, {"go_term": [(*t, None) for t in GO_TERMS], **GO_PARENTS})
    return org, go


def _facts(writer: EmbeddedWriter) -> set[tuple[str, str, str]]:
    """The stored facts, by the labels a store shows."""
    quads = list(writer.store.quads_for_pattern(None, None, None, ox.NamedNode(NS.data_graph)))
    reader = writer.reader()
    labels = reader.labels({q.subject.value for q in quads} | {q.object.value for q in quads})
    relation = lambda iri: iri.rsplit(":r:", 1)[1]  # noqa: E731
    return {(labels[q.subject.value], relation(q.predicate.value), labels[q.object.value]) for q in quads}


def test_facts_labels_and_relation_names(tmp_path):
    org, go = make_biokg(tmp_path / "biokg")
    assert (kind(org), kind(go), detect_format(org), detect_format(go)) == ("org", "go", "biokg", "biokg")
    writer = EmbeddedWriter.open(None, KG)
    go_report = load_file(writer, go, "biokg")
    org_report = load_file(writer, org, "biokg")
    assert go_report.labels_written == len(GO_TERMS) - 1  # not the root "all"
    assert org_report.labels_written == len(GENES)  # the symbols (the full names are the labels the facts carry)
    assert go_report.skipped == org_report.skipped == 0
    facts = _facts(writer)
    assert Counter(r for _, r, _ in facts) == EXPECTED
    assert writer.fact_count() == sum(EXPECTED.values())
    for fact in [
        ("TP53", "involved_in_process", "apoptotic process"),  # a GO term by its name from GO.sqlite
        ("TP53", "has_molecular_function", "DNA-binding transcription factor activity"),
        ("BRCA1", "located_in_component", "nucleus"),
        ("TP53", "in_pathway", "KEGG pathway 04115"),
        ("TP53", "has_domain", "Pfam PF00870"),
        ("TP53", "has_motif", "PROSITE PS00348"),
        ("TP53", "located_on_chromosome", "chromosome 17"),
        ("TP53", "located_at_cytoband", "17p13.1"),
        ("TP53", "associated_with_omim", "OMIM 191170"),
        ("TP53", "cited_in", "PubMed 101"),
        ("BRCA1", "cited_in", "PubMed 101"),
        ("TP53", "has_alias", "P53"),
        ("TP53", "encodes_protein", "UniProt P04637"),
        ("TP53", "has_ensembl_id", "Ensembl ENSG00000141510"),
        ("TP53", "has_gene_type", "protein-coding"),
        ("INS", "involved_in_process", "GO:0042593"),  # a term GO.sqlite lacks keeps its id
        ("apoptotic process", "is_a", "programmed cell death"),
        ("positive regulation of apoptotic process", "positively_regulates", "apoptotic process"),
        ("nucleus", "part_of", "cellular_component"),
    ]:
        assert fact in facts
    assert not any("all" in (s, o) for s, _, o in facts)
    assert ("TP53", "has_alias", "BRCA1") not in facts and ("TP53", "has_alias", "TP53") not in facts
    reader = writer.reader()
    tp53 = NS.entity("NCBIGene:7157")  # stable ids as IRIs
    found = reader.resolve(["TP53", "tumor protein p53", "Tumor Protein P53", "apoptotic process", "GO:0006915"])
    assert [e.entity.iri for e in found["TP53"]] == [tp53]
    assert [e.entity.iri for e in found["tumor protein p53"]] == [tp53]
    assert [e.entity.iri for e in found["Tumor Protein P53"]] == [tp53]  # normalised
    assert [e.entity.iri for e in found["apoptotic process"]] == [NS.entity("GO:0006915")]
    abl1 = NS.entity("NCBIGene:25")
    assert reader.labels([tp53, abl1]) == {tp53: "TP53", abl1: "ABL1"}  # the symbol is shown, whatever sorts first
    assert [e.entity.iri for e in reader.resolve(["ABL proto-oncogene 1, non-receptor tyrosine kinase"])[
        "ABL proto-oncogene 1, non-receptor tyrosine kinase"]] == [abl1]
    assert {r.label for r in reader.relations()} == set(EXPECTED)


def test_go_names_come_from_a_go_sqlite_beside_the_org_file_or_later(tmp_path):
    org, go = make_biokg(tmp_path / "both")
    alone = tmp_path / "alone"
    alone.mkdir()
    org_alone = alone / org.name
    org_alone.write_bytes(org.read_bytes())
    writer = EmbeddedWriter.open(None, KG)
    load_file(writer, org_alone, "biokg")
    assert ("TP53", "involved_in_process", "GO:0006915") in _facts(writer)  # no names yet
    load_file(writer, go, "biokg")
    assert ("TP53", "involved_in_process", "apoptotic process") in _facts(writer)  # GO's names are the ones shown


def test_a_stopped_load_resumes_to_the_same_count(tmp_path):
    org, go = make_biokg(tmp_path / "biokg")
    fresh = EmbeddedWriter.open(None, KG)
    load_file(fresh, org, "biokg", batch_size=4)
    expected = fresh.fact_count()

    class Stop(Exception):
        pass

    writer = EmbeddedWriter.open(None, KG)
    write, calls = writer.write_batch, []

    def stop_after_three(facts, state, committed):  # type: ignore[no-untyped-def]
        if len(calls) == 3:
            raise Stop  # a crash before the fourth batch is written
        calls.append(committed)
        write(facts, state, committed)

    writer.write_batch = stop_after_three  # type: ignore[method-assign]
    with pytest.raises(Stop):
        load_file(writer, org, "biokg", batch_size=4)
    assert 0 < writer.fact_count() < expected
    writer.write_batch = write  # type: ignore[method-assign]
    report = load_file(writer, org, "biokg", batch_size=4)
    assert report.resumed_from == calls[-1] > 0
    assert writer.fact_count() == expected and _facts(writer) == _facts(fresh)
    # positions: strictly increasing, the same on every read
    positions = [r.position for r in read(org, "biokg", NS)[0]]
    assert positions == sorted(set(positions)) == [r.position for r in read(org, "biokg", NS)[0]]


def test_a_bad_row_names_its_table_and_rowid(tmp_path):
    org, _ = make_biokg(tmp_path / "biokg", extra_pubmed=[(99, "104"), (1, "")])  # a gene that is not in genes; an empty id
    writer = EmbeddedWriter.open(None, KG)
    with pytest.raises(BadInputLine, match=r"table pubmed, rowid 6: _id 99 has no row in genes"):
        load_file(writer, org, "biokg")
    report = load_file(writer, org, "biokg", skip_bad=True)
    assert report.skipped == 2
    assert sum(1 for _, r, _ in _facts(writer) if r == "cited_in") == EXPECTED["cited_in"]


def test_a_folder_of_both_files_reads_both(tmp_path):
    make_biokg(tmp_path / "biokg")
    items = [r.item for r in read(tmp_path / "biokg", "biokg", NS)[0]]
    relations = Counter(getattr(i, "relation", None) and i.relation.label for i in items)
    assert relations["cited_in"] == 5 and relations["is_a"] == 4  # org first, then GO


def test_kgqa_load_takes_both_files_by_their_names(tmp_path):
    """`kgqa load org.Hs.eg.sqlite GO.sqlite` (the format told by the .sqlite names), then `stats`."""
    import subprocess
    import sys

    org, go = make_biokg(tmp_path / "biokg")
    store = f"oxigraph://{tmp_path / 'store'}"
    run = lambda *args: subprocess.run([sys.executable, "-m", "kgqa", *args], capture_output=True, text=True, timeout=300)  # noqa: E731
    loaded = run("load", str(org), str(go), "--kg", KG, "--store", store)
    assert loaded.returncode == 0, loaded.stderr
    assert f"now holds {sum(EXPECTED.values())} facts" in loaded.stdout
    again = run("load", str(org), str(go), "--kg", KG, "--store", store, "--format", "biokg")
    assert again.stdout.count("already loaded completely") == 2
    stats = run("stats", "--store", store, "--kg", KG, "--json")
    assert stats.returncode == 0, stats.stderr
    assert "involved_in_process" in stats.stdout and "positively_regulates" in stats.stdout


def test_not_a_biokg_file_is_refused_with_its_name(tmp_path):
    other = tmp_path / "other.sqlite"
    _fill(other, ["CREATE TABLE t (x)"], {})
    with pytest.raises(ValueError, match="other.sqlite: not an org"):
        read(other, "biokg", NS)
    text = tmp_path / "text.sqlite"
    text.write_text("hello\n")
    with pytest.raises(ValueError, match="text.sqlite: not an org"):
        read(text, "biokg", NS)


def test_the_real_files_first_records():
    """The Debian files, fetched into the cache on first use (`kgqa.loaders.biokg.fetch`: `apt-get
    download`, ~50 MB, about 10 s; not fetched again): the first 50,000 records of GO.sqlite (its term names,
    then the start of its term graph) and the first 100,000 of org.Hs.eg.sqlite (the 77,614 genes'
    symbols, then facts) loaded, then each load stopped as a killed load stops."""
    try:
        files = fetch()
    except KGQAError as exc:  # no apt-get here (not Debian), or no package mirror
        pytest.skip(f"the BioKG's Debian packages could not be fetched: {exc}")

    class Stop(Exception):
        pass

    writer = EmbeddedWriter.open(None, KG)
    write, limit = writer.write_batch, 0

    def stop_after_limit(facts, state, committed):  # type: ignore[no-untyped-def]
        write(facts, state, committed)
        if committed >= limit:
            raise Stop

    writer.write_batch = stop_after_limit  # type: ignore[method-assign]
    for path, limit in ((files.go, 50_000), (files.org, 100_000)):
        with pytest.raises(Stop):
            load_file(writer, path, "biokg", batch_size=6_000)
        assert limit <= writer.load_state(source_key(path, "biokg")).committed < limit + 6_000
    reader = writer.reader()
    tp53, apoptosis = NS.entity("NCBIGene:7157"), NS.entity("GO:0006915")
    found = reader.resolve(["TP53", "tumor protein p53", "apoptotic process"])
    assert [e.entity.iri for e in found["TP53"]] == [e.entity.iri for e in found["tumor protein p53"]] == [tp53]
    assert [e.entity.iri for e in found["apoptotic process"]] == [apoptosis]
    assert reader.labels([tp53]) == {tp53: "TP53"}
    relations = Counter(r for _, r, _ in _facts(writer))
    assert {"is_a", "has_gene_type"} <= set(relations) <= {"is_a", "part_of", "regulates", "positively_regulates", "negatively_regulates", "has_gene_type"}
    assert ("TP53", "has_gene_type", "protein-coding") in _facts(writer)
    assert writer.fact_count() == sum(relations.values()) > 20_000
