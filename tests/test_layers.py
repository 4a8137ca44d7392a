"""engine/ is grouped by layer and data flows one way: no module imports a layer that stands above
its own (the order below). Every module is parsed, not imported, so a lazy import inside a function
counts too. The package root `kgqa/__init__.py` (the public facade) and `__main__` are exempt."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# kgqa.<first part> → rank; a module may import its own rank or any lower one.
LAYERS = {
    "core": 0,
    "sparql": 1, "cypher": 1, "loaders": 1,  # the stores and the readers, over the core's protocol
    "retrieval": 2,
    "llm": 3,
    "methods": 4,
    "eval": 5,
    "faces": 6,
}
FOLDERS = {"engine": "kgqa", "sparql": "kgqa.sparql", "cypher": "kgqa.cypher", "loaders": "kgqa.loaders"}


def modules() -> dict[str, Path]:
    found = {}
    for folder, package in FOLDERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((package, *parts))] = path
    return found


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "kgqa" else None


def imports_of(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
            if node.module == "kgqa":  # `from kgqa import methods` names a layer too
                out += [(node.lineno, f"kgqa.{a.name}") for a in node.names]
    return [(line, name) for line, name in out if name == "kgqa" or name.startswith("kgqa.")]


def shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def backward_imports(found: dict[str, Path]) -> list[str]:
    problems = []
    for module, path in sorted(found.items()):
        own = layer_of(module)
        if own is None or module in ("kgqa", "kgqa.__main__"):
            continue
        for line, imported in imports_of(path):
            target = layer_of(imported)
            if imported == "kgqa":
                problems.append(f"{shown(path)}:{line}: imports the package root `kgqa` (the facade over every layer)")
            elif target not in LAYERS:
                problems.append(f"{shown(path)}:{line}: imports {imported}, which is in no layer")
            elif LAYERS[target] > LAYERS[own]:
                problems.append(f"{shown(path)}:{line}: {own} (layer {LAYERS[own]}) imports {imported} ({target}, layer {LAYERS[target]})")
    return problems


def test_every_engine_module_sits_in_a_layer():
    strays = [str(p.relative_to(ROOT)) for m, p in modules().items() if m not in ("kgqa", "kgqa.__main__") and layer_of(m) not in LAYERS]
    assert strays == [], f"modules outside the layer sub-packages: {strays}"


def test_no_module_imports_a_layer_above_its_own():
    problems = backward_imports(modules())
    assert problems == [], "\n".join(problems)


def test_the_check_catches_a_backward_import(tmp_path):
    core = tmp_path / "types.py"
    core.write_text("from kgqa.methods.kgfr.model import KGFR\n")
    lazy = tmp_path / "app.py"
    lazy.write_text("def f():\n    from kgqa.faces.sdk import Engine\n")
    found = backward_imports({"kgqa.core.types": core, "kgqa.retrieval.app": lazy})
    assert len(found) == 2 and "core (layer 0) imports kgqa.methods.kgfr.model" in found[0] and "faces" in found[1]


@pytest.mark.parametrize("folder", ["engine"])
def test_no_engine_file_runs_past_about_400_lines(folder):
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / folder).rglob("*.py") if (n := len(p.read_text().splitlines())) > 420}
    assert long == {}, f"split these: {long}"
