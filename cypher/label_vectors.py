"""The opt-in vector index of a Neo4j KG's entity labels (`kgqa index --vectors --store bolt://…`):
every labelled entity's sentence embedding in Neo4j's native vector index, so that the entity
linker's embedding fallback also considers names that share no word with the question's span, nor
one a letter off ("Spiderman" → *Spider-Man*). Off by default: it embeds every label of the KG once
(MiniLM on CPU: hours for millions of labels), where the text index is built while loading.
Resumable: pages in IRI order, embedding only entities that still lack a vector."""

from __future__ import annotations

from collections.abc import Callable

from kgqa.cypher.queries import statements
from kgqa.cypher.writer import Neo4jWriter

PAGE = 2_000  # entities per page and per write transaction


def build_label_vectors(writer: Neo4jWriter, encoder, progress: Callable[[int], None] | None = None) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """Create the vector index and give every labelled entity of the writer's KG its label vector.
    Returns (entities seen, vectors written now)."""
    if encoder.dim != 384:
        raise ValueError(f"the vector index holds 384-dimensional vectors; the encoder gives {encoder.dim}")
    for statement in statements("label_vectors_schema"):
        writer._auto("label_vectors_schema", statement)
    reader = writer.reader()
    seen = written = 0
    after = ""
    while page := reader._query("label_vectors_page", after=after, limit=PAGE):
        todo = [row for row in page if row["missing"]]
        if todo:
            vectors = encoder.encode_bulk([row["label"] for row in todo])
            rows = [{"iri": row["e"], "vector": vector.tolist()} for row, vector in zip(todo, vectors)]
            writer._write(("write_label_vectors", {"rows": rows}))
            written += len(rows)
        seen += len(page)
        after = page[-1]["e"]
        if progress:
            progress(seen)
    writer._auto("label_vectors_schema", "CALL db.awaitIndexes($seconds)", seconds=600)
    return seen, written
