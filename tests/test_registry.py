"""The method registry: options are typed and checked (names, types, ranges, choices), and every face
— CLI flags, the service's request schema and /v1/methods, the SDK's keywords, `kgqa eval --method` —
is generated from it, so that a method added as its folder plus one registry line (tests/toy_method)
shows up everywhere without touching a face."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import DEMO_KG

from kgqa.methods import REGISTRY
from kgqa.methods.registry import Method, Registry, option

TESTS = Path(__file__).resolve().parent


def test_each_method_declares_typed_checked_options_and_a_bound():
    assert REGISTRY.names == ("kgfr", "lmp", "rapl", "glow", "grasp", "text2query", "llm-only", "llm-only-cot")
    lmp = REGISTRY.get("lmp")
    assert lmp.needs_llm == "yes" and REGISTRY.get("kgfr").needs_llm == "optional"
    assert lmp.make_options({"width": 4}).width == 4 and lmp.make_options().depth == 2
    for values, message in [({"width": 0}, "'width' of method 'lmp' must be >= 1"), ({"depth": "2"}, "must be int"),
                            ({"sampler": "random"}, "must be one of llm, embedding"), ({"max_steps": 2}, "unknown option")]:
        with pytest.raises(ValueError, match=message):
            lmp.make_options(values)
    # the bound the registry states is the one the method's own session enforces
    from kgqa.methods.lmp.method import LMP

    options = lmp.make_options({"width": 2, "depth": 3, "sampler": "embedding"})
    assert lmp.call_bound(options, 2, True) == 2 * 3 * 6 + 1  # per topic and layer: sampling is embedding, no call
    assert lmp.call_bound(lmp.make_options({"depth": 3}), 2, True) == LMP(None, None, 3, 3).call_bound(2) == 2 * 3 * 12 + 1
    assert REGISTRY.get("kgfr").call_bound(REGISTRY.get("kgfr").make_options({"max_steps": 4}), 1, True) == 8
    assert REGISTRY.get("kgfr").call_bound(REGISTRY.get("kgfr").make_options(), 1, False) == 0


def test_two_methods_cannot_spell_one_option_two_ways_and_share_one_with_both_helps():
    @dataclass(frozen=True)
    class A:
        lam: int = option(100, "a")

    @dataclass(frozen=True)
    class B:
        lam: str = option("x", "b")

    make = lambda name, opts: Method(name, "", opts, "no", lambda *a: 0, "0", lambda c, o: None)  # noqa: E731
    with pytest.raises(ValueError, match="option 'lam' of 'b' differs"):
        Registry([make("a", A), make("b", B)])

    @dataclass(frozen=True)
    class C:
        lam: int = option(100, "c")

    spec, users = Registry([make("a", A), make("c", C)]).all_options()["lam"]
    assert users == ["a", "c"] and spec.help == "a c"  # one flag; its help says what it does in each method


TOY = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import toy_method
from kgqa.methods import REGISTRY
REGISTRY.register(toy_method.METHOD)   # what the one line in kgqa/methods/__init__.py would do
from typer.testing import CliRunner
from fastapi.testclient import TestClient
from kgqa import Engine
from kgqa.faces.cli import app
from kgqa.faces.service import create_app

store, out = sys.argv[2], {}
cli = CliRunner()
out["help"] = cli.invoke(app, ["ask", "--help"], terminal_width=200).output
asked = cli.invoke(app, ["ask", "who directed Kismet", "--store", store, "--method", "echo", "--repeat", "2", "--shout", "--json"])
out["ask"] = json.loads(asked.output) if asked.exit_code == 0 else asked.output
out["ask_range"] = cli.invoke(app, ["ask", "who directed Kismet", "--store", store, "--method", "echo", "--repeat", "9"]).exit_code
wrong = cli.invoke(app, ["ask", "who directed Kismet", "--store", store, "--method", "echo", "--width", "2"])
out["ask_foreign"] = (wrong.exit_code, wrong.output)
evaluated = cli.invoke(app, ["eval", sys.argv[3], "--store", store, "--method", "echo", "--limit", "2", "--out", sys.argv[4]])
out["eval"] = evaluated.exit_code, evaluated.output[-300:]
with Engine(store, "echo", repeat=3) as engine:
    out["sdk"] = [a.label for a in engine.ask("who directed Kismet").answers]
    try:
        engine.ask("who directed Kismet", repeat=5)
    except ValueError as error:
        out["sdk_range"] = str(error)
    client = TestClient(create_app(engine))
    out["methods"] = client.get("/v1/methods").json()
    out["schema"] = client.get("/openapi.json").json()["components"]["schemas"]
    served = client.post("/v1/ask", json={"question": "who directed Kismet", "method": "echo", "options": {"repeat": 2}})
    out["served"] = served.status_code, served.json()
    out["served_range"] = client.post("/v1/ask", json={"question": "q Kismet", "method": "echo", "options": {"repeat": 4}}).json()
    out["served_foreign"] = client.post("/v1/ask", json={"question": "q Kismet", "method": "echo", "options": {"width": 2}}).json()
print("RESULT" + json.dumps(out))
"""


def test_a_method_added_by_its_folder_and_one_registry_line_appears_in_every_face(tmp_path):
    from kgqa.loaders import load_file
    from kgqa.sparql.embedded import EmbeddedWriter

    writer = EmbeddedWriter.open(tmp_path / "store", "demo")
    load_file(writer, DEMO_KG)
    writer.close()
    qa = tmp_path / "qa.jsonl"
    qa.write_text("\n".join(json.dumps({"question": q, "answers": ["Kismet"]}) for q in ("who directed Kismet", "who wrote Kismet")))
    done = subprocess.run([sys.executable, "-c", TOY, str(TESTS), f"oxigraph://{tmp_path / 'store'}", str(qa), str(tmp_path / "report")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.split("RESULT", 1)[1])
    assert "--repeat" in out["help"] and "--shout" in out["help"] and "echo" in out["help"]
    assert [a["label"] for a in out["ask"]["answers"]] == ["Kismet", "Kismet"] and out["ask"]["answers"][0]["text"] == "KISMET"
    assert out["ask_range"] == 2  # typer's range check, generated from option(min=1, max=3)
    assert out["ask_foreign"][0] == 2 and "unknown option(s) ['width'] for method 'echo'" in out["ask_foreign"][1]
    assert out["eval"][0] == 0, out["eval"]
    assert out["sdk"] == ["Kismet"] * 3 and "'repeat' of method 'echo' must be <= 3" in out["sdk_range"]
    echo = next(m for m in out["methods"]["methods"] if m["name"] == "echo")
    assert echo["available"] and echo["options"]["repeat"]["default"] == 3 and echo["options"]["repeat"]["max"] == 3
    assert out["schema"]["AskOptions"]["properties"]["repeat"]["anyOf"][0]["maximum"] == 3
    assert "echo" in json.dumps(out["schema"]["AskRequest"]["properties"]["method"])
    assert out["served"][0] == 200 and [a["label"] for a in out["served"][1]["answers"]] == ["Kismet", "Kismet"]
    assert out["served_range"]["error"]["status"] == 422 and "repeat" in out["served_range"]["error"]["reason"]
    assert out["served_foreign"]["error"]["status"] == 422 and "for method 'echo'" in out["served_foreign"]["error"]["reason"]


def test_a_mistyped_checkpoint_is_an_error_naming_it_and_another_methods_is_left_to_that_method(tmp_path):
    """--checkpoint is shared by the methods: one of another method (kgfr's bundled folder here) leaves
    rapl, glow and grasp on their own bundled ones, but a folder with no checkpoint in it is named in
    an error instead of being replaced silently by the bundled one."""
    from kgqa.methods import build_runner
    from kgqa.methods.kgfr.scorer import BUNDLED_CHECKPOINT as KGFR
    from kgqa.methods.registry import checkpoint_or_bundled
    from kgqa.sparql.embedded import EmbeddedWriter

    bundled = tmp_path / "bundled"
    assert checkpoint_or_bundled(KGFR, "grasp/1", bundled) == bundled
    assert checkpoint_or_bundled(None, "grasp/1", bundled) == bundled
    store = EmbeddedWriter.open(None, "countries").reader()
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "config.json").write_text("{not json")
    for method in ("rapl", "glow", "grasp"):
        with pytest.raises(ValueError, match=f"--checkpoint {tmp_path / 'typo'}: no checkpoint there"):
            build_runner(method, store, None, tmp_path / "typo")
        with pytest.raises(ValueError, match="cannot be read as a checkpoint's config"):
            build_runner(method, store, None, tmp_path / "broken")
