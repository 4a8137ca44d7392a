"""Loaders against real files and real processes: formats, bad lines, idempotence, resume after kill."""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from kgqa.core.errors import BadInputLine
from kgqa.loaders import load_file
from kgqa.loaders.load import source_key
from kgqa.core.namespace import KGNamespace
from kgqa.sparql.embedded import EmbeddedStore, EmbeddedWriter

NS = KGNamespace("t")


def _writer() -> EmbeddedWriter:
    return EmbeddedWriter.open(None, "t")


def test_metaqa_and_tsv_and_gzip_give_the_same_graph(tmp_path):
    rows = [("Kismet", "directed_by", "William Dieterle"), ("Kismet", "release_year", "1944"), ("Bluebeard", "release_year", "1944")]
    (tmp_path / "kb.txt").write_text("".join(f"{s}|{r}|{o}\n" for s, r, o in rows), encoding="utf-8")
    (tmp_path / "kb.tsv").write_text("".join(f"{s}\t{r}\t{o}\n" for s, r, o in rows), encoding="utf-8")
    with gzip.open(tmp_path / "kb.tsv.gz", "wt", encoding="utf-8") as f:
        f.write("".join(f"{s}\t{r}\t{o}\n" for s, r, o in rows))
    graphs = []
    for name in ("kb.txt", "kb.tsv", "kb.tsv.gz"):
        w = _writer()
        report = load_file(w, tmp_path / name)
        assert report.facts_in_store == 3
        graphs.append({q for q in w.store.quads_for_pattern(None, None, None, None) if ":load:" not in q.subject.value})
    assert graphs[0] == graphs[1] == graphs[2]
    reader = w.reader()
    hit = reader.resolve(["william dieterle"])["william dieterle"][0]
    assert hit.entity.iri == NS.entity("William Dieterle") and hit.match == "normalised" and hit.entity.label == "William Dieterle"


def test_ntriples_keeps_iris_and_labels_and_skolemises_blank_nodes(tmp_path):
    nt = tmp_path / "g.nt"
    nt.write_text(
        "<http://ex.org/a> <http://ex.org/knows> <http://ex.org/b> .\n"
        '<http://ex.org/a> <http://www.w3.org/2000/01/rdf-schema#label> "Alice A." .\n'
        '<http://ex.org/b> <http://ex.org/born> "1970" .\n'
        "_:x <http://ex.org/knows> <http://ex.org/a> .\n"
        "# a comment\n\n",
        encoding="utf-8",
    )
    w = _writer()
    report = load_file(w, nt)
    assert report.facts_in_store == 3 and report.labels_written == 1
    reader = w.reader()
    assert reader.resolve(["alice a"])["alice a"][0].entity.iri == "http://ex.org/a"
    assert reader.labels([NS.entity("1970")]) == {NS.entity("1970"): "1970"}
    subjects = {q.subject.value for q in w.store.quads_for_pattern(None, None, None, None)}
    assert any(s.startswith(NS.base + "b:") for s in subjects)


def test_turtle_streams_through_rdflib(tmp_path):
    ttl = tmp_path / "g.ttl"
    ttl.write_text(
        "@prefix ex: <http://ex.org/> .\n@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
        'ex:a ex:knows ex:b , ex:c ; rdfs:label "A" .\nex:b ex:knows ex:c .\n',
        encoding="utf-8",
    )
    w = _writer()
    report = load_file(w, ttl)
    assert report.facts_in_store == 3 and report.labels_written == 1
    assert w.reader().resolve(["A"])["A"][0].entity.iri == "http://ex.org/a"


@pytest.mark.parametrize(
    "name, content, bad_line",
    [
        ("bad.txt", "a|r|b\na|r\nc|r|d\n", 2),
        ("bad.tsv", "a\tr\tb\n\na\t\tb\n", 3),
        ("bad.nt", "<http://e/a> <http://e/r> <http://e/b> .\n<http://e/a> <http://e/r> .\n", 2),
    ],
)
def test_malformed_line_names_file_and_line_or_is_skipped_and_counted(tmp_path, name, content, bad_line):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(BadInputLine) as info:
        load_file(_writer(), path)
    assert f"{path}:{bad_line}:" in str(info.value)
    report = load_file(_writer(), path, skip_bad=True)
    assert report.skipped == 1 and report.skipped_lines == [bad_line]


@pytest.mark.parametrize("gzipped", [False, True])
def test_a_binary_or_wrongly_encoded_file_is_refused_with_its_name_line_and_byte_offset_and_keeps_what_came_before(tmp_path, gzipped):
    good = "".join(f"e{i}|r|e{i + 1}\n" for i in range(30)).encode()
    cases = {"latin1.txt": good + "Zoë|r|x\n".encode("latin-1"), "binary.txt": good + b"\x7fELF\x02\x01\x00\x00|r|x\n"}
    for name, content in cases.items():
        path = tmp_path / (name + (".gz" if gzipped else ""))
        path.write_bytes(gzip.compress(content) if gzipped else content)
        writer = _writer()
        with pytest.raises(BadInputLine) as info:
            load_file(writer, path, "metaqa", batch_size=10, skip_bad=True)
        offset = len(good) + (2 if name == "latin1.txt" else 6)
        assert f"{path}:31:" in str(info.value) and f"byte offset {offset}" in str(info.value), str(info.value)
        assert ("not UTF-8" if name == "latin1.txt" else "binary") in str(info.value)
        assert writer.fact_count() == 30  # the batches before it are in, and recorded as such
        assert writer.load_state(source_key(path, "metaqa")).committed == 30


def test_turtle_syntax_error_stops_even_with_skip_bad(tmp_path):
    path = tmp_path / "bad.ttl"
    path.write_text("@prefix ex: <http://ex.org/> .\nex:a ex:b ex:c .\nex:a ex:b .\n", encoding="utf-8")
    with pytest.raises(BadInputLine) as info:
        load_file(_writer(), path, skip_bad=True)
    assert str(path) in str(info.value) and "Turtle syntax error" in str(info.value)


def test_loading_twice_keeps_the_count(tmp_path):
    path = tmp_path / "kb.txt"
    path.write_text("".join(f"m{i}|r{i % 3}|e{i % 50}\n" for i in range(1000)) + "m1|r1|e1\n", encoding="utf-8")
    store_dir = tmp_path / "store"
    w = EmbeddedWriter.open(store_dir, "t")
    first = load_file(w, path, batch_size=128)
    second = load_file(w, path, batch_size=128)
    forced = load_file(w, path, batch_size=77, force=True)
    assert first.facts_in_store == second.facts_in_store == forced.facts_in_store == 1000
    assert second.already_complete and forced.facts_written == 1001


def test_the_first_batch_is_small_and_the_rest_full(tmp_path):
    """A background writer starts on a small first batch while the rest is read; no fact is lost or
    written twice at the seams, and the progress record is the position of each batch's last line."""
    from kgqa.loaders.load import FIRST_BATCH

    path = tmp_path / "kb.txt"
    n = FIRST_BATCH + 2 * 3000 + 17
    path.write_text("".join(f"m{i}|r{i % 3}|e{i % 50}\n" for i in range(n)), encoding="utf-8")
    w = _writer()
    sizes, marks = [], []
    write = w.write_batch
    w.write_batch = lambda facts, state, committed: (sizes.append(len(facts)), marks.append(committed), write(facts, state, committed))  # type: ignore[method-assign]
    report = load_file(w, path, batch_size=3000)
    assert sizes == [FIRST_BATCH, 3000, 3000, 17] and report.facts_in_store == n
    assert marks == [FIRST_BATCH, FIRST_BATCH + 3000, FIRST_BATCH + 6000, n]
    sizes.clear()
    load_file(w, path, batch_size=500, force=True)
    assert sizes[:2] == [500, 500]  # never larger than asked
    sizes.clear()
    w.batch_size = 4000  # type: ignore[attr-defined]  # without --batch-size, the writer's own (the embedded store's: EMBEDDED_BATCH)
    load_file(w, path, force=True)
    assert sizes == [FIRST_BATCH, 4000, n - FIRST_BATCH - 4000]


def _kgqa(*args: str) -> list[str]:
    return [sys.executable, "-m", "kgqa", *args]


def _big_tsv(path: Path, unique: int) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        for i in range(unique):
            f.write(f"movie {i}\trel{i % 7}\tentity {i % 5000}\n")
        for i in range(0, unique, 1000):  # duplicates: a set of facts, not a list of lines
            f.write(f"movie {i}\trel{i % 7}\tentity {i % 5000}\n")
    return path


def _load_until(cmd: list[str], started_enough) -> subprocess.Popen:  # type: ignore[no-untyped-def]
    """Start a `kgqa load` and return it, still running, once `started_enough()` holds."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and proc.poll() is None and not started_enough():
        time.sleep(0.05)
    assert proc.poll() is None, f"the load ended before it could be killed: {proc.stderr.read().decode()[-500:]}"  # type: ignore[union-attr]
    return proc


def _kill_mid_load(cmd: list[str], started_enough) -> None:  # type: ignore[no-untyped-def]
    proc = _load_until(cmd, started_enough)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def _resume_and_check(cmd: list[str], writer_factory, path: Path, unique: int) -> None:  # type: ignore[no-untyped-def]
    from kgqa.loaders.load import source_key

    writer = writer_factory()
    state = writer.load_state(source_key(path, "tsv"))
    partial = writer.fact_count()
    writer.close()
    del writer
    assert 0 < state.committed < unique and not state.complete
    assert 0 < partial < unique
    rerun = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert rerun.returncode == 0, rerun.stderr
    assert "resumed after record" in rerun.stdout
    assert f"now holds {unique:,} facts" in rerun.stdout


def test_killed_load_resumes_to_the_exact_count(tmp_path):
    """A real `kgqa load` into the embedded store is killed with SIGKILL mid-load; the rerun finishes
    at the exact count."""
    unique = 300_000
    path = _big_tsv(tmp_path / "big.tsv", unique)
    store_dir = tmp_path / "store"
    cmd = _kgqa("load", str(path), "--kg", "t", "--store", f"oxigraph://{store_dir}", "--batch-size", "5000")

    def written_enough() -> bool:  # several batches in (the whole load writes ~350 MB), far from the end
        return store_dir.exists() and sum(p.stat().st_size for p in store_dir.glob("*") if p.is_file()) > 60_000_000

    _kill_mid_load(cmd, written_enough)
    _resume_and_check(cmd, lambda: EmbeddedWriter.open(store_dir, "t"), path, unique)
    assert EmbeddedStore.open(store_dir).counts().facts == unique


@pytest.mark.parametrize("server", ["oxigraph", "virtuoso", "neo4j"])
def test_killed_load_into_a_server_resumes_to_the_exact_count(tmp_path, request, server):
    """The same against real servers: the killed process is the loader; the server keeps running."""
    from kgqa import open_writer

    unique = 200_000
    path = _big_tsv(tmp_path / "big.tsv", unique)
    if server == "oxigraph":
        url = "oxigraph+" + request.getfixturevalue("oxigraph_server").url
    elif server == "neo4j":
        url = request.getfixturevalue("neo4j_server").url
    else:
        url = request.getfixturevalue("virtuoso_server").writer_url
    cmd = _kgqa("load", str(path), "--kg", "killed", "--store", url, "--batch-size", "5000")
    watcher = open_writer(url, "killed")
    _kill_mid_load(cmd, lambda: watcher.load_state(source_key(path, "tsv")).committed >= 15_000)
    watcher.close()
    _resume_and_check(cmd, lambda: open_writer(url, "killed"), path, unique)


@contextmanager
def _virtuoso_crashed_mid_load(database: Path, path: Path, url_options: str):  # type: ignore[no-untyped-def]
    """A `kgqa load` of `path` (KG "crash", batches of 5,000) into a real Virtuoso whose server is
    killed (SIGKILL) once 20,000 facts are committed, as the progress read through its SPARQL endpoint
    says; yields the server restarted on the same database."""
    from launchers import VirtuosoServer

    from kgqa import open_writer

    key = source_key(path, "tsv")
    with VirtuosoServer(database) as server:
        watcher = open_writer(server.writer_url, "crash")
        cmd = _kgqa("load", str(path), "--kg", "crash", "--store", server.writer_url + url_options, "--batch-size", "5000")
        load = _load_until(cmd, lambda: watcher.load_state(key).committed >= 20_000)
        server.proc.kill()  # type: ignore[union-attr]
        server.proc.wait()  # type: ignore[union-attr]
        assert load.wait(120) != 0  # its server is gone
        watcher.close()
    (database / "virtuoso.lck").unlink(missing_ok=True)  # what a crash leaves behind
    with VirtuosoServer(database) as restarted:
        yield restarted


def test_virtuoso_killed_mid_load_loses_no_fact_its_progress_vouches_for(tmp_path):
    """The server, not the loader, dies (SIGKILL) mid-load and restarts on the same database. The
    bulk loader's quads are not in Virtuoso's transaction log until a checkpoint, so a progress
    record must not outlive the facts it vouches for; the rerun then ends at the exact count."""
    from kgqa import open_writer

    unique = 200_000
    path = _big_tsv(tmp_path / "big.tsv", unique)
    key = source_key(path, "tsv")
    with _virtuoso_crashed_mid_load(tmp_path / "virtuoso", path, "") as restarted:
        writer = open_writer(restarted.writer_url, "crash")
        committed = writer.load_state(key).committed
        assert writer.fact_count() >= committed  # the first `unique` lines are distinct facts
        writer.close()
        cmd = _kgqa("load", str(path), "--kg", "crash", "--store", restarted.writer_url, "--batch-size", "5000")
        rerun = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        assert rerun.returncode == 0, rerun.stderr
        assert f"now holds {unique:,} facts" in rerun.stdout


def test_virtuoso_checkpoints_during_a_load_keep_its_progress_through_a_crash(tmp_path):
    """With `checkpoint_s=0` the writer asks for a checkpoint after every batch: the server killed
    once 20,000 facts are committed restarts with at least the batches checkpointed before the last
    one (15,000), and still with no progress that outlives its facts. The watcher reads the progress
    through the SPARQL endpoint all along, i.e. across the checkpoints (Virtuoso answers 404 there
    meanwhile: the reader asks again)."""
    from kgqa import open_writer

    path = _big_tsv(tmp_path / "big.tsv", 100_000)
    key = source_key(path, "tsv")
    with _virtuoso_crashed_mid_load(tmp_path / "virtuoso", path, "&checkpoint_s=0") as restarted:
        writer = open_writer(restarted.writer_url, "crash")
        committed = writer.load_state(key).committed
        assert committed >= 15_000
        assert writer.fact_count() >= committed
        writer.close()


def test_labels_file_gives_readable_names_to_ids(tmp_path):
    (tmp_path / "kb.tsv").write_text("/m/01\t/film/directed_by\t/m/02\n", encoding="utf-8")
    (tmp_path / "names.tsv").write_text("/m/01\tKismet\n/m/02\tWilliam Dieterle\nbroken line\n", encoding="utf-8")
    w = _writer()
    load_file(w, tmp_path / "kb.tsv")
    with pytest.raises(BadInputLine, match="names.tsv:3"):
        load_file(w, tmp_path / "names.tsv", "labels")
    report = load_file(w, tmp_path / "names.tsv", "labels", skip_bad=True)
    assert report.labels_written == 2 and report.skipped == 1
    reader = w.reader()
    assert reader.labels([NS.entity("/m/01")]) == {NS.entity("/m/01"): "Kismet"}  # the given name, not the id
    assert reader.resolve(["kismet"])["kismet"][0].entity.iri == NS.entity("/m/01")
    assert reader.resolve(["/m/02"])["/m/02"][0].entity.label == "/m/02"  # ids still resolve


def test_a_background_write_keeps_order_and_its_error_surfaces():
    from kgqa.core.inflight import OneInFlight

    done: list[int] = []
    writes = OneInFlight("test-load")

    def write(n: int) -> None:
        if n == 3:
            raise RuntimeError("batch 3 refused")
        done.append(n)

    writes.submit(write, 1)
    writes.submit(write, 2)
    writes.submit(write, 3)
    with pytest.raises(RuntimeError, match="batch 3 refused"):
        writes.submit(write, 4)  # waits for batch 3 first, and says what failed
    assert done == [1, 2]
    writes.submit(write, 5)
    writes.close()
    assert done == [1, 2, 5]


@pytest.mark.parametrize("server", ["embedded", "oxigraph", "virtuoso", "neo4j"])
def test_several_files_are_recounted_once_and_a_load_stopped_before_its_recount_is_recounted_by_the_rerun(tmp_path, request, server):
    """`recount=False` (every file but a load's last) leaves the counts stale and says so in the store;
    a rerun that finds the file complete recounts then, so the counts always end up those of all the
    facts; a complete file under fresh counts is not recounted again."""
    from kgqa import open_writer
    from kgqa.retrieval.store_url import open_store

    first, second = tmp_path / "a.tsv", tmp_path / "b.tsv"
    first.write_text("hub\tr\tx1\nhub\tr\tx2\nhub\tr\tx3\n", encoding="utf-8")
    second.write_text("hub\tr\tx4\nhub\ts\ty1\n", encoding="utf-8")
    if server == "virtuoso":
        virtuoso = request.getfixturevalue("virtuoso_server")
        url, read_url = virtuoso.writer_url, "sparql+" + virtuoso.sparql_url
    else:
        url = {"embedded": lambda: f"oxigraph://{tmp_path / 'store'}", "oxigraph": lambda: "oxigraph+" + request.getfixturevalue("oxigraph_server").url,
               "neo4j": lambda: request.getfixturevalue("neo4j_server").url}[server]()
        read_url = url
    kg = f"several{server}"

    def facts_per_relation() -> dict[str, int]:
        store = open_store(read_url, kg)
        try:
            return {r.label: r.facts for r in store.relations()}
        finally:
            store.close()

    writer = open_writer(url, kg)
    assert not writer.counts_stale()
    assert load_file(writer, first, recount=False).recounted is False and writer.counts_stale()
    writer.close()  # the load stops here, before its last file
    writer = open_writer(url, kg)
    rerun = load_file(writer, first)
    assert rerun.already_complete and rerun.recounted and not writer.counts_stale()
    writer.close()
    assert facts_per_relation() == {"r": 3}
    writer = open_writer(url, kg)
    assert load_file(writer, second, recount=False).facts_written == 2 and writer.counts_stale()
    assert load_file(writer, second).recounted and not writer.counts_stale()
    again = load_file(writer, second)
    assert again.already_complete and not again.recounted  # fresh counts: nothing to redo
    writer.close()
    assert facts_per_relation() == {"r": 4, "s": 1}
