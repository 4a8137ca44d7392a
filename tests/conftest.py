from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from kgqa.loaders import load_file
from kgqa.namespace import KGNamespace
from kgqa.sparql.embedded import EmbeddedStore, EmbeddedWriter

ROOT = Path(__file__).resolve().parents[1]
DEMO_KG = ROOT / "demo" / "metaqa-slice.txt.gz"
SHARED_DATA = Path(os.environ.get("KGQA_SHARED_DATA", ROOT.parent / "shared" / "data"))


def shared_data(*parts: str) -> Path:
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"needs ../shared/data ({path} is absent: this is not the project's workplace)")
    return path


def read_metaqa_triples(path: Path, kg: str) -> list[tuple[str, str, str]]:
    """The facts of a MetaQA file as IRIs, parsed independently of the loaders."""
    ns = KGNamespace(kg)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("|") for line in f if line.strip()]
    return [(ns.entity(s), ns.relation(r), ns.entity(o)) for s, r, o in rows]


def hub_lines(entities: list[str], hub: str = "HUB", size: int = 400) -> list[str]:
    """A synthetic hub: HUB links to `size` entities (a few real ones, the rest new), and a few real
    entities link to HUB, so hubs sit on paths in both directions."""
    real = entities[:: max(1, len(entities) // 40)][:40]
    lines = [f"{hub}|hub_link|{e}" for e in real]
    lines += [f"{hub}|hub_link|synthetic {i}" for i in range(size - len(real))]
    lines += [f"{e}|links_to_hub|{hub}" for e in real[:15]]
    return lines


@pytest.fixture(scope="session")
def demo_kg(tmp_path_factory) -> tuple[EmbeddedStore, list[tuple[str, str, str]]]:
    """The bundled demo KG plus a synthetic hub, in an in-memory store, with its triples as IRIs."""
    tmp = tmp_path_factory.mktemp("demo")
    triples_file = tmp / "demo_with_hub.txt"
    with gzip.open(DEMO_KG, "rt", encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f if line.strip()]
    subjects = sorted({line.split("|")[0] for line in lines})
    triples_file.write_text("\n".join(lines + hub_lines(subjects)) + "\n", encoding="utf-8")
    writer = EmbeddedWriter.open(None, "demo")
    load_file(writer, triples_file)
    return writer.reader(), read_metaqa_triples(triples_file, "demo")
