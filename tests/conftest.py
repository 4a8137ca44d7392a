from __future__ import annotations

import gzip
import os
import sys
from pathlib import Path

import pytest

from kgqa.loaders import load_file
from kgqa.core.namespace import KGNamespace
from kgqa.sparql.embedded import EmbeddedStore, EmbeddedWriter

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docker"))
from launchers import LlamaCppServer, Neo4jServer, OxigraphServer, VirtuosoServer  # noqa: E402  (docker/ holds the server launchers)

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


def all_label_pages(store, size: int) -> list[tuple[str, str]]:
    """Every (entity, label) pair of a store, read `size` at a time through `label_page`."""
    pairs: list[tuple[str, str]] = []
    after = None
    while True:
        page = store.label_page(after, size)
        pairs += page
        if len(page) < size:
            return pairs
        after = page[-1]


def hub_lines(entities: list[str], hub: str = "HUB", size: int = 400) -> list[str]:
    """A synthetic hub: HUB links to `size` entities (a few real ones, the rest new), and a few real
    entities link to HUB, so hubs sit on paths in both directions."""
    real = entities[:: max(1, len(entities) // 40)][:40]
    lines = [f"{hub}|hub_link|{e}" for e in real]
    lines += [f"{hub}|hub_link|synthetic {i}" for i in range(size - len(real))]
    lines += [f"{e}|links_to_hub|{hub}" for e in real[:15]]
    return lines


def store_from_lines(tmp_path: Path, kg: str, lines: list[str]) -> str:
    """An on-disk embedded store at tmp_path/store holding `lines` (MetaQA format) as KG `kg`; its URL."""
    from kgqa.retrieval.store_url import open_writer

    path = tmp_path / f"{kg}.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    url = f"oxigraph://{tmp_path / 'store'}"
    writer = open_writer(url, kg)
    load_file(writer, path)
    writer.close()
    return url


def subgraph_from_lines(tmp_path: Path, kg: str, lines: list[str], topic: str | list[str], hops: int = 3):  # type: ignore[no-untyped-def]
    """The APP subgraph (λ 100) around entity `topic` (or entities) of `lines` loaded as KG `kg` into an embedded store."""
    from kgqa.core.namespace import KGNamespace
    from kgqa.retrieval.app import retrieve
    from kgqa.retrieval.store_url import open_store

    store = open_store(store_from_lines(tmp_path, kg, lines), kg)
    try:
        return retrieve(store, [KGNamespace(kg).entity(t) for t in ([topic] if isinstance(topic, str) else topic)], hops, 100)
    finally:
        store.close()


@pytest.fixture(scope="session")
def demo_file(tmp_path_factory) -> Path:
    """The bundled demo KG plus a synthetic hub, as a MetaQA-format file."""
    triples_file = tmp_path_factory.mktemp("demo") / "demo_with_hub.txt"
    with gzip.open(DEMO_KG, "rt", encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f if line.strip()]
    subjects = sorted({line.split("|")[0] for line in lines})
    triples_file.write_text("\n".join(lines + hub_lines(subjects)) + "\n", encoding="utf-8")
    return triples_file


@pytest.fixture(scope="session")
def demo_kg(demo_file) -> tuple[EmbeddedStore, list[tuple[str, str, str]]]:
    """The demo file in an in-memory embedded store, with its triples as IRIs."""
    writer = EmbeddedWriter.open(None, "demo")
    load_file(writer, demo_file)
    return writer.reader(), read_metaqa_triples(demo_file, "demo")


@pytest.fixture(scope="session")
def metaqa_full() -> tuple[EmbeddedStore, list[tuple[str, str, str]]]:
    """The full MetaQA KB (../shared/data) in an in-memory embedded store, loaded once per run."""
    kb = shared_data("metaqa", "kb_reconstructed.txt")
    writer = EmbeddedWriter.open(None, "metaqa")
    load_file(writer, kb)
    return writer.reader(), read_metaqa_triples(kb, "metaqa")


@pytest.fixture(scope="session")
def gemma_weights():
    """The bundled Gemma 3 270M (tokenizer, model), loaded once per run (~40 s: the GGUF is dequantised);
    shared by the in-process LLM and GraSP's frozen selector, which only read it."""
    from kgqa.llm.local import load_causal_lm

    return load_causal_lm()


@pytest.fixture(scope="session")
def virtuoso_server(tmp_path_factory):
    """A real Virtuoso 7 (Debian's package, installed on first use) on loopback ports."""
    with VirtuosoServer(tmp_path_factory.mktemp("virtuoso")) as server:
        yield server


@pytest.fixture(scope="session")
def oxigraph_server(tmp_path_factory):
    """A real `oxigraph serve` on loopback for the whole session, stopped by PID at the end."""
    with OxigraphServer(tmp_path_factory.mktemp("oxigraph") / "db") as server:
        yield server


@pytest.fixture(scope="session")
def neo4j_server(tmp_path_factory):
    """A real Neo4j 5.26 Community (jars from Maven Central, fetched on first use) with Bolt on loopback."""
    with Neo4jServer(tmp_path_factory.mktemp("neo4j")) as server:
        yield server


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory):
    """llama.cpp's OpenAI-compatible server with the bundled Gemma 3 270M base model, on loopback."""
    with LlamaCppServer(log_dir=tmp_path_factory.mktemp("llama")) as server:
        yield server


@pytest.fixture
def uncapped_sessions(monkeypatch):
    """LLMSession refuses a call past its cap, so with the cap in place a method could never be seen
    passing its published bound: lifted, so that a test's bound assert measures the method's own loop."""
    from kgqa.llm.session import LLMSession

    original = LLMSession.__init__

    def lifted(self, llm, max_calls):  # type: ignore[no-untyped-def]
        original(self, llm, 10**6)

    monkeypatch.setattr(LLMSession, "__init__", lifted)
