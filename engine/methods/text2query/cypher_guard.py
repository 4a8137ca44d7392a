"""What an LLM-written Cypher query must be before Neo4j runs it (issue 47). The server plans it
(`EXPLAIN`, which runs nothing) in a READ-access session, and the plan — not the text, where a
`DETACH DELETE` can hide after a comment or inside a string-built subquery — is judged:

- the planner's query type is "r" (read only): no CREATE/MERGE/SET/DELETE/REMOVE, no schema change;
- no `LOAD CSV` (it fetches a URL, read-only as it is), no `CALL … IN TRANSACTIONS`;
- no procedure outside `ALLOWED_PROCEDURES` (`dbms.*`, `apoc.*`, `gds.*` … are refused by name);
- no administration command, and the database planned is the store's own (a `USE other` is refused);
- no cartesian product of scans: each side of a CartesianProduct step must start from one entity
  found by its (kg, iri) key (two topics of a question may be joined; every film times every actor
  may not — the planner's row estimates cannot tell them apart: it expects 0.06 rows from a product
  of four scans of the KG);
- the KG is named by `$kg` only: every `kg:` property and `.kg` comparison reads `$kg`, and the query
  names it at least once (facts never join two KGs, so a walk from this KG's nodes stays in it; rows
  of another KG's nodes are dropped when mapped, too).

Then the query runs in a READ-access session (the server refuses writes a second time) with the
store's transaction timeout, and at most `limit` rows are read (cypher/store.py `read_rows`)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from neo4j.exceptions import Neo4jError

from kgqa.methods.text2query.refusal import QueryRefused

ALLOWED_PROCEDURES = frozenset({"db.index.fulltext.queryNodes", "db.labels", "db.relationshipTypes", "db.propertyKeys"})
REFUSED_OPERATORS = {  # operator (its name without the runtime suffix) → rule
    "LoadCSV": "load-csv",
    "TransactionApply": "transactions",
    "TransactionForeach": "transactions",
}
_WRITE_WORDS = re.compile(r"^(Create|Merge|Delete|DetachDelete|Set|Remove|Foreach|Drop|Alter|Grant|Deny|Revoke|Show|Terminate|"
                          r"Start|Stop|Assert|Enable|Rename)")
_PROCEDURE = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*\(")
_KG_VALUE = re.compile(r"(?:\bkg\s*:|\.\s*kg\s*(?:=|<>|IN\b|STARTS\b|ENDS\b|CONTAINS\b|=~))\s*([^\s,})\]]+)", re.IGNORECASE)


def check_cypher(store: Any, text: str, params: dict[str, Any]) -> None:
    """Returns when `text` may run on `store` (a Neo4jStore); QueryRefused naming the rule otherwise."""
    if not text.strip():
        raise QueryRefused("empty", "no query was written")
    values = _KG_VALUE.findall(text)
    if not values or any(v != "$kg" for v in values):
        raise QueryRefused("kg-scope", "match this KG's nodes with kg: $kg (and no other kg value)")
    try:
        query_type, plan, database = store.explain(text, params)
    except Neo4jError as error:
        raise QueryRefused("explain", f"Neo4j could not plan it: {error.code}: {(error.message or '').strip()[:300]}") from None
    if database is not None and database != store.target.database:
        raise QueryRefused("database", f"it runs on database {database!r}, not this store's {store.target.database!r}")
    for step, operator, details in _operators(plan):
        if operator in REFUSED_OPERATORS:
            raise QueryRefused(REFUSED_OPERATORS[operator], f"{operator} is not allowed ({details[:120]})")
        if operator == "ProcedureCall":
            name = _procedure_name(details)
            if name not in ALLOWED_PROCEDURES:
                raise QueryRefused("procedure", f"procedure {name or details[:80]!r} is not allowed (allowed: {', '.join(sorted(ALLOWED_PROCEDURES))})")
        if _WRITE_WORDS.match(operator):
            raise QueryRefused("read-only", f"the plan has a {operator} step: only reading queries are run")
        if operator == "CartesianProduct" and not all(_anchored(child) for child in step.get("children") or []):
            raise QueryRefused("cartesian", "it combines every match of one part with every match of another, and not each from one "
                               "entity of the KG: join the parts, or start each from a topic ($topic0 …)")
    if query_type != "r":
        kind = {"rw": "reads and writes", "w": "writes", "s": "changes the schema"}.get(query_type, f"is of type {query_type!r}")
        raise QueryRefused("read-only", f"the query {kind}: only reading queries are run")


def _operators(plan: dict[str, Any]) -> Iterator[tuple[dict[str, Any], str, str]]:
    """(the step, its operator name without the runtime suffix, its details) for every step of a plan."""
    stack = [plan]
    while stack:
        step = stack.pop()
        if not isinstance(step, dict):
            continue
        name = str(step.get("operatorType", "")).split("@")[0]
        args = step.get("args") or step.get("arguments") or {}
        yield step, name, str(args.get("Details", ""))
        stack.extend(step.get("children") or [])


def _anchored(branch: dict[str, Any]) -> bool:
    """Whether a plan branch starts from one entity: its leaves are unique (kg, iri) index seeks (or
    arguments fed from outside), never a scan of labels or of all nodes."""
    for step, operator, _ in _operators(branch):
        if not step.get("children") and operator not in ("NodeUniqueIndexSeek", "Argument"):
            return False
    return True


def _procedure_name(details: str) -> str | None:
    found = _PROCEDURE.match(details)
    return found.group(1) if found else None
