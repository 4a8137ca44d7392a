"""`kgqa load`: files into a store over its writer (batched, idempotent, resumable), or into a new
Neo4j database through Neo4j's offline importer (`--bulk HOME`)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from kgqa.core.errors import KGQAError
from kgqa.faces.cli_common import StoreOpt, err, fail, out
from kgqa.loaders.load import DEFAULT_BATCH, EMBEDDED_BATCH, FIRST_BATCH
from kgqa.retrieval.store_url import default_store_url, open_writer


class _StageLines(logging.Handler):
    """A writer's INFO lines on stderr: what a load does after its last batch (Virtuoso's closing
    text-index update and per-relation recount) can take many minutes at 50M facts."""

    def emit(self, record: logging.LogRecord) -> None:
        err.print(record.getMessage(), highlight=False)


def _bar() -> Progress:
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), DownloadColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
                    console=err, transient=False)


def load(
    paths: Annotated[list[Path], typer.Argument(help="Files to load (.txt MetaQA, .tsv, .nt, .ttl; .gz too)")],
    kg: Annotated[str, typer.Option("--kg", help="KG name: its IRIs live under urn:kgqa:kg:<name>:")] = "default",
    store: StoreOpt = None,
    fmt: Annotated[Optional[list[str]], typer.Option(
        "--format", help="metaqa | tsv | nt | ttl | labels (id<TAB>label) | biokg (org.Hs.eg.sqlite, GO.sqlite: kgqa.loaders.biokg) "
                         "(default: from the file name); once for every file, "
                         "or once per file in order")] = None,
    skip_bad: Annotated[bool, typer.Option("--skip-bad", help="Skip malformed lines and report how many")] = False,
    force: Annotated[bool, typer.Option("--force", help="Re-read a file that is already loaded completely")] = False,
    batch_size: Annotated[Optional[int], typer.Option(
        "--batch-size", min=1, help=f"Facts per batch (default: {EMBEDDED_BATCH:,} on the embedded store, {DEFAULT_BATCH:,} on the others; "
                                    f"the first is at most {FIRST_BATCH:,}, so that a server starts writing early)")] = None,
    bulk: Annotated[Optional[Path], typer.Option(
        "--bulk", metavar="NEO4J_HOME",
        help="Build a new Neo4j database from the files with Neo4j's offline importer (Neo4j stopped); then start "
             "Neo4j and run the same `kgqa load` with --store bolt://… once: it builds kgqa's indexes")] = None,
    database: Annotated[str, typer.Option("--database", help="With --bulk: the database to build")] = "neo4j",
    overwrite: Annotated[bool, typer.Option("--overwrite", help="With --bulk: replace an existing database (everything in it)")] = False,
    neo4j_admin: Annotated[Optional[str], typer.Option(
        "--neo4j-admin", help="With --bulk: the neo4j-admin executable, or a folder of Neo4j's jars "
                              "(default: NEO4J_HOME/bin/neo4j-admin, KGQA_NEO4J_LIB, or the jars the test launchers fetched)")] = None,
) -> None:
    """Load triples into a store: batched, idempotent, resumable after a crash."""
    if fmt and len(fmt) not in (1, len(paths)):
        fail(f"--format given {len(fmt)} times for {len(paths)} files: give it once, or once per file")
    formats = (fmt * len(paths) if len(fmt) == 1 else fmt) if fmt else [None] * len(paths)
    if bulk is not None:
        if store is not None:
            fail("--bulk builds a Neo4j database offline from its home folder; leave --store out (or drop --bulk to load over Bolt)")
        _bulk(paths, kg, bulk, formats, database, overwrite, force, skip_bad, neo4j_admin)
        return
    from kgqa.loaders import load_file

    url = store or default_store_url()
    stages = logging.getLogger("kgqa.sparql.virtuoso")
    if not any(isinstance(h, _StageLines) for h in stages.handlers):  # once a process (tests call load many times)
        stages.setLevel(logging.INFO)
        stages.addHandler(_StageLines(logging.INFO))
    try:
        writer = open_writer(url, kg)
        for i, (path, path_fmt) in enumerate(zip(paths, formats)):
            with _bar() as bar:
                task = bar.add_task(f"load {path.name}", total=path.stat().st_size if path.is_file() else None)
                report = load_file(
                    writer, path, path_fmt, batch_size=batch_size, skip_bad=skip_bad, force=force,
                    progress=lambda done, total: bar.update(task, completed=done, total=total),
                    recount=i == len(paths) - 1,  # the fan-out counts once, after the last file
                )
            if report.already_complete:
                if report.recounted:
                    out.print(f"KG {kg!r}: fan-out counts recomputed (an earlier load of several files stopped before its last recount)")
                out.print(f"{path}: already loaded completely ({report.facts_in_store:,} facts in KG {kg!r}); --force re-reads it")
                continue
            rate = report.facts_written / report.seconds if report.seconds else 0.0
            resumed = f", resumed after record {report.resumed_from:,}" if report.resumed_from else ""
            out.print(
                f"{path}: {report.facts_written:,} facts written in {report.seconds:.1f}s ({rate:,.0f}/s){resumed}; "
                f"KG {kg!r} now holds {report.facts_in_store:,} facts"
            )
            if report.skipped:
                shown = ", ".join(str(n) for n in report.skipped_lines)
                out.print(f"{path}: skipped {report.skipped:,} malformed lines (first: {shown})")
        writer.close()
    except (KGQAError, ValueError, OSError) as exc:
        fail(str(exc))


def _bulk(paths: list[Path], kg: str, home: Path, formats: list[str | None], database: str, overwrite: bool, force: bool,
          skip_bad: bool, neo4j_admin: str | None) -> None:
    from kgqa.cypher.bulk import bulk_load

    try:
        with _bar() as bar:
            tasks: dict[str, int] = {}

            def progress(stage: str, done: int, total: int) -> None:
                if stage not in tasks:
                    tasks[stage] = bar.add_task(stage, total=total)
                bar.update(tasks[stage], completed=done, total=total)

            report = bulk_load(home, kg, paths, formats, database=database, overwrite=overwrite, force=force, skip_bad=skip_bad,
                               neo4j_admin=neo4j_admin, progress=progress)
    except (KGQAError, ValueError, OSError) as exc:
        fail(str(exc))
        return
    counts = f"{report.facts:,} facts, {report.entities:,} entities, {report.relations:,} relations"
    if report.already_complete:
        out.print(f"database {database!r} under {home} already holds these files as KG {kg!r} ({counts}); --force imports them again")
        return
    rate = report.facts / report.seconds if report.seconds else 0.0
    out.print(f"imported KG {kg!r} into database {database!r} under {home}: {counts} in {report.seconds:.1f}s ({rate:,.0f} facts/s; "
              f"reading {report.read_s:.1f}s, neo4j-admin {report.import_s:.1f}s)")
    if report.skipped:
        out.print(f"skipped {report.skipped:,} malformed lines (first: {', '.join(report.skipped_lines)})")
    out.print("next: start Neo4j on this home, then run this `kgqa load` again with --store bolt://HOST:PORT instead of --bulk; "
              "it builds kgqa's indexes and finds the files loaded")
