"""The one place where values become SPARQL text.

Every IRI, literal and number that reaches a SPARQL string is produced here, returned as a
`SparqlTerm`; the query renderer (`kgqa.sparql.queries.render`) accepts nothing else, so a raw
string cannot be spliced by mistake.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# SPARQL 1.1 IRIREF forbids these (and everything up to U+0020).
_IRI_FORBIDDEN = re.compile(r'[\x00-\x20<>"{}|^`\\]')
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
_LITERAL_ESCAPES = {
    "\\": "\\\\",
    '"': '\\"',
    "'": "\\'",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\b": "\\b",
    "\f": "\\f",
}


class SparqlTerm(str):
    """SPARQL text made by this module: safe to splice into a query template."""


def iri(value: str) -> SparqlTerm:
    """`<value>` after checking it is an absolute IRI with no character SPARQL forbids in one."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"not an IRI: {value!r}")
    bad = _IRI_FORBIDDEN.search(value)
    if bad:
        raise ValueError(f"IRI {value!r} contains a forbidden character {bad.group()!r}")
    if not _SCHEME.match(value):
        raise ValueError(f"IRI {value!r} is not absolute (no scheme)")
    return SparqlTerm(f"<{value}>")


def literal(value: str) -> SparqlTerm:
    """A plain string literal with every character SPARQL treats specially escaped."""
    if not isinstance(value, str):
        raise ValueError(f"not a string literal: {value!r}")
    out = "".join(_LITERAL_ESCAPES.get(ch, ch) for ch in value)
    # Other control characters have no short escape; \u is valid in SPARQL string literals.
    out = re.sub(r"[\x00-\x1f\x7f]", lambda m: f"\\u{ord(m.group()):04X}", out)
    return SparqlTerm(f'"{out}"')


def integer(value: int) -> SparqlTerm:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"not an integer: {value!r}")
    return SparqlTerm(str(value))


def iri_list(values: list[str] | tuple[str, ...] | set[str]) -> SparqlTerm:
    """Space-separated IRIs for a `VALUES ?x { … }` block."""
    return SparqlTerm(" ".join(iri(v) for v in values))


#: The rows of an optional `VALUES (?k ?x)` block that numbers nothing: ?k stays unbound.
NOTHING_NUMBERED = SparqlTerm("(UNDEF UNDEF)")


def numbered_iris(values: Sequence[str]) -> SparqlTerm:
    """Rows of a `VALUES (?k ?x)` block, `(0 <a>) (1 <b>)`, so that result rows can name an IRI by its
    position: Oxigraph returns a small integer as it holds it, a long IRI through a dictionary
    lookup each time (~1.4 µs a row per such variable). An empty list is refused (one row of UNDEF
    would leave ?x free): where numbering is optional, use `NOTHING_NUMBERED`."""
    if not values:
        raise ValueError("numbered_iris needs at least one IRI")
    return SparqlTerm(" ".join(f"({k} {iri(v)})" for k, v in enumerate(values)))


def iri_pairs(pairs: list[tuple[str, str]]) -> SparqlTerm:
    """Rows of a two-variable VALUES block: `(<a> <b>) (<c> <d>)`. An empty list is refused: a query
    leaves out the branch instead (`queries.render_union`; not every engine accepts an empty block)."""
    if not pairs:
        raise ValueError("iri_pairs needs at least one pair")
    return SparqlTerm(" ".join(f"({iri(a)} {iri(b)})" for a, b in pairs))
