"""Batched, idempotent, resumable loading of a file into a store's writer.

Idempotent: facts are a set in every store, so writing a record twice changes nothing.
Resumable: after each batch is written the writer records the position it reached; a rerun after a crash
re-reads the file, skips the records at or before the last committed position, and writes the rest.
Fan-out counts (the APP cap's input) are recomputed from the stored facts when the file is done; a
load of several files recounts once, after the last (`recount=False` for the others: the KG is marked
"counts stale" until then, and a rerun that finds every file complete recounts if the mark is there).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kgqa.core.errors import KGQAError
from kgqa.loaders.readers import Bad, Label, detect_format, read
from kgqa.core.namespace import KGNamespace
from kgqa.core.store import GraphWriter, SourceFact

DEFAULT_BATCH = 20_000
# A writer may say the batch it loads best in (its `batch_size`): each batch is one bulk write into the
# embedded store, and fewer, larger ones leave RocksDB less to merge (50M facts: the batches took 63 min in
# 20,000s, 38 min in 200,000s; README, "Size")
EMBEDDED_BATCH = 200_000
# The first batch is smaller, so that a store that writes in the background (Virtuoso, Neo4j) starts
# while the rest of the file is read rather than after a whole batch has been built.
FIRST_BATCH = 2_000
Progress = Callable[[int, int], None]  # (bytes read so far, bytes in total)


@dataclass
class LoadReport:
    path: str
    format: str
    records_read: int = 0
    facts_written: int = 0
    labels_written: int = 0
    skipped: int = 0
    skipped_lines: list[int] = field(default_factory=list)  # the first few, to show
    resumed_from: int = 0
    already_complete: bool = False
    facts_in_store: int = 0
    seconds: float = 0.0
    recounted: bool = False  # the KG's fan-out counts were recomputed at the end of this file


def source_key(path: Path, fmt: str) -> str:
    stat = path.stat()
    return f"{path.resolve()}|{stat.st_size}|{fmt}"


def load_file(
    writer: GraphWriter,
    path: str | Path,
    fmt: str | None = None,
    *,
    batch_size: int | None = None,
    skip_bad: bool = False,
    force: bool = False,
    progress: Progress | None = None,
    recount: bool = True,
) -> LoadReport:
    """Load one file. A malformed line raises `BadInputLine` (file:line) unless `skip_bad`, in which
    case it is counted in the report. A file already loaded completely is not read again unless
    `force` (which rewrites it: the store's fact count does not change). `recount=False`: leave the
    fan-out counts to the load's last file (see the module's docstring)."""
    path = Path(path)
    if not path.is_file():
        raise KGQAError(f"{path}: no such file")
    if batch_size is None:
        batch_size = int(getattr(writer, "batch_size", DEFAULT_BATCH))
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    fmt = fmt or detect_format(path)
    started = time.perf_counter()
    report = LoadReport(str(path), fmt)
    state = writer.load_state(source_key(path, fmt))
    if state.complete and not force:
        if recount and writer.counts_stale():  # an earlier file's load ended before the last file's recount
            writer.finish(state)
            report.recounted = True
        report.already_complete = True
        report.facts_in_store = writer.fact_count()
        report.seconds = time.perf_counter() - started
        return report
    if force:
        state.committed, state.complete = 0, False
    report.resumed_from = state.committed
    total_bytes = path.stat().st_size
    records, position_in_file = read(path, fmt, KGNamespace(writer.kg))
    batch: list[SourceFact] = []
    labels: list[tuple[str, str]] = []
    last_position = state.committed
    limit = min(batch_size, FIRST_BATCH)

    def flush(upto: int) -> None:
        nonlocal batch, labels, limit
        limit = batch_size
        if labels:
            writer.add_labels(labels)  # type: ignore[attr-defined]
            report.labels_written += len(labels)
        writer.write_batch(batch, state, upto)
        report.facts_written += len(batch)
        batch, labels = [], []
        if progress:
            progress(position_in_file.tell(), total_bytes)

    for record in records:
        report.records_read += 1
        last_position = record.position
        if record.position <= state.committed:
            continue
        item = record.item
        if isinstance(item, Bad):
            item.stop_unless(skip_bad, path)
            report.skipped += 1
            if len(report.skipped_lines) < 10:
                report.skipped_lines.append(item.line)
        elif isinstance(item, SourceFact):
            batch.append(item)
        elif isinstance(item, Label):
            labels.append((item.iri, item.label))
        if len(batch) + len(labels) >= limit:
            flush(record.position)
    if last_position > state.committed or batch or labels:
        flush(last_position)
    writer.finish(state, recount)
    report.recounted = recount
    report.facts_in_store = writer.fact_count()
    report.seconds = time.perf_counter() - started
    if progress:
        progress(total_bytes, total_bytes)
    return report
