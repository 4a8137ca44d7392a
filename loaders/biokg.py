"""A real biomedical KG from the two SQLite files Debian ships for Bioconductor: NCBI Gene's human
annotations (`r-bioc-org.hs.eg.db`: org.Hs.eg.sqlite) and the Gene Ontology (`r-bioc-go.db`:
GO.sqlite). Both are Artistic-2.0; `fetch` downloads the packages with `apt-get download` and
unpacks them with `dpkg -x` (never installs them: that would pull in R).

The `biokg` reader streams facts from either file (or a folder holding both), one table after the
other in a fixed order, each in rowid order, with a running record counter as the position, so a
load that stops resumes exactly. Entities get stable ids as IRIs (`NCBIGene:7157`, `GO:0006915`,
`Pfam:PF00870`, …, minted under the KG's namespace as the TSV reader mints names) and readable
labels: a gene is shown as `TP53`, its symbol (given as a `Label` record: a given label is the one
a store shows) and also links by `tumor protein p53`, its full name (the label its facts carry);
a GO term is shown by its name from GO.sqlite (also given as a `Label`). Memory stays flat: cursors stream the rows, and
only GO's ~44k term names are held in a dict (to label the GO terms of gene annotations when
GO.sqlite lies beside org.Hs.eg.sqlite).
"""

from __future__ import annotations

import logging
import re
import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from kgqa.core.cache import cache_root
from kgqa.core.debian import package_files
from kgqa.core.namespace import KGNamespace
from kgqa.core.store import SourceFact, SourceNode
from kgqa.loaders.readers import Bad, Label, Record

log = logging.getLogger(__name__)

ORG_PACKAGE, GO_PACKAGE = "r-bioc-org.hs.eg.db", "r-bioc-go.db"
ORG_FILE, GO_FILE = "org.Hs.eg.sqlite", "GO.sqlite"
_GO_ID = re.compile(r"^GO:\d{7}$")


# --- fetching -------------------------------------------------------------------------------------

class BioKGFiles(NamedTuple):
    org: Path  # org.Hs.eg.sqlite
    go: Path  # GO.sqlite


def cache_dir() -> Path:
    """Where `fetch` keeps the files by default: $KGQA_CACHE/biokg, else ~/.cache/kgqa/biokg."""
    return cache_root() / "biokg"


def fetch(dest_dir: str | Path | None = None, *, keep_debs: bool = False) -> BioKGFiles:
    """Download `r-bioc-org.hs.eg.db` and `r-bioc-go.db` with `apt-get download` into `dest_dir`
    (default `cache_dir()`), unpack each with `dpkg -x` and keep its SQLite file at the top of
    `dest_dir` (so GO.sqlite lies beside org.Hs.eg.sqlite, where the reader looks for GO's names),
    with the package's copyright file. Idempotent: a file already there is neither downloaded nor
    unpacked again. Raises `KGQAError` naming the command that failed."""
    dest = Path(dest_dir) if dest_dir is not None else cache_dir()
    dest.mkdir(parents=True, exist_ok=True)
    (org,) = package_files(ORG_PACKAGE, [ORG_FILE], dest)
    (go,) = package_files(GO_PACKAGE, [GO_FILE], dest)
    if not keep_debs:
        shutil.rmtree(dest / "debs", ignore_errors=True)
    return BioKGFiles(org, go)


def cached_files(dest_dir: str | Path | None = None) -> BioKGFiles | None:
    """The fetched files if both are already there, else None (nothing is downloaded)."""
    dest = Path(dest_dir) if dest_dir is not None else cache_dir()
    files = BioKGFiles(dest / ORG_FILE, dest / GO_FILE)
    return files if files.org.is_file() and files.go.is_file() else None


# --- what the tables become -----------------------------------------------------------------------

@dataclass(frozen=True)
class Annotation:
    """A gene → value table of org.*.eg.sqlite: `gene —relation→ entity(id(value))` labelled label(value)."""

    table: str
    column: str
    relation: str
    prefix: str  # the stable id is prefix + value
    label: str  # the label, with {} for the value
    nullable: bool = False  # a NULL value is a row with nothing to say (Pfam/PROSITE per IPI entry), not a bad row
    where: str = ""  # extra SQL condition on the row


# The fixed order of a load (positions count records across them; never reorder, only append).
# gene_info comes first (the genes' labels), then these; PubMed, the bulk, comes last.
ANNOTATIONS: tuple[Annotation, ...] = (
    Annotation("genetype", "gene_type", "has_gene_type", "genetype:", "{}"),
    Annotation("chromosomes", "chromosome", "located_on_chromosome", "chromosome:", "chromosome {}"),
    Annotation("cytogenetic_locations", "cytogenetic_location", "located_at_cytoband", "cytoband:", "{}"),
    # Aliases are entities of their own (given as a gene's labels, they would compete with its
    # symbol for being shown); an alias that is the gene's own symbol or another gene's symbol is
    # left out, so that a symbol names one entity.
    Annotation("alias", "alias_symbol", "has_alias", "alias:", "{}",
               where="t.alias_symbol <> i.symbol AND t.alias_symbol NOT IN (SELECT symbol FROM gene_info)"),
    Annotation("go_bp", "go_id", "involved_in_process", "", "{}"),
    Annotation("go_mf", "go_id", "has_molecular_function", "", "{}"),
    Annotation("go_cc", "go_id", "located_in_component", "", "{}"),
    Annotation("kegg", "path_id", "in_pathway", "KEGG:", "KEGG pathway {}"),
    Annotation("pfam", "pfam_id", "has_domain", "Pfam:", "Pfam {}", nullable=True),
    Annotation("prosite", "prosite_id", "has_motif", "PROSITE:", "PROSITE {}", nullable=True),
    Annotation("ec", "ec_number", "has_enzyme_activity", "EC:", "EC {}"),
    Annotation("omim", "omim_id", "associated_with_omim", "OMIM:", "OMIM {}"),
    Annotation("uniprot", "uniprot_id", "encodes_protein", "UniProt:", "UniProt {}"),
    Annotation("ensembl", "ensembl_id", "has_ensembl_id", "Ensembl:", "Ensembl {}"),
    Annotation("pubmed", "pubmed_id", "cited_in", "PubMed:", "PubMed {}"),
)
# GO.db's root above the three ontologies: left out (an entity labelled "all" would be linked from
# any question with the word in it)
GO_ROOT = "all"
GO_TERM_TABLES = ("go_bp_parents", "go_mf_parents", "go_cc_parents")
GO_RELATIONS = {"isa": "is_a", "is_a": "is_a", "part of": "part_of", "regulates": "regulates",
                "positively regulates": "positively_regulates", "negatively regulates": "negatively_regulates"}


def gene_id(entrez: str) -> str:
    return f"NCBIGene:{entrez}"


def go_relation(relationship_type: str) -> str:
    text = relationship_type.strip()
    return GO_RELATIONS.get(text, text.replace(" ", "_"))


# --- reading --------------------------------------------------------------------------------------

def kind(path: Path) -> str | None:
    """'org' for an org.*.eg.sqlite, 'go' for a GO.sqlite, None for another file (or not SQLite)."""
    try:
        tables = _tables(path)
    except (sqlite3.Error, ValueError):
        return None
    if {"genes", "gene_info"} <= tables:
        return "org"
    if "go_term" in tables:
        return "go"
    return None


def files_in(path: Path) -> list[Path]:
    """The BioKG SQLite files a path names: the file itself, or those under a folder (org first)."""
    if not path.is_dir():
        return [path]
    found = [p for p in sorted(path.rglob("*.sqlite")) if kind(p)]
    found.sort(key=lambda p: (kind(p) != "org", str(p)))
    if not found:
        raise ValueError(f"{path}: no org.*.eg.sqlite or GO.sqlite under this folder (see kgqa.loaders.biokg.fetch)")
    return found


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)


def _tables(path: Path) -> set[str]:
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    con = _connect(path)
    try:
        return {name for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as exc:
        raise ValueError(f"{path}: not an SQLite file ({exc})") from None
    finally:
        con.close()


class RowProgress:
    """`tell()` for the progress bar: the share of the rows read, as bytes of the files."""

    def __init__(self, total_bytes: int):
        self.total_bytes, self.total_records, self.done = total_bytes, 1, 0

    def tell(self) -> int:
        return min(self.total_bytes, self.total_bytes * self.done // max(1, self.total_records))


def go_names_beside(org: Path) -> dict[str, str]:
    """GO's term names (go_id → name) from a GO.sqlite beside the org file (or in the same R
    library: …/GO.db/extdata/GO.sqlite), else {}: the gene annotations' GO terms are then labelled
    by id until GO.sqlite is loaded (its names, given as labels, are the ones shown)."""
    for candidate in (org.parent / GO_FILE, org.parent.parent.parent / "GO.db" / "extdata" / GO_FILE):
        if candidate.is_file() and kind(candidate) == "go":
            con = _connect(candidate)
            try:
                return {go: name for go, name in con.execute("SELECT go_id, term FROM go_term") if go and name}
            finally:
                con.close()
    log.warning("%s: no %s beside it: GO terms keep their ids as labels until GO.sqlite is loaded", org, GO_FILE)
    return {}


def read_biokg(path: Path, ns: KGNamespace) -> tuple[Iterator[Record], RowProgress]:
    """The `biokg` format: facts and labels from an org.*.eg.sqlite, a GO.sqlite, or a folder of both."""
    files = files_in(path)
    kinds = []
    for file in files:
        found = kind(file)
        if found is None:
            raise ValueError(f"{file}: not an org.*.eg.sqlite (tables genes, gene_info) nor a GO.sqlite (table go_term); "
                             f"fetch them with kgqa.loaders.biokg.fetch()")
        kinds.append(found)
    progress = RowProgress(sum(f.stat().st_size for f in files))
    return _records(list(zip(files, kinds)), ns, progress), progress


def _max_rowid(con: sqlite3.Connection, table: str) -> int:
    return con.execute(f'SELECT coalesce(max(rowid), 0) FROM "{table}"').fetchone()[0]


def _records(files: list[tuple[Path, str]], ns: KGNamespace, progress: RowProgress) -> Iterator[Record]:
    position = 0
    cons = [_connect(path) for path, _ in files]
    try:
        tables = [{n for (n,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")} for con in cons]
        total = 0
        for con, (_, which), names in zip(cons, files, tables):
            if which == "org":
                total += _max_rowid(con, "gene_info") + sum(_max_rowid(con, a.table) for a in ANNOTATIONS if a.table in names)
            else:
                total += _max_rowid(con, "go_term") + sum(_max_rowid(con, t) for t in GO_TERM_TABLES if t in names)
        progress.total_records = total
        for con, (path, which), names in zip(cons, files, tables):
            items = _org(con, path, ns, names) if which == "org" else _go(con, ns, names)
            for item in items:
                position += 1
                progress.done = position
                yield Record(position, replace(item, line=position) if isinstance(item, Bad) else item)
    finally:
        for con in cons:
            con.close()


class _Nodes:
    """Entity and relation nodes, minted once per id (ids repeat across millions of facts)."""

    def __init__(self, ns: KGNamespace):
        self.ns = ns
        self.entity = lru_cache(maxsize=1 << 18)(self._entity)
        self.relation = lru_cache(maxsize=256)(self._relation)

    def _entity(self, stable_id: str, label: str) -> SourceNode:
        return SourceNode(self.ns.entity(stable_id), label)

    def _relation(self, name: str) -> SourceNode:
        return SourceNode(self.ns.relation(name), name)


def _blank(value: object) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _org(con: sqlite3.Connection, path: Path, ns: KGNamespace, tables: set[str]) -> Iterator[SourceFact | Label | Bad | None]:
    """Items of an org.*.eg.sqlite, one per record."""
    nodes = _Nodes(ns)
    go_names = go_names_beside(path) if tables & {"go_bp", "go_mf", "go_cc"} else {}
    # The genes' symbols, given: the label shown (of all given labels a store shows the smallest, so
    # a gene's full name, which often sorts first, "ABL proto-oncogene 1, …" < "ABL1", is instead
    # the label its facts carry: it links as well, and is shown only where no symbol was given).
    for row in con.execute("SELECT t.rowid, t._id, g.gene_id, t.symbol FROM gene_info t "
                           "LEFT JOIN genes g ON g._id = t._id ORDER BY t.rowid"):
        rowid, _id, entrez, symbol = row
        if _blank(entrez):
            yield _bad_item("gene_info", rowid, f"_id {_id} has no row in genes", row)
        elif _blank(symbol):
            yield _bad_item("gene_info", rowid, "no symbol", row)
        else:
            yield Label(ns.entity(gene_id(entrez)), symbol.strip())
    for spec in ANNOTATIONS:
        if spec.table not in tables:
            continue
        relation = nodes.relation(spec.relation)
        is_go = spec.table.startswith("go_")
        where = f" WHERE {spec.where}" if spec.where else ""
        query = (f'SELECT t.rowid, t._id, g.gene_id, i.symbol, i.gene_name, t."{spec.column}" FROM "{spec.table}" t '
                 f"LEFT JOIN genes g ON g._id = t._id LEFT JOIN gene_info i ON i._id = t._id{where} ORDER BY t.rowid")
        for row in con.execute(query):
            rowid, _id, entrez, symbol, name, value = row
            if _blank(entrez):
                yield _bad_item(spec.table, rowid, f"_id {_id} has no row in genes", row)
                continue
            if _blank(value):
                yield None if spec.nullable else _bad_item(spec.table, rowid, f"empty {spec.column}", row)
                continue
            value = str(value).strip()
            if is_go and not _GO_ID.match(value):
                yield _bad_item(spec.table, rowid, f"{value!r} is not a GO id (GO:nnnnnnn)", row)
                continue
            gene = nodes.entity(gene_id(entrez), next((t.strip() for t in (name, symbol) if not _blank(t)), gene_id(entrez)))
            if is_go:
                obj = nodes.entity(value, go_names.get(value, value))
            else:
                obj = nodes.entity(spec.prefix + value, spec.label.format(value))
            yield SourceFact(gene, relation, obj)


def _go(con: sqlite3.Connection, ns: KGNamespace, tables: set[str]) -> Iterator[SourceFact | Label | Bad | None]:
    nodes = _Nodes(ns)
    for row in con.execute("SELECT rowid, go_id, term FROM go_term ORDER BY rowid"):
        rowid, go, term = row
        if go == GO_ROOT:
            yield None
            continue
        if _blank(go) or not _GO_ID.match(go.strip()) or _blank(term):
            yield _bad_item("go_term", rowid, "expected a GO id (GO:nnnnnnn) and a name", row)
            continue
        yield Label(ns.entity(go.strip()), term.strip())
    for table in GO_TERM_TABLES:
        if table not in tables:
            continue
        query = (f'SELECT p.rowid, p._id, p._parent_id, c.go_id, c.term, t.go_id, t.term, p.relationship_type FROM "{table}" p '
                 "LEFT JOIN go_term c ON c._id = p._id LEFT JOIN go_term t ON t._id = p._parent_id ORDER BY p.rowid")
        for row in con.execute(query):
            rowid, child_id, parent_id, child, child_name, parent, parent_name, relationship = row
            if _blank(child) or _blank(parent):
                missing = child_id if _blank(child) else parent_id
                yield _bad_item(table, rowid, f"_id {missing} has no row in go_term", row)
                continue
            if GO_ROOT in (child, parent):
                yield None
                continue
            if _blank(relationship):
                yield _bad_item(table, rowid, "empty relationship_type", row)
                continue
            yield SourceFact(nodes.entity(child, child_name or child), nodes.relation(go_relation(relationship)),
                             nodes.entity(parent, parent_name or parent))


def _bad_item(table: str, rowid: int, reason: str, row: tuple) -> Bad:
    """A malformed row; `_records` sets its line to the record's position."""
    return Bad(0, f"table {table}, rowid {rowid}: {reason}", repr(row))
