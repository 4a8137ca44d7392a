"""The `kgqa` command as a user runs it: a real process, a real on-disk store."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import DEMO_KG
from launchers import free_port


def kgqa(*args: str, cwd=None, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kgqa", *args], capture_output=True, text=True, timeout=300, cwd=cwd,
                          env={**os.environ, **(env or {})})


def test_load_subgraph_stats_and_clear_errors(tmp_path):
    url = f"oxigraph://{tmp_path / 'store'}"
    loaded = kgqa("load", str(DEMO_KG), "--kg", "demo", "--store", url)
    assert loaded.returncode == 0, loaded.stderr
    assert "12,283 facts written" in loaded.stdout
    again = kgqa("load", str(DEMO_KG), "--kg", "demo", "--store", url)
    assert "already loaded completely (12,283 facts" in again.stdout

    shown = kgqa("subgraph", "kismet", "--hops", "2", "--store", url)
    assert shown.returncode == 0, shown.stderr
    assert "Kismet (normalised match)" in shown.stdout and "store round trips 3" in shown.stdout

    as_json = json.loads(kgqa("subgraph", "Kismet", "--hops", "2", "--lambda", "10", "--json", "--store", url).stdout)
    assert as_json["lambda"] == 10 and as_json["linking"]["Kismet"][0]["match"] == "exact"
    assert {e["hop"] for e in as_json["edges"]} == {1, 2}

    stats = json.loads(kgqa("stats", "--json", "--store", url).stdout)
    assert stats["facts"] == 12283 and stats["kg"] == "demo"

    for args, message in [
        (("subgraph", "No Such Film", "--store", url), "no entity labelled 'No Such Film'"),
        (("subgraph", "Kismet", "--store", url, "--kg", "other"), "no KG named 'other'"),
        (("stats", "--store", f"bolt://127.0.0.1:{free_port()}"), "is unreachable"),
        (("stats", "--store", "bolt://127.0.0.1:7687?timeout=soon"), "timeout must be a number"),
        (("load", str(tmp_path / "missing.txt"), "--store", url), "missing.txt: no such file"),
    ]:
        result = kgqa(*args)
        assert result.returncode == 2 and message in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr


def test_bad_line_is_reported_with_file_and_line(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("a|r|b\nbroken line\nc|r|d\n", encoding="utf-8")
    url = f"oxigraph://{tmp_path / 'store'}"
    failed = kgqa("load", str(bad), "--store", url)
    assert failed.returncode == 2 and f"{bad}:2:" in failed.stderr and "Traceback" not in failed.stderr
    skipped = kgqa("load", str(bad), "--store", url, "--skip-bad")
    assert skipped.returncode == 0 and "skipped 1 malformed lines (first: 2)" in skipped.stdout


def test_progress_off_a_terminal_is_a_line_at_the_start_at_most_one_per_interval_and_one_at_the_end():
    from kgqa.faces.cli_common import LineProgress

    now, lines = [0.0], []
    bar = LineProgress(lines.append, every=30, clock=lambda: now[0])
    task = bar.add_task("questions", total=100)
    for step, at in [(1, 1), (10, 20), (40, 40), (60, 50), (100, 80), (100, 81)]:
        now[0] = at
        bar.update(task, completed=step)
    assert lines == ["questions: 1/100 (1%), 1 s, ~99 s left", "questions: 40/100 (40%), 40 s, ~60 s left", "questions: 100/100 (100%), 80 s"]
    bar.update(task, description="epoch 2", completed=0, total=5)
    assert lines[-1] == "epoch 2: 0/5 (0%), 81 s"


def test_ask_prints_no_dependency_warnings_or_model_loading_bars(tmp_path):
    """`kgqa ask` loads the method's checkpoint (torch, PyG) and the sentence encoder (transformers) on
    every run: none of that reaches stderr (PyG's torch.jit.script FutureWarning, transformers'
    "Loading weights" bar). A fresh embedding cache makes the encoder load for real."""
    url = f"oxigraph://{tmp_path / 'store'}"
    assert kgqa("load", str(DEMO_KG), "--kg", "demo", "--store", url).returncode == 0
    for method in ("kgfr", "rapl"):
        asked = kgqa("ask", "who directed Kismet", "--store", url, "--method", method, env={"KGQA_CACHE": str(tmp_path / f"cache-{method}")})
        assert asked.returncode == 0 and "William Dieterle" in asked.stdout, (method, asked.stderr)
        noise = [line for line in asked.stderr.splitlines() if "Warning" in line or "Loading weights" in line or "it/s]" in line]
        assert not noise, (method, asked.stderr)
        assert not asked.stderr.strip(), (method, asked.stderr)
