"""A fresh Neo4j database from files, through Neo4j's offline importer (`kgqa load --bulk HOME`).

The files are read with the loaders' readers (same IRIs, labels, bad-line errors as the Bolt path),
and the graph the Bolt writer would end with — entities with their fan-out lists, relations with
their fact counts, aliases, the KG and one complete load record per file — is written as CSV files
and handed to `neo4j-admin database import full`. What is read goes to spool files on disk, and the
facts are deduplicated, grouped per (entity, relation) and merged with the entities' labels by GNU
sort there (`_Spool`): the memory it takes does not grow with the KG. The importer builds a whole database and needs
Neo4j stopped; it cannot create kgqa's indexes (Community's record format), so the first writer that
opens the database over Bolt creates them (`kgqa load` of the same files: it finds them loaded).

Idempotent: a marker file beside the databases names the KG and the files of the last import; the
same import again is "already complete". An import killed half-way is redone on the next run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kgqa.core.cache import cache_root
from kgqa.core.errors import KGQAError
from kgqa.core.labels import normalise_label
from kgqa.core.namespace import KGNamespace, check_kg_name
from kgqa.core.store import SourceFact
from kgqa.cypher.writer import source_id
from kgqa.loaders.load import source_key
from kgqa.loaders.readers import Bad, Label, detect_format, read

ARRAY_DELIMITER = "\x1f"  # cannot occur in an IRI; checked below all the same
ADMIN_MAIN = "org.neo4j.cli.AdminTool"
COUNTS = ("facts", "entities", "relations", "aliases")  # BulkReport fields the marker keeps
Progress = Callable[[str, int, int], None]  # (stage, done, total): "read FILE" in bytes, then "write CSV", "neo4j-admin import"


class BulkImportError(KGQAError):
    pass


@dataclass
class BulkReport:
    home: str
    database: str
    kg: str
    files: list[str]
    facts: int = 0
    entities: int = 0
    relations: int = 0
    aliases: int = 0
    records_read: int = 0
    skipped: int = 0
    skipped_lines: list[str] = field(default_factory=list)  # file:line, the first few
    already_complete: bool = False
    read_s: float = 0.0  # reading the files and writing the CSV files
    import_s: float = 0.0  # neo4j-admin
    seconds: float = 0.0


SORT_MEMORY = "512M"  # GNU sort's buffer (-S): the import's memory does not grow with the KG
_CONTROL = re.compile(r"[\x00-\x1f]")
_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def _escape(text: str) -> str:
    return text.translate(_ESCAPES)


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out, chars = [], iter(text)
    for c in chars:
        out.append({"t": "\t", "n": "\n", "r": "\r", "\\": "\\"}[next(chars)] if c == "\\" else c)
    return "".join(out)


class _Spool:
    """What the files say, spooled to tab-separated files in `folder` as it is read, then sorted on
    disk (GNU sort, LC_ALL=C, `SORT_MEMORY`) and merged, so that memory stays flat whatever the
    KG's size. Deduplicated as the stores do: facts are a set, an entity keeps the first label a
    fact gave it, an alias is one node per text. Only the relations (a KG has few) stay in memory."""

    def __init__(self, folder: Path):
        self.folder = folder
        self._facts = open(folder / "facts.tsv", "w", encoding="utf-8", newline="")
        self._nodes = open(folder / "nodes.tsv", "w", encoding="utf-8", newline="")  # iri, order, has label, label
        self._aliases = open(folder / "aliases.tsv", "w", encoding="utf-8", newline="")  # text, iri
        self.relation_label: dict[str, str] = {}
        self.positions: dict[str, int] = {}  # source key → last record
        self.quoted = False  # an IRI holds a double quote: the facts' CSV rows need quoting
        self.multiline = False  # a label or alias holds a line break
        self._order = 0

    def _iri(self, iri: str) -> str:
        if _CONTROL.search(iri):
            raise BulkImportError(f"IRI {iri!r} holds a control character (a tab, a line break, …), which no IRI may")
        self.quoted = self.quoted or '"' in iri
        return iri

    def _label(self, text: str) -> str:
        self.multiline = self.multiline or "\n" in text or "\r" in text
        return _escape(text)

    def add(self, fact: SourceFact) -> None:
        s, r, o = self._iri(fact.subject.iri), self._iri(fact.relation.iri), self._iri(fact.object.iri)
        for node in (fact.subject, fact.object):
            self._order += 1
            self._nodes.write(f"{node.iri}\t{self._order:012d}\t1\t{self._label(node.kept_label)}\n")
        self.relation_label.setdefault(r, fact.relation.kept_label)
        self._facts.write(f"{s}\t{r}\t{o}\n")

    def add_alias(self, iri: str, text: str) -> None:
        self._order += 1
        self._nodes.write(f"{self._iri(iri)}\t{self._order:012d}\t0\t\n")  # named by a labels file only: no label of its own
        self._aliases.write(f"{self._label(text)}\t{iri}\n")

    def close(self) -> None:
        for f in (self._facts, self._nodes, self._aliases):
            f.close()

    def sort_file(self, source: Path, *keys: str, unique: bool = False) -> Path:
        """A copy of `source` sorted on disk by `keys` (sort's -k specs; none: whole lines)."""
        target = self.folder / f"{source.name}.{'-'.join(keys) or 'lines'}.sorted"
        command = ["sort", "-t", "\t", "-S", SORT_MEMORY, "-T", str(self.folder), *(f"-k{k}" for k in keys), *(["-u"] if unique else []),
                   "-o", str(target), str(source)]
        done = subprocess.run(command, env={**os.environ, "LC_ALL": "C"}, capture_output=True, text=True)
        if done.returncode != 0:
            raise BulkImportError(f"`{' '.join(command)}` failed (exit {done.returncode}): {done.stderr.strip()[-500:]}")
        return target


def _rows(path: Path) -> Iterator[list[str]]:
    with open(path, encoding="utf-8", newline="") as f:
        for line in f:
            yield line.rstrip("\n").split("\t")


def bulk_load(
    home: str | Path,
    kg: str,
    paths: Sequence[str | Path],
    formats: str | Sequence[str | None] | None = None,
    *,
    database: str = "neo4j",
    overwrite: bool = False,
    force: bool = False,
    skip_bad: bool = False,
    neo4j_admin: str | None = None,
    progress: Progress | None = None,
) -> BulkReport:
    """Import `paths` as KG `kg` into a new database `database` of the (stopped) Neo4j at `home`;
    `formats` is one format for every file, or one per file (None: from the file name).

    An existing database is replaced only with `overwrite` (it would lose everything in it, other KGs
    too), or when it is this import's own earlier result and `force` asks to redo it. The facts are
    spooled and sorted on disk in the temporary folder (TMPDIR), never held in memory: at its peak
    about three times the size of the CSV files the importer reads."""
    started = time.perf_counter()
    home = Path(home).expanduser().resolve()
    check_kg_name(kg)
    if not home.is_dir():
        raise BulkImportError(f"--bulk {home}: no such Neo4j home folder")
    files = [Path(p) for p in paths]
    for path in files:
        if not path.is_file():
            raise BulkImportError(f"{path}: no such file")
    given = [formats] * len(files) if formats is None or isinstance(formats, str) else list(formats)
    if len(given) != len(files):
        raise ValueError(f"{len(given)} formats for {len(files)} files: give one, or one per file")
    fmts = [f or detect_format(p) for p, f in zip(files, given)]
    keys = [source_key(p, f) for p, f in zip(files, fmts)]
    report = BulkReport(str(home), database, kg, [str(p) for p in files])
    marker = home / "data" / f"kgqa-bulk-{database}.json"
    previous = json.loads(marker.read_text()) if marker.is_file() else None
    target = home / "data" / "databases" / database
    ours = previous is not None and previous.get("kg") == kg and previous.get("sources") == keys
    if ours and previous.get("state") == "complete" and target.exists() and not force:
        for name in COUNTS:
            setattr(report, name, previous["counts"][name])
        report.already_complete = True
        report.seconds = time.perf_counter() - started
        return report
    interrupted = previous is not None and previous.get("state") == "importing"
    if target.exists() and not (overwrite or interrupted or (ours and force)):
        raise BulkImportError(
            f"database {database!r} exists under {home}: --bulk builds a new database and would replace it whole "
            "(every KG in it); stop Neo4j and add --overwrite, or add to the live database over Bolt (--store bolt://…)"
        )
    command, env = admin_command(home, neo4j_admin)

    step = progress or (lambda stage, done, total: None)
    with tempfile.TemporaryDirectory(prefix="kgqa-bulk-") as tmp:
        spool = _Spool(Path(tmp))
        try:
            for path, f, key in zip(files, fmts, keys):
                _read_file(spool, path, f, kg, key, skip_bad, report, progress)
        finally:
            spool.close()
        step("write CSV", 0, 1)
        arguments = _write_csv(Path(tmp), spool, kg, keys, report)
        step("write CSV", 1, 1)
        report.read_s = time.perf_counter() - started
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(json.dumps({"state": "importing", "kg": kg, "sources": keys}))
        t = time.perf_counter()
        step("neo4j-admin import", 0, 1)
        _run_importer(command + ["database", "import", "full", *arguments, "--overwrite-destination=true", database], env, Path(tmp))
        step("neo4j-admin import", 1, 1)
        report.import_s = time.perf_counter() - t
    counts = {name: getattr(report, name) for name in COUNTS}
    marker.write_text(json.dumps({"state": "complete", "kg": kg, "sources": keys, "counts": counts}))
    report.seconds = time.perf_counter() - started
    return report


def admin_command(home: Path, neo4j_admin: str | None = None) -> tuple[list[str], dict[str, str]]:
    """How to run neo4j-admin for `home`: `neo4j_admin` (an executable, or a folder of Neo4j's jars);
    else HOME/bin/neo4j-admin (a Neo4j installation); else the jars in KGQA_NEO4J_LIB, or the ones
    the test launchers fetched from Maven Central (KGQA_CACHE or ~/.cache/kgqa, neo4j-*/lib)."""
    env = {**os.environ, "NEO4J_HOME": str(home)}
    if neo4j_admin:
        given = Path(neo4j_admin).expanduser()
        if given.is_dir():
            return _java(given), env
        if shutil.which(str(given)):
            return [str(given)], env
        raise BulkImportError(f"--neo4j-admin {neo4j_admin}: neither an executable nor a folder of Neo4j jars")
    if (home / "bin" / "neo4j-admin").is_file():
        return [str(home / "bin" / "neo4j-admin")], env
    if os.environ.get("KGQA_NEO4J_LIB"):
        return _java(Path(os.environ["KGQA_NEO4J_LIB"])), env
    libs = sorted(cache_root().glob("neo4j-*/lib"), key=lambda p: p.stat().st_mtime)
    if libs:
        return _java(libs[-1]), env
    raise BulkImportError(
        f"no neo4j-admin found: {home} has no bin/neo4j-admin; pass --neo4j-admin (the executable, or a folder "
        "of Neo4j's jars), or set KGQA_NEO4J_LIB"
    )


def _java(lib: Path) -> list[str]:
    if not any(lib.glob("neo4j-import-tool-*.jar")):
        raise BulkImportError(f"{lib}: no neo4j-import-tool jar there (a folder of Neo4j's jars is expected)")
    if not shutil.which("java"):
        raise BulkImportError("`java` is missing: Neo4j's importer needs Java 17+")
    return ["java", "-cp", str(lib / "*"), ADMIN_MAIN]


def _read_file(spool: _Spool, path: Path, fmt: str, kg: str, key: str, skip_bad: bool, report: BulkReport,
               progress: Progress | None) -> None:
    records, position = read(path, fmt, KGNamespace(kg))
    total = path.stat().st_size
    last = 0
    for n, record in enumerate(records, 1):
        report.records_read += 1
        last = record.position
        item = record.item
        if isinstance(item, SourceFact):
            spool.add(item)
        elif isinstance(item, Label):
            spool.add_alias(item.iri, item.label)
        elif isinstance(item, Bad):
            item.stop_unless(skip_bad, path)
            report.skipped += 1
            if len(report.skipped_lines) < 10:
                report.skipped_lines.append(f"{path}:{item.line}")
        if progress and n % 50_000 == 0:
            progress(f"read {path.name}", position.tell(), total)
    spool.positions[key] = last
    if progress:
        progress(f"read {path.name}", total, total)


def _cell(value: object) -> str:
    """One CSV field as the importer reads it: None is an empty field (no property), a string is
    quoted (so "" stays an empty string), quotes doubled."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        value = ARRAY_DELIMITER.join(str(v) for v in value)
    text = str(value)
    return '"' + text.replace('"', '""') + '"'


def _csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[object]]) -> Path:
    with open(path, "w", encoding="utf-8", newline="") as out:
        out.write(",".join(header) + "\n")
        out.writelines(",".join(_cell(v) for v in row) + "\n" for row in rows)
    return path


def _grouped(rows: Iterator[list[str]], entity_at: int) -> Iterator[tuple[str, dict[str, int]]]:
    """(entity, {relation: facts}) from facts sorted by that entity then relation."""
    current, counts = None, {}
    for row in rows:
        entity, relation = row[entity_at], row[1]
        if entity != current:
            if current is not None:
                yield current, counts
            current, counts = entity, {}
        counts[relation] = counts.get(relation, 0) + 1
    if current is not None:
        yield current, counts


def _first_labels(rows: Iterator[list[str]]) -> Iterator[tuple[str, str | None]]:
    """(entity, the first label a fact gave it, or None) from nodes sorted by IRI then order."""
    current, label = None, None
    for iri, _, has_label, text in rows:
        if iri != current:
            if current is not None:
                yield current, label
            current, label = iri, None
        if label is None and has_label == "1":
            label = _unescape(text)
    if current is not None:
        yield current, label


def _utf16_order(text: str) -> bytes:
    return text.encode("utf-16-be")  # Cypher's ORDER BY on strings, which recount_groups.cypher uses


def _write_csv(folder: Path, spool: _Spool, kg: str, keys: list[str], report: BulkReport) -> list[str]:
    for iri in spool.relation_label:
        if ARRAY_DELIMITER in iri:
            raise BulkImportError(f"relation IRI {iri!r} holds U+001F, which the import uses between list items")
    # the facts, deduplicated: each one once in facts.csv, counted per relation
    relation_facts: Counter[str] = Counter()
    header = [":START_ID(Entity)", ":END_ID(Entity)", "relation", "out_group", "in_group"]
    unique = spool.sort_file(folder / "facts.tsv", unique=True)
    with open(folder / "facts.csv", "w", encoding="utf-8", newline="") as out:
        out.write(",".join(header) + "\n")
        for s, r, o in _rows(unique):
            relation_facts[r] += 1
            # no IRI holds a quote (the usual case: RDF IRIs cannot, minted ones are percent-encoded): rows
            # formatted directly, a third of the time of the whole import's Python side on MetaQA
            out.write(",".join(_cell(v) for v in (s, o, r, f"{kg} {s} {r}", f"{kg} {o} {r}")) + "\n" if spool.quoted else
                      f'"{s}","{o}","{r}","{kg} {s} {r}","{kg} {o} {r}"\n')
    report.facts = sum(relation_facts.values())
    # each entity's fan-out lists: three streams sorted by IRI, merged
    # whole lines sorted are sorted by subject, then relation: no IRI holds a control character (`_iri`)
    outgoing = _grouped(_rows(unique), 0)
    incoming = _grouped(_rows(spool.sort_file(unique, "3,3", "2,2")), 2)
    labels = _first_labels(_rows(spool.sort_file(folder / "nodes.tsv", "1,1", "2,2")))

    def fanout(lists: dict[str, int]) -> tuple[list[str] | None, list[int] | None]:
        order = sorted(lists, key=_utf16_order)
        return (order, [lists[r] for r in order]) if order else (None, None)  # the importer stores no empty list

    def entities() -> Iterable[Sequence[object]]:
        next_out, next_in = next(outgoing, None), next(incoming, None)
        for iri, label in labels:
            out_n: dict[str, int] = {}
            in_n: dict[str, int] = {}
            if next_out is not None and next_out[0] == iri:
                out_n, next_out = next_out[1], next(outgoing, None)
            if next_in is not None and next_in[0] == iri:
                in_n, next_in = next_in[1], next(incoming, None)
            report.entities += 1
            yield iri, kg, label, normalise_label(label) if label is not None else None, *fanout(out_n), *fanout(in_n)

    def aliases() -> Iterator[tuple[int, str, str]]:
        """(alias id, text, entity): one id per text, from the aliases sorted by text."""
        last, number = None, -1
        for text, iri in _rows(spool.sort_file(folder / "aliases.tsv", "1,1", "2,2", unique=True)):
            if text != last:
                last, number = text, number + 1
            yield number, _unescape(text), iri

    with open(folder / "names.csv", "w", encoding="utf-8", newline="") as names:
        names.write(":START_ID(Alias),:END_ID(Entity)\n")

        def alias_nodes() -> Iterable[Sequence[object]]:
            last = -1
            for number, text, iri in aliases():
                names.write(f"{_cell(number)},{_cell(iri)}\n")
                if number != last:
                    last = number
                    report.aliases += 1
                    yield number, kg, text, normalise_label(text)

        alias_csv = _csv(folder / "aliases.csv", [":ID(Alias)", "kg", "text", "key"], alias_nodes())
    nodes = {
        "KG": _csv(folder / "kg.csv", ["name", "indexes_pending:boolean"], [[kg, True]]),
        "Entity": _csv(folder / "entities.csv", ["iri:ID(Entity)", "kg", "label", "key", "out_rel:string[]", "out_n:long[]",
                                                   "in_rel:string[]", "in_n:long[]"], entities()),
        "Relation": _csv(folder / "relations.csv", ["iri", "kg", "label", "facts:long"],
                         ([iri, kg, label, relation_facts[iri]] for iri, label in spool.relation_label.items())),
        "Alias": alias_csv,
        "LoadRecord": _csv(folder / "load.csv", ["kg", "source", "committed:long", "complete:boolean"],
                           ([kg, source_id(key), spool.positions[key], True] for key in keys)),
    }
    for spooled in folder.glob("*.tsv*"):  # the CSVs hold it all now
        spooled.unlink()
    report.relations = len(spool.relation_label)
    return [
        *(f"--nodes={label}={path}" for label, path in nodes.items()),
        f"--relationships=FACT={folder / 'facts.csv'}",
        f"--relationships=NAMES={folder / 'names.csv'}",
        f"--array-delimiter=U+{ord(ARRAY_DELIMITER):04X}",
        f"--multiline-fields={'true' if spool.multiline else 'false'}",
        f"--report-file={folder / 'import.report'}",
    ]


def _run_importer(command: list[str], env: dict[str, str], folder: Path) -> None:
    done = subprocess.run(command, env=env, cwd=folder, capture_output=True, text=True)
    if done.returncode != 0:
        said = (done.stdout[-2000:] + done.stderr[-2000:]).strip()
        raise BulkImportError(f"neo4j-admin database import failed (exit {done.returncode}):\n{said}")
