"""What an LLM-written SPARQL query must be before a store sees it (issue 47), checked on rdflib's
parse and algebra, never on the prompt's good will:

- a query, not an update (`INSERT`, `DELETE`, `LOAD`, `CLEAR`, `DROP` … do not parse as one), and
  a SELECT or an ASK (CONSTRUCT and DESCRIBE build graphs: not answers);
- no `SERVICE` anywhere (a federated call makes the store fetch a URL), whatever its spelling;
- `FROM`, `FROM NAMED` and every constant `GRAPH <iri>` only over the asked KG's graphs; a variable
  `GRAPH ?g` ranges over the dataset the store is given, which the caller restricts to those graphs
  (`SparqlReader.select_asked`);
- a LIMIT of at most `limit` rows: a query without one gets `LIMIT limit` appended (after a newline,
  so that a trailing comment cannot swallow it), and the result is parsed and checked again, so the
  text that runs is the text that was checked. A larger LIMIT is refused.

Vendor extensions (Virtuoso's `DEFINE get:soft` pragmas, which fetch documents) do not parse and
are refused with the parser's message."""

from __future__ import annotations

from collections.abc import Iterable

from pyparsing import ParseException
from rdflib.plugins.sparql.algebra import translateQuery
from rdflib.plugins.sparql.parser import parseQuery, parseUpdate
from rdflib.plugins.sparql.parserutils import CompValue
from rdflib.term import URIRef, Variable

from kgqa.methods.text2query.refusal import QueryRefused

READ_FORMS = ("SelectQuery", "AskQuery")


def check_sparql(text: str, graphs: Iterable[str], limit: int) -> str:
    """The query to run (`text`, with a LIMIT appended where it had none), or QueryRefused."""
    allowed = set(graphs)
    query = _parse(text)
    _check(query, allowed, limit)
    if query.algebra.name == "SelectQuery" and _top_limit(query) is None:
        text = text.rstrip() + f"\nLIMIT {int(limit)}"
        try:
            query = _parse(text)
        except QueryRefused:  # e.g. a trailing VALUES block, after which no LIMIT may come
            raise QueryRefused("limit", f"a LIMIT of at most {limit} could not be added at the end of the query; write one") from None
        _check(query, allowed, limit)
    return text


def mentioned_iris(text: str) -> set[str]:
    """Every IRI a (readable) query names, prefixed names expanded."""
    found: set[str] = set()
    stack: list[object] = [_parse(text).algebra]
    while stack:
        node = stack.pop()
        if isinstance(node, URIRef):
            found.add(str(node))
        elif isinstance(node, (CompValue, dict)):
            stack.extend(node.values())
        elif isinstance(node, (list, tuple, set)):
            stack.extend(node)
    return found


def _parse(text: str):  # type: ignore[no-untyped-def]
    if not text.strip():
        raise QueryRefused("empty", "no query was written")
    try:
        return translateQuery(parseQuery(text))
    except ParseException as error:
        if _is_update(text):
            raise QueryRefused("read-only", "an update (INSERT, DELETE, LOAD, CLEAR, DROP, CREATE …) is never run: write a SELECT or ASK") from None
        raise QueryRefused("not-a-query", f"not a SPARQL SELECT/ASK query this checker can read: {error.msg} at line {error.lineno}, "
                           f"column {error.col}") from None
    except Exception as error:  # noqa: BLE001 — rdflib raises assorted errors for queries it cannot translate
        raise QueryRefused("not-a-query", f"the query could not be read: {type(error).__name__}: {error}") from None


def _is_update(text: str) -> bool:
    try:
        parseUpdate(text)
    except Exception:  # noqa: BLE001 — not an update either
        return False
    return True


def _check(query, allowed: set[str], limit: int) -> None:  # type: ignore[no-untyped-def]
    form = query.algebra.name
    if form not in READ_FORMS:
        raise QueryRefused("read-only", f"only SELECT and ASK queries are run, not {form.removesuffix('Query').upper()}")
    for clause in query.algebra.get("datasetClause") or []:
        graph = clause.get("default") or clause.get("named")
        if str(graph) not in allowed:
            raise QueryRefused("graph", f"FROM {graph} is not a graph of this KG (its graphs: {', '.join(sorted(allowed))})")
    for node in _nodes(query.algebra):
        if node.name in ("ServiceGraphPattern", "Service"):
            term = node.get("term")
            raise QueryRefused("service", f"SERVICE is not allowed (the store would call {term.n3() if hasattr(term, 'n3') else term})")
        if node.name == "Graph" and isinstance(node.get("term"), URIRef) and str(node["term"]) not in allowed:
            raise QueryRefused("graph", f"GRAPH {node['term']} is not a graph of this KG (its graphs: {', '.join(sorted(allowed))})")
    for node in _nodes(query.algebra):  # a second pass: a query that breaks both is refused for what it reaches, not its shape
        if node.name == "BGP" and len(_components([_pattern_vars(t) for t in node.get("triples") or []])) > 1:
            raise QueryRefused("cartesian", "its triple patterns share no variable: the rows would be every combination of unrelated matches")
        if node.name in ("Join", "LeftJoin") and _disjoint(node.get("p1"), node.get("p2")):
            raise QueryRefused("cartesian", "two parts of it share no variable: the rows would be every combination of unrelated matches")
    found = _top_limit(query)
    if found is not None and found > limit:
        raise QueryRefused("limit", f"LIMIT {found} is over the {limit} rows a question may read")


def _pattern_vars(triple) -> set[str]:  # type: ignore[no-untyped-def]
    """The variables of one triple pattern (a property path's ends included)."""
    return {str(term) for term in triple if isinstance(term, Variable)}


def _components(groups: list[set[str]]) -> list[set[str]]:
    """The variable sets of triple patterns merged where they share a variable; patterns without
    variables (a fixed fact asked as is) are left out: they multiply no rows."""
    merged: list[set[str]] = []
    for found in (g for g in groups if g):
        touching = [m for m in merged if m & found]
        for m in touching:
            merged.remove(m)
            found = found | m
        merged.append(found)
    return merged


def _disjoint(left: object, right: object) -> bool:
    """Both sides bind variables and none in common (a cross product)."""
    a = set(getattr(left, "_vars", None) or []) if isinstance(left, CompValue) else set()
    b = set(getattr(right, "_vars", None) or []) if isinstance(right, CompValue) else set()
    return bool(a) and bool(b) and not (a & b)


def _top_limit(query) -> int | None:  # type: ignore[no-untyped-def]
    """The LIMIT of the outermost solution sequence (None: none)."""
    node = query.algebra.get("p")
    while isinstance(node, CompValue) and node.name in ("Project", "Distinct", "Reduced", "OrderBy", "ToMultiSet"):
        node = node.get("p")
    if isinstance(node, CompValue) and node.name == "Slice" and node.get("length") is not None:
        return int(node["length"])
    return None


def _nodes(root: object) -> Iterable[CompValue]:
    """Every algebra node under `root` (expressions and nested patterns included)."""
    stack, seen = [root], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, CompValue):
            yield node
            stack.extend(v for v in node.values() if not isinstance(v, (str, Variable)))
        elif isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, (list, tuple, set)):
            stack.extend(node)
