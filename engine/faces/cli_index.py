"""`kgqa index`: the text index of a KG's entity labels, for a store kgqa did not load itself (the
loaders build it while they load). The linker's fuzzy and embedding fallbacks search it."""

from __future__ import annotations

from typing import Annotated

import typer

from kgqa.core.errors import KGQAError
from kgqa.faces.cli_common import KgOpt, StoreOpt, fail, out, progress_bar
from kgqa.retrieval.store_url import default_store_url, open_store


def index(
    store: StoreOpt = None,
    kg: KgOpt = None,
    rebuild: Annotated[bool, typer.Option("--rebuild", help="Delete the index first and build it anew")] = False,
    vectors: Annotated[bool, typer.Option(
        "--vectors", help="Neo4j: embed every entity label into a native vector index for the linker's embedding fallback"
    )] = False,
) -> None:
    """Build the label index of a KG in an embedded store or at a SPARQL endpoint, once (resumable:
    run it again after an interruption). Neo4j and Virtuoso index labels themselves when kgqa loads them;
    on Neo4j, --vectors adds the opt-in vector index of labels."""
    from kgqa.sparql.label_index import LabelIndex, build_index
    from kgqa.sparql.reader import SparqlReader

    url = store or default_store_url()
    if vectors:
        _index_vectors(url, kg)
        return
    try:
        graph = open_store(url, kg)
        try:
            if not isinstance(graph, SparqlReader) or getattr(graph, "is_virtuoso", False):
                out.print(f"{url}: this store keeps its own text index of labels (built by `kgqa load` into it); nothing to build")
                return
            path = graph.label_index
            if not hasattr(path, "parent"):
                fail(f"{url}: this store's label index is not on disk")
                return
            if rebuild:
                for suffix in ("", "-wal", "-shm"):
                    path.with_name(path.name + suffix).unlink(missing_ok=True)  # type: ignore[union-attr]
            total = graph.counts().entities
            index = LabelIndex.create(path)  # type: ignore[arg-type]
            try:
                with progress_bar(f"index labels of {graph.kg}", total) as bar:
                    task = bar.add_task(f"index labels of {graph.kg}", total=total)
                    read = build_index(graph.label_pairs(), index, progress=lambda n: bar.update(task, completed=min(n, total)))
                size = len(index)
            finally:
                index.close()
            out.print(f"KG {graph.kg!r}: {read:,} labels read, {size:,} in the index at {path}")
        finally:
            graph.close()
    except KGQAError as exc:
        fail(str(exc))


def _index_vectors(url: str, kg: str | None) -> None:
    from kgqa.cypher.label_vectors import build_label_vectors
    from kgqa.cypher.store import Neo4jStore
    from kgqa.cypher.writer import Neo4jWriter
    from kgqa.retrieval.text import TextEncoder

    try:
        graph = open_store(url, kg)
        try:
            if not isinstance(graph, Neo4jStore):
                fail(f"{url}: --vectors builds Neo4j's vector index; other stores' embedding fallback ranks the text index's candidates")
                return
            name, total = graph.kg, graph.counts().entities
        finally:
            graph.close()
        writer = Neo4jWriter.open(url, name)
        try:
            with progress_bar(f"embed labels of {name}", total) as bar:
                task = bar.add_task(f"embed labels of {name}", total=total)
                seen, written = build_label_vectors(writer, TextEncoder(), progress=lambda n: bar.update(task, completed=min(n, total)))
        finally:
            writer.close()
        out.print(f"KG {name!r}: {seen:,} labelled entities, {written:,} label vectors written now, in Neo4j's vector index kgqa_label_vectors")
    except KGQAError as exc:
        fail(str(exc))
