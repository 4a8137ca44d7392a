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
) -> None:
    """Build the label index of a KG in an embedded store or at a SPARQL endpoint, once (resumable:
    run it again after an interruption). Neo4j and Virtuoso index labels themselves when kgqa loads them."""
    from kgqa.sparql.label_index import LabelIndex, build_index
    from kgqa.sparql.reader import SparqlReader

    url = store or default_store_url()
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
