"""`kgqa train`, `kgqa ask` and `kgqa eval` as a user runs them, on the demo KG in an on-disk store."""

from __future__ import annotations

import gzip
import json
import random
import subprocess
import sys

import pytest

from conftest import DEMO_KG


def kgqa(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kgqa", *args], capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A store with the demo KG, QA pairs built from its facts, and a checkpoint trained on them."""
    tmp = tmp_path_factory.mktemp("kgfr-cli")
    url = f"oxigraph://{tmp / 'store'}"
    assert kgqa("load", str(DEMO_KG), "--kg", "demo", "--store", url).returncode == 0
    with gzip.open(DEMO_KG, "rt", encoding="utf-8") as f:
        facts = [line.rstrip("\n").split("|") for line in f if line.strip()]
    directors = {s: o for s, r, o in facts if r == "directed_by"}
    years = {s: o for s, r, o in facts if r == "release_year"}
    movies = sorted(set(directors) & set(years))
    random.Random(0).shuffle(movies)
    lines = [f"who directed [{m}]\t{directors[m]}" for m in movies[:40]] + [f"when was [{m}] released\t{years[m]}" for m in movies[40:80]]
    qa = tmp / "qa.txt"
    qa.write_text("\n".join(lines) + "\n", encoding="utf-8")
    ckpt = tmp / "ckpt"
    result = kgqa("train", str(qa), "--store", url, "--out", str(ckpt), "--epochs", "2", "--cache-dir", str(tmp / "cache"))
    assert result.returncode == 0, result.stderr[-2000:]
    return url, qa, ckpt, tmp


def test_train_writes_a_checkpoint_with_its_provenance(trained):
    _, _, ckpt, _ = trained
    meta = json.loads((ckpt / "config.json").read_text())
    assert (ckpt / "model.safetensors").stat().st_size > 100_000
    assert meta["encoder"] == "all-MiniLM-L6-v2" and meta["model"]["layers"] == 3
    assert meta["train"]["lam"] == 100 and meta["train"]["hops"] == 3
    assert meta["train"]["split"]["validation_size"] == 8 and len(meta["train"]["split"]["validation_qids"]) == 8
    assert meta["code_version"] and "margin" in meta and len(meta["history"]) >= 1


def test_train_in_two_steps_through_a_pack(trained):
    """`--pack-out` where the store is, `--pack` where the GPU is: the second step needs no store and
    records the same split; bad combinations and bad packs are refused with a reason."""
    url, qa, _, tmp = trained
    packed = tmp / "data.npz"
    first = kgqa("train", str(qa), "--store", url, "--pack-out", str(packed), "--cache-dir", str(tmp / "cache"))
    assert first.returncode == 0 and packed.exists(), first.stderr[-2000:]
    second = kgqa("train", "--pack", str(packed), "--out", str(tmp / "ckpt2"), "--epochs", "1", "--device", "cpu")
    assert second.returncode == 0, second.stderr[-2000:]
    meta = json.loads((tmp / "ckpt2" / "config.json").read_text())
    original = json.loads((tmp / "ckpt" / "config.json").read_text())
    assert meta["train"]["split"]["validation_qids"] == original["train"]["split"]["validation_qids"]
    assert meta["model"]["message"] == "product" and "lr" in meta["history"][0]
    both = kgqa("train", str(qa), "--pack", str(packed), "--out", str(tmp / "x"))
    assert both.returncode == 2 and "not both" in both.stderr
    (tmp / "junk.npz").write_text("junk")
    junk = kgqa("train", "--pack", str(tmp / "junk.npz"), "--out", str(tmp / "y"))
    assert junk.returncode == 2 and "not a kgfr-pack" in junk.stderr and "Traceback" not in junk.stderr


def test_ask_answers_with_evidence(trained):
    url, _, ckpt, _ = trained
    result = kgqa("ask", "who directed Kismet", "--store", url, "--checkpoint", str(ckpt), "--json")
    assert result.returncode == 0, result.stderr[-2000:]
    answer = json.loads(result.stdout)
    assert [t["label"] for t in answer["topics"]] == ["Kismet"] and answer["method"] == "kgfr"
    candidates = answer["evidence"]["candidates"]
    assert 1 <= len(answer["answers"]) <= len(candidates) <= 20
    assert answer["trace"]["round_trips"] == 4  # 3 hops + labels
    assert answer["trace"]["llm"]["calls"] == 0 and answer["trace"]["llm_calls"] == []
    assert answer["trace"]["linking_candidates"]["Kismet"] == [answer["topics"][0]["iri"]]  # the linking trace
    first = answer["answers"][0]["label"]  # paths lead from the topic to the answer, as the question reads
    assert answer["evidence"]["facts"] and answer["evidence"]["paths"][0].startswith("Kismet —") and answer["evidence"]["paths"][0].endswith("→ " + first)
    assert all(c["label"] != "Kismet" for c in candidates)  # topics are not answers
    assert [a["label"] for a in answer["answers"]] == [c["label"] for c in candidates[: len(answer["answers"])]]
    text = kgqa("ask", "who directed Kismet", "--store", url, "--checkpoint", str(ckpt))
    assert text.returncode == 0 and "fact:" in text.stdout and "path:" in text.stdout
    nothing = kgqa("ask", "what is it", "--store", url, "--checkpoint", str(ckpt))
    assert nothing.returncode == 2 and "no entity" in nothing.stderr and "Traceback" not in nothing.stderr


def test_eval_reports_json_markdown_and_plots(trained):
    url, qa, ckpt, tmp = trained
    out = tmp / "report"
    result = kgqa("eval", str(qa), "--store", url, "--checkpoint", str(ckpt), "--out", str(out), "--limit", "30")
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads((out / "eval.json").read_text())
    group = report["groups"]["all"]
    assert group["questions"] == 30 and group["linking_accuracy"] == 1.0
    assert group["answerable_in_subgraph"] == 30 and 0.0 <= group["hits1"] <= group["hits20"] <= 1.0
    assert (out / "eval.md").read_text().startswith("# kgqa eval") and (out / "accuracy.png").exists() and (out / "time.png").exists()
    assert "questions: 30/30 (100%)" in result.stderr  # stderr is a pipe here: progress comes as lines, not a bar
    bad = tmp / "bad.txt"
    bad.write_text("who directed [Kismet]\tWilliam Dieterle\nno tab here\n", encoding="utf-8")
    failed = kgqa("eval", str(bad), "--store", url, "--checkpoint", str(ckpt), "--out", str(tmp / "r2"))
    assert failed.returncode == 2 and "bad.txt:2" in failed.stderr


def test_calibrate_from_eval_reports_then_ask_declines_below_the_threshold(trained):
    """`kgqa eval --decline-below 0` on questions the KG answers and on questions it cannot, then
    `kgqa calibrate` writes the checkpoint's calibration; `ask` then reports a confidence or declines."""
    import shutil

    url, qa, ckpt, tmp = trained
    mine = tmp / "ckpt-calibrated"
    shutil.copytree(ckpt, mine)
    movies = [line.split("]")[0].split("[")[1] for line in qa.read_text().splitlines()][:30]
    outside = tmp / "outside.txt"  # the KG names these films but holds none of this
    outside.write_text("".join(f"how tall is the lead of [{m}]\tnobody\nwhat did [{m}] cost to make\tnothing\n" for m in movies), encoding="utf-8")
    reports = []
    for name, path in (("in", qa), ("out", outside)):
        result = kgqa("eval", str(path), "--store", url, "--checkpoint", str(mine), "--decline-below", "0", "--out", str(tmp / name))
        assert result.returncode == 0, result.stderr[-2000:]
        report = json.loads((tmp / name / "eval.json").read_text())
        assert report["groups"]["all"]["answered"] == 1.0 and all(r["signals"] for r in report["rows"])  # nothing declined at 0
        reports.append(report)
    calibrated = kgqa("calibrate", "--checkpoint", str(mine), "--answerable", str(tmp / "in"), "--unanswerable", str(tmp / "out"))
    assert calibrated.returncode == 0, calibrated.stderr[-2000:]
    assert "← chosen" in calibrated.stdout
    saved = json.loads((mine / "calibration.json").read_text())
    assert saved["fitted_on"]["answerable"] == reports[0]["questions"] and saved["fitted_on"]["unanswerable"] == reports[1]["questions"]
    # with the checkpoint's own threshold, about 97 % of the answerable questions are still answered
    again = kgqa("eval", str(qa), "--store", url, "--checkpoint", str(mine), "--out", str(tmp / "in-again"))
    assert again.returncode == 0 and "Declining" in (tmp / "in-again" / "eval.md").read_text()
    assert json.loads((tmp / "in-again" / "eval.json").read_text())["groups"]["all"]["answered"] >= 0.95
    default = json.loads(kgqa("ask", "who directed Kismet", "--store", url, "--checkpoint", str(mine), "--json").stdout)
    assert 0 < default["trace"]["answerability"] < 1 and 0 < default["confidence"] < 1  # the calibration written is the one used
    uncalibrated = json.loads(kgqa("ask", "who directed Kismet", "--store", url, "--checkpoint", str(ckpt), "--json").stdout)
    assert uncalibrated["confidence"] is None and uncalibrated["declined"] is None
    refused_threshold = kgqa("ask", "who directed Kismet", "--store", url, "--checkpoint", str(ckpt), "--decline-below", "0.5")
    assert refused_threshold.returncode == 2 and "no calibration" in refused_threshold.stderr
    asked = json.loads(kgqa("ask", "who directed Kismet", "--store", url, "--checkpoint", str(mine), "--decline-below", "1", "--json").stdout)
    assert asked["answers"] == [] and "no answer I trust" in asked["declined"] and asked["evidence"]["candidates"]
    text = kgqa("ask", "who directed Kismet", "--store", url, "--checkpoint", str(mine), "--decline-below", "1")
    assert text.returncode == 0 and "no answer:" in text.stdout and "closest:" in text.stdout
    # reports without confidence signals, or no checkpoint, are refused by name
    (tmp / "nosignals.json").write_text(json.dumps({"rows": [{"qid": "q1", "signals": {}}]}))
    refused = kgqa("calibrate", "--checkpoint", str(mine), "--answerable", str(tmp / "nosignals.json"))
    assert refused.returncode == 2 and "nosignals.json" in refused.stderr and "Traceback" not in refused.stderr
    gold = kgqa("eval", str(qa), "--store", url, "--checkpoint", str(mine), "--topics", "gold", "--limit", "5", "--out", str(tmp / "gold"))
    assert gold.returncode == 0
    refused_gold = kgqa("calibrate", "--checkpoint", str(mine), "--answerable", str(tmp / "gold"), "--unanswerable", str(tmp / "out"))
    assert refused_gold.returncode == 2 and "--topics gold" in refused_gold.stderr
    missing = kgqa("calibrate", "--checkpoint", str(tmp / "nowhere"), "--answerable", str(tmp / "in"))
    assert missing.returncode == 2 and "nowhere" in missing.stderr
