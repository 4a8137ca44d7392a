"""`--store` URLs → stores.

    oxigraph:///abs/path             embedded store on disk (absolute path)
    oxigraph://rel/path              embedded store on disk, relative to the working directory
    oxigraph:memory                  embedded in-memory store (SDK only: gone when the process ends)
    oxigraph+http://host:port        an `oxigraph serve` server: read through /query, loaded through /store
    sparql+http(s)://host:port/path  any SPARQL 1.1 query endpoint, read-only (Virtuoso: …/sparql)
    virtuoso://host:sqlport?sparql=…&load_dir=…   loading into Virtuoso (bulk loader over isql)
    bolt://[user:pass@]host:port[?database=…&timeout=…]   Neo4j (also neo4j://, neo4j+s://); loads too
"""

from __future__ import annotations

import os
from pathlib import Path

from kgqa.core.errors import StoreError
from kgqa.core.store import GraphStore, GraphWriter
from kgqa.cypher.connection import SCHEMES as NEO4J_SCHEMES

DEFAULT_STORE = "oxigraph://.kgqa/store"


def default_store_url() -> str:
    return os.environ.get("KGQA_STORE", DEFAULT_STORE)


def embedded_path(url: str) -> Path | None:
    """The on-disk path of an `oxigraph:` URL, or None for `oxigraph:memory`."""
    if url == "oxigraph:memory":
        return None
    if not url.startswith("oxigraph://") or url == "oxigraph://":
        raise StoreError(_unsupported(url))
    rest = url.removeprefix("oxigraph://")
    return Path(rest) if rest.startswith("/") else Path.cwd() / rest


def _unsupported(url: str) -> str:
    return (
        f"store {url!r} is not a store URL; use oxigraph:///absolute/path, oxigraph://relative/path, "
        "oxigraph+http://host:port, sparql+http://host:port/path or bolt://host:port"
    )




def _is_neo4j(url: str) -> bool:
    return url.split("://", 1)[0] in NEO4J_SCHEMES


def open_store(url: str, kg: str | None = None) -> GraphStore:
    """Open a store read-only for question time."""
    if _is_neo4j(url):
        from kgqa.cypher.store import Neo4jStore

        return Neo4jStore.connect(url, kg)
    if url.startswith(("sparql+http://", "sparql+https://")):
        from kgqa.sparql.endpoint import SparqlEndpointStore

        return SparqlEndpointStore.connect(url.removeprefix("sparql+"), kg)
    if url.startswith(("oxigraph+http://", "oxigraph+https://")):
        from kgqa.sparql.endpoint import SparqlEndpointStore

        return SparqlEndpointStore.connect(url.removeprefix("oxigraph+").rstrip("/") + "/query", kg, max_values=None)
    from kgqa.sparql.embedded import EmbeddedStore

    path = embedded_path(url)
    if path is None:
        raise StoreError("oxigraph:memory cannot be reopened read-only; use EmbeddedWriter.open(None, kg).reader() in Python")
    return EmbeddedStore.open(path, kg)


def open_writer(url: str, kg: str) -> GraphWriter:
    """Open a store for loading (loaders only)."""
    if _is_neo4j(url):
        from kgqa.cypher.writer import Neo4jWriter

        return Neo4jWriter.open(url, kg)
    if url.startswith(("oxigraph+http://", "oxigraph+https://")):
        from kgqa.sparql.oxigraph_server import OxigraphServerWriter

        return OxigraphServerWriter.open(url.removeprefix("oxigraph+"), kg)
    if url.startswith("virtuoso://"):
        from kgqa.sparql.virtuoso import VirtuosoWriter

        return VirtuosoWriter.from_url(url, kg)
    if url.startswith(("sparql+http://", "sparql+https://")):
        raise StoreError(f"store {url!r} is a read-only SPARQL endpoint; load through the server's own writer URL")
    from kgqa.sparql.embedded import EmbeddedWriter

    path = embedded_path(url)
    if path is not None:
        path.mkdir(parents=True, exist_ok=True)
    return EmbeddedWriter.open(path, kg)
