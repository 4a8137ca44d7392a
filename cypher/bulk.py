"""A fresh Neo4j database from files, through Neo4j's offline importer (`kgqa load --bulk HOME`).

The files are read with the loaders' readers (same IRIs, labels, bad-line errors as the Bolt path),
and the graph the Bolt writer would end with — entities with their fan-out lists, relations with
their fact counts, aliases, the KG and one complete load record per file — is written as CSV files
and handed to `neo4j-admin database import full`. The importer builds a whole database and needs
Neo4j stopped; it cannot create kgqa's indexes (Community's record format), so the first writer that
opens the database over Bolt creates them (`kgqa load` of the same files: it finds them loaded).

Idempotent: a marker file beside the databases names the KG and the files of the last import; the
same import again is "already complete". An import killed half-way is redone on the next run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

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


@dataclass
class _Graph:
    """What the files say, deduplicated as the stores do: facts are a set, an entity keeps the first
    label a fact gave it, an alias is one node per text."""

    facts: dict[tuple[str, str, str], None] = field(default_factory=dict)
    entity_label: dict[str, str | None] = field(default_factory=dict)
    relation_label: dict[str, str] = field(default_factory=dict)
    aliases: dict[tuple[str, str], None] = field(default_factory=dict)
    positions: dict[str, int] = field(default_factory=dict)  # source key → last record

    def add(self, fact: SourceFact) -> None:
        for node in (fact.subject, fact.object):
            if self.entity_label.get(node.iri) is None:
                self.entity_label[node.iri] = node.kept_label
        self.relation_label.setdefault(fact.relation.iri, fact.relation.kept_label)
        self.facts[(fact.subject.iri, fact.relation.iri, fact.object.iri)] = None

    def add_alias(self, iri: str, text: str) -> None:
        self.entity_label.setdefault(iri, None)  # named by a labels file only: no label of its own
        self.aliases[(iri, text)] = None


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
    too), or when it is this import's own earlier result and `force` asks to redo it."""
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

    graph = _Graph()
    for path, f, key in zip(files, fmts, keys):
        _read_file(graph, path, f, kg, key, skip_bad, report, progress)
    step = progress or (lambda stage, done, total: None)
    with tempfile.TemporaryDirectory(prefix="kgqa-bulk-") as tmp:
        step("write CSV", 0, 1)
        arguments = _write_csv(Path(tmp), graph, kg, keys, report)
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
    cache = Path(os.environ.get("KGQA_CACHE", Path.home() / ".cache" / "kgqa"))
    libs = sorted(cache.glob("neo4j-*/lib"), key=lambda p: p.stat().st_mtime)
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


def _read_file(graph: _Graph, path: Path, fmt: str, kg: str, key: str, skip_bad: bool, report: BulkReport,
               progress: Progress | None) -> None:
    records, position = read(path, fmt, KGNamespace(kg))
    total = path.stat().st_size
    last = 0
    for n, record in enumerate(records, 1):
        report.records_read += 1
        last = record.position
        item = record.item
        if isinstance(item, SourceFact):
            graph.add(item)
        elif isinstance(item, Label):
            graph.add_alias(item.iri, item.label)
        elif isinstance(item, Bad):
            item.stop_unless(skip_bad, path)
            report.skipped += 1
            if len(report.skipped_lines) < 10:
                report.skipped_lines.append(f"{path}:{item.line}")
        if progress and n % 50_000 == 0:
            progress(f"read {path.name}", position.tell(), total)
    graph.positions[key] = last
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


def _facts_csv(path: Path, graph: _Graph, kg: str) -> Path:
    header = [":START_ID(Entity)", ":END_ID(Entity)", "relation", "out_group", "in_group"]
    if any('"' in iri for iri in graph.entity_label) or any('"' in iri for iri in graph.relation_label):
        return _csv(path, header, ([s, o, r, f"{kg} {s} {r}", f"{kg} {o} {r}"] for s, r, o in graph.facts))
    # no IRI holds a quote (the usual case: RDF IRIs cannot, minted ones are percent-encoded), so the
    # rows are formatted directly: a third of the time of the whole import's Python side on MetaQA
    with open(path, "w", encoding="utf-8", newline="") as out:
        out.write(",".join(header) + "\n")
        out.writelines(f'"{s}","{o}","{r}","{kg} {s} {r}","{kg} {o} {r}"\n' for s, r, o in graph.facts)
    return path


def _utf16_order(text: str) -> bytes:
    return text.encode("utf-16-be")  # Cypher's ORDER BY on strings, which recount_groups.cypher uses


def _write_csv(folder: Path, graph: _Graph, kg: str, keys: list[str], report: BulkReport) -> list[str]:
    out_n: Counter[tuple[str, str]] = Counter()
    in_n: Counter[tuple[str, str]] = Counter()
    for s, r, o in graph.facts:
        out_n[s, r] += 1
        in_n[o, r] += 1
    groups: dict[str, tuple[dict[str, int], dict[str, int]]] = {iri: ({}, {}) for iri in graph.entity_label}
    for (e, r), n in out_n.items():
        groups[e][0][r] = n
    for (e, r), n in in_n.items():
        groups[e][1][r] = n
    for iri in graph.relation_label:
        if ARRAY_DELIMITER in iri:
            raise BulkImportError(f"relation IRI {iri!r} holds U+001F, which the import uses between list items")

    def fanout(lists: dict[str, int]) -> tuple[list[str] | None, list[int] | None]:
        order = sorted(lists, key=_utf16_order)
        return (order, [lists[r] for r in order]) if order else (None, None)  # the importer stores no empty list

    def entities() -> Iterable[Sequence[object]]:
        for iri, label in graph.entity_label.items():
            out_rel, out_counts = fanout(groups[iri][0])
            in_rel, in_counts = fanout(groups[iri][1])
            yield iri, kg, label, normalise_label(label) if label is not None else None, out_rel, out_counts, in_rel, in_counts

    relation_facts = Counter(r for _, r, _ in graph.facts)
    alias_ids = {text: i for i, text in enumerate(dict.fromkeys(text for _, text in graph.aliases))}
    nodes = {
        "KG": _csv(folder / "kg.csv", ["name", "indexes_pending:boolean"], [[kg, True]]),
        "Entity": _csv(folder / "entities.csv", ["iri:ID(Entity)", "kg", "label", "key", "out_rel:string[]", "out_n:long[]",
                                                   "in_rel:string[]", "in_n:long[]"], entities()),
        "Relation": _csv(folder / "relations.csv", ["iri", "kg", "label", "facts:long"],
                         ([iri, kg, label, relation_facts[iri]] for iri, label in graph.relation_label.items())),
        "Alias": _csv(folder / "aliases.csv", [":ID(Alias)", "kg", "text", "key"],
                      ([i, kg, text, normalise_label(text)] for text, i in alias_ids.items())),
        "LoadRecord": _csv(folder / "load.csv", ["kg", "source", "committed:long", "complete:boolean"],
                           ([kg, source_id(key), graph.positions[key], True] for key in keys)),
    }
    relationships = {
        "FACT": _facts_csv(folder / "facts.csv", graph, kg),
        "NAMES": _csv(folder / "names.csv", [":START_ID(Alias)", ":END_ID(Entity)"],
                      ([alias_ids[text], iri] for iri, text in graph.aliases)),
    }
    report.facts, report.entities = len(graph.facts), len(graph.entity_label)
    report.relations, report.aliases = len(graph.relation_label), len(alias_ids)
    multiline = any("\n" in t or "\r" in t for t in [*(l for l in graph.entity_label.values() if l), *alias_ids])
    return [
        *(f"--nodes={label}={path}" for label, path in nodes.items()),
        *(f"--relationships={kind}={path}" for kind, path in relationships.items()),
        f"--array-delimiter=U+{ord(ARRAY_DELIMITER):04X}",
        f"--multiline-fields={'true' if multiline else 'false'}",
        f"--report-file={folder / 'import.report'}",
    ]


def _run_importer(command: list[str], env: dict[str, str], folder: Path) -> None:
    done = subprocess.run(command, env=env, cwd=folder, capture_output=True, text=True)
    if done.returncode != 0:
        said = (done.stdout[-2000:] + done.stderr[-2000:]).strip()
        raise BulkImportError(f"neo4j-admin database import failed (exit {done.returncode}):\n{said}")
