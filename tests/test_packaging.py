"""A built wheel and the editable install expose the same `kgqa` modules and query files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

INVENTORY = r"""
import importlib, json, pkgutil, sys
from importlib import resources
import kgqa
# Walk every package's own __path__, layer sub-packages included: under an editable install some
# subpackages live in other folders (cypher/, sparql/, loaders/), so one walk of kgqa.__path__ would miss them.
mods, todo = set(), ["kgqa", "kgqa.sparql", "kgqa.cypher", "kgqa.loaders"]
while todo:
    name = todo.pop()
    pkg = importlib.import_module(name)
    mods |= {name} - {"kgqa"}
    for m in pkgutil.iter_modules(pkg.__path__, name + "."):
        if m.ispkg and m.name not in mods:
            todo.append(m.name)
        mods.add(m.name)
mods = sorted(mods)
for m in (m for m in mods if not m.endswith("__main__")):
    importlib.import_module(m)
files = sorted(
    f"{pkg}/{f.name}" for pkg in ("kgqa.sparql", "kgqa.cypher")
    for f in resources.files(pkg).iterdir() if f.name.endswith((".rq", ".cypher", ".sql"))
)
files += sorted(f"kgqa.llm/prompts/{f.name}" for f in (resources.files("kgqa.llm") / "prompts").iterdir())
files += sorted(
    f"kgqa.methods.{m}/checkpoints/{d.name}/{f.name}" for m in ("kgfr", "rapl", "glow", "grasp")
    for d in (resources.files(f"kgqa.methods.{m}") / "checkpoints").iterdir() if d.is_dir() for f in d.iterdir() if f.is_file()
)
files += sorted(  # a LoRA adapter sits one folder deeper
    f"kgqa.methods.grasp/checkpoints/{d.name}/lora/{f.name}"
    for d in (resources.files("kgqa.methods.grasp") / "checkpoints").iterdir() if d.is_dir() and (d / "lora").is_dir() for f in (d / "lora").iterdir()
)
files += sorted(  # the path reader too
    f"kgqa.methods.kgfr/checkpoints/{d.name}/path_reader/{f.name}"
    for d in (resources.files("kgqa.methods.kgfr") / "checkpoints").iterdir() if d.is_dir() and (d / "path_reader").is_dir() for f in (d / "path_reader").iterdir()
)
files += sorted(f"kgqa.methods.glow/patterns/{f.name}" for f in (resources.files("kgqa.methods.glow") / "patterns").iterdir() if f.suffix == ".json")
print(json.dumps({"origin": kgqa.__file__, "modules": mods, "files": files}))
"""


def _inventory(env_path: str | None) -> dict:
    env = {"PATH": "/usr/bin:/bin"}
    if env_path:
        env["PYTHONPATH"] = env_path
    out = subprocess.run([sys.executable, "-c", INVENTORY], capture_output=True, text=True, env=env, cwd="/", check=True)
    return json.loads(out.stdout)


def test_wheel_and_editable_install_import_the_same_modules(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path / "dist"), str(ROOT)],
        check=True,
    )
    wheel = next((tmp_path / "dist").glob("kgqa-*.whl"))
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)], check=True)

    editable = _inventory(None)
    built = _inventory(str(site))
    assert editable["origin"].startswith(str(ROOT / "engine"))
    assert built["origin"].startswith(str(site / "kgqa"))
    assert built["modules"] == editable["modules"]
    assert built["files"] == editable["files"]
    assert {"kgqa.sparql", "kgqa.cypher", "kgqa.loaders", "kgqa.retrieval.app", "kgqa.faces.cli"} <= set(built["modules"])
    assert {"kgqa.sparql/expand_hop.rq", "kgqa.sparql/virtuoso_counts.sql", "kgqa.cypher/expand_hops.cypher"} <= set(built["files"])
    assert {"kgqa.methods.kgfr/checkpoints/kgfr-multikg/model.safetensors", "kgqa.methods.kgfr/checkpoints/kgfr-multikg/relation_vocab.npy"} <= set(built["files"])
    assert {"kgqa.methods.rapl/checkpoints/rapl-metaqa/model.safetensors", "kgqa.methods.glow/checkpoints/fb15k237-ow/predictions.npz",
            "kgqa.methods.glow/patterns/countries.json", "kgqa.methods.grasp/checkpoints/grasp-metaqa/encoder.safetensors",
            "kgqa.methods.grasp/checkpoints/grasp-metaqa/lora/adapter_model.safetensors"} <= set(built["files"])
    assert any(f.startswith("kgqa.llm/prompts/") and f.endswith(".txt") for f in built["files"])
