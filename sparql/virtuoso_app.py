"""APP inside Virtuoso: kgqa's stored procedure (virtuoso_app.sql) runs a whole retrieval in one
SPARQL round trip, so that no per-hop query text has to be compiled (bench/retrieval.py, MetaQA
2-hop λ=100: p50 7.09 ms in three queries → 1.36–1.62 ms in one). The loader installs it when it
opens and again when a load ends (VirtuosoWriter.finish says why); this module reads what it returns."""

from __future__ import annotations

import re
from collections.abc import Sequence

from kgqa.core.errors import StoreError
from kgqa.core.labels import display_label
from kgqa.sparql import escape
from kgqa.sparql.queries import sql_procedure
from kgqa.core.store import WholeRetrieval
from kgqa.core.types import Edge

HEADER = "kgqa-app 1"
TOO_LARGE = HEADER + " too-large"
#: Longest result text the procedure builds before it gives up and the reader asks hop by hop
#: (Virtuoso refuses to return a string session over 10 MB: HT057).
MAX_BYTES = 8_000_000
#: Virtuoso's answers when the procedure is not there, or the SPARQL user may not run it.
MISSING = ("SR185", "SR186")
_UNESCAPE = re.compile(r"\\(.)")
_UNESCAPED = {"\\": "\\", "t": "\t", "n": "\n"}


def procedure_statements() -> list[str]:
    """virtuoso_app.sql as isql statements."""
    return sql_procedure("virtuoso_app")


def topic_list(topics: Sequence[str]) -> escape.SparqlTerm:
    """The topics as the procedure takes them: one literal, IRIs separated by single spaces (each one
    checked by `escape.iri`, which refuses spaces)."""
    for topic in topics:
        escape.iri(topic)
    return escape.literal(" ".join(topics))


def parse(text: str, topics: Sequence[str], where: str) -> WholeRetrieval | None:
    """The procedure's result as a `WholeRetrieval`; None where it was too large to build."""
    lines = text.split("\n")
    if lines[0] == TOO_LARGE:
        return None
    if lines[0] != HEADER:
        raise StoreError(f"{where}: kgqa's APP procedure answered {lines[0][:80]!r}, not {HEADER!r} (an older or foreign KGQA_APP_1?)")
    iris: list[str] = []
    found: list[tuple[Edge, int]] = []
    plain: dict[str, list[str]] = {}
    preferred: dict[str, list[str]] = {}
    try:
        for line in lines[1:]:
            kind, _, rest = line.partition("\t")
            if kind == "N":
                iris.append(rest)
            elif kind == "E":
                hop, head, relation, inverse, tail = rest.split("\t")
                found.append((Edge(iris[int(head)], iris[int(relation)], inverse == "1", iris[int(tail)]), int(hop)))
            elif kind in ("L", "P"):
                number, label = rest.split("\t", 1)
                into = plain if kind == "L" else preferred
                into.setdefault(iris[int(number)], []).append(_UNESCAPE.sub(lambda m: _UNESCAPED[m.group(1)], label))
            elif line:
                raise ValueError(f"unknown line kind {kind!r}")
    except (ValueError, IndexError, KeyError) as exc:
        raise StoreError(f"{where}: kgqa's APP procedure answered a line this reader cannot read ({exc}): {line[:200]!r}") from exc
    found = list(dict.fromkeys(found))  # an edge is written once per run of its label rows
    reached = dict.fromkeys(topics)
    reached.update(dict.fromkeys(edge.tail for edge, _ in found))
    wanted = [*reached, *dict.fromkeys(edge.relation for edge, _ in found)]
    labels = {iri: display_label(iri, plain.get(iri, ()), preferred.get(iri, ())) for iri in wanted}
    return WholeRetrieval(found, labels)
