"""Incomplete KGs for evaluation (GraSP §5.5): a copy of the KG with a share of the facts around the
questions' gold topic entities deleted (seeded), loaded into an embedded store, so that every method
can be evaluated on the same damaged graph and compared with the whole one.

Each gold topic loses ⌊ratio × n + u⌋ of the n facts it is the subject or object of, with u drawn
uniformly in [0, 1) per topic: ratio × n on average, also for topics with few facts (rounding would
spare every topic with at most 5 facts at 10 %). The facts come in one shuffled order per topic,
seeded by (seed, topic), and u with them, so a topic loses the same facts whichever questions ask
about it, and a larger share deletes the facts of a smaller one and more.
The copy is built from the KG's source files (line formats: MetaQA, TSV, N-Triples; label files are
kept whole), because the stores have no delete; it is kept in a folder named by its inputs and
reused. `dropped.tsv` there lists what was deleted (file, line, subject, relation, object). Runs that
need the same copy at once (two evals side by side) build it once: the others wait for it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
import random
import shutil
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

from kgqa.core.namespace import KGNamespace
from kgqa.core.store import GraphStore, SourceFact
from kgqa.loaders.load import load_file
from kgqa.loaders.qa import QAExample
from kgqa.loaders.readers import detect_format, read
from kgqa.retrieval.store_url import open_writer

LINE_FORMATS = ("metaqa", "tsv", "nt")
DRAW = 2  # the rule that draws the deleted facts, in each copy's key: copies drawn by an earlier one (1: round(ratio × n)) are built again


def gold_topic_iris(store: GraphStore, examples: Sequence[QAExample]) -> set[str]:
    labels = sorted({t for e in examples for t in e.topics})
    if not labels:
        raise ValueError("deleting facts around gold topics needs QA files that name their topics (MetaQA [brackets] or a jsonl 'topics')")
    found = store.resolve(labels)
    return {hits[0].entity.iri for hits in found.values() if hits}


def incomplete_store(kb: Sequence[Path], kg: str, topics: set[str], ratio: float, seed: int, work: Path,
                     progress: Callable[[str], None] | None = None) -> str:
    """The URL of an embedded store holding `kb` without the dropped facts (built once per inputs)."""
    if not 0 < ratio < 1:
        raise ValueError(f"--drop-topic-edges must lie between 0 and 1, got {ratio}")
    formats = [detect_format(p) for p in kb]
    for path, fmt in zip(kb, formats):
        if fmt not in LINE_FORMATS + ("labels",):
            raise ValueError(f"{path}: facts can be dropped from line formats ({', '.join(LINE_FORMATS)}), not {fmt}")
    stamp = [(str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns) for p in kb]
    key = hashlib.sha256(json.dumps([stamp, kg, sorted(topics), ratio, seed, DRAW]).encode()).hexdigest()[:16]
    folder = work / f"incomplete-{kg}-{ratio:g}-{seed}-{key}"
    url = f"oxigraph://{(folder / 'store').resolve()}"
    if (folder / "done").exists():
        return url
    work.mkdir(parents=True, exist_ok=True)
    with open(work / f".{folder.name}.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if progress:
                progress(f"waiting for another run that is building {folder}")
            fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / "done").exists():
            _build(kb, formats, kg, topics, ratio, seed, folder, url, progress)
    return url


def _build(kb: Sequence[Path], formats: Sequence[str], kg: str, topics: set[str], ratio: float, seed: int, folder: Path,
           url: str, progress: Callable[[str], None] | None) -> None:
    shutil.rmtree(folder, ignore_errors=True)  # a build cut off before its "done"
    folder.mkdir(parents=True)
    ns = KGNamespace(kg)
    around: dict[str, list[tuple[int, int, SourceFact]]] = defaultdict(list)  # topic → (file, line, fact)
    for f, (path, fmt) in enumerate(zip(kb, formats)):
        if fmt == "labels":
            continue
        records, _ = read(path, fmt, ns)
        for record in records:
            fact = record.item
            if isinstance(fact, SourceFact):
                for end in {fact.subject.iri, fact.object.iri} & topics:
                    around[end].append((f, record.position, fact))
    dropped: dict[int, set[int]] = defaultdict(set)
    rows = []
    for topic in sorted(around):
        draw = random.Random(f"{seed}:{topic}")
        facts = draw.sample(around[topic], len(around[topic]))
        for f, line, fact in facts[:math.floor(ratio * len(facts) + draw.random())]:
            if line not in dropped[f]:
                dropped[f].add(line)
                rows.append(f"{kb[f].name}\t{line}\t{fact.subject.label}\t{fact.relation.label}\t{fact.object.label}")
    (folder / "dropped.tsv").write_text("".join(r + "\n" for r in rows), encoding="utf-8")
    if progress:
        progress(f"dropping {len(rows):,} facts around {len(around):,} topics ({ratio:.0%} of each topic's on average); loading the copy into {folder / 'store'}")
    writer = open_writer(url, kg)
    try:
        for f, (path, fmt) in enumerate(zip(kb, formats)):
            copy = folder / f"{f}-{path.name.removesuffix('.gz')}"
            skip = dropped.get(f, set())
            with _lines(path) as source, open(copy, "w", encoding="utf-8") as sink:
                for number, line in enumerate(source, start=1):
                    sink.write("\n" if number in skip else line)  # a blank line keeps the other lines' numbers
            load_file(writer, copy, fmt)
            copy.unlink()
    finally:
        writer.close()
    (folder / "done").write_text(json.dumps({"dropped": len(rows), "topics": len(around), "ratio": ratio, "seed": seed}) + "\n")


def _lines(path: Path):  # type: ignore[no-untyped-def]
    import gzip

    with open(path, "rb") as probe:
        zipped = probe.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rt", encoding="utf-8", newline="") if zipped else open(path, encoding="utf-8", newline="")
