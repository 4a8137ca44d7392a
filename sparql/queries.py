"""SPARQL kept in *.rq files beside this module, rendered with escaped terms only."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

from kgqa.core.errors import StoreError
from kgqa.core.namespace import KGNamespace
from kgqa.sparql.escape import SparqlTerm, iri

_SLOT = re.compile(r"\{\{(\w+)\}\}")


@cache
def template(name: str) -> str:
    return resources.files(__package__).joinpath(f"{name}.rq").read_text(encoding="utf-8")


def render(name: str, **terms: SparqlTerm) -> str:
    """Fill `{{slot}}`s of `name.rq` (terms it has no slot for are ignored). Values must come from
    `kgqa.sparql.escape`."""
    return _fill(name, template(name), terms)


def render_union(name: str, branches: dict[str, dict[str, SparqlTerm]], **shared: SparqlTerm) -> str | None:
    """`name.rq` with only the branches named in `branches` (each with its own slot values), joined by
    UNION: a branch is the text after a line `# @branch NAME`, up to the next such line or `# @end`.
    None when no branch is left (nothing to ask). Virtuoso compiles every branch it is sent, so an
    empty one is left out rather than sent with a VALUES row that matches nothing."""
    head, texts, tail = _branches(name)
    unknown = branches.keys() - texts.keys()
    if unknown:
        raise KeyError(f"{name}.rq has no branch {sorted(unknown)}")
    kept = [_fill(name, texts[b], {**shared, **terms}) for b, terms in branches.items()]
    if not kept:
        return None
    return _fill(name, head, shared) + "\n  UNION\n".join(kept) + "\n" + _fill(name, tail, shared)


@cache
def _branches(name: str) -> tuple[str, dict[str, str], str]:
    """(text before the first branch, branch name → text, text after `# @end`) of `name.rq`."""
    head, rest = template(name).split("# @branch ", 1)
    body, tail = rest.split("# @end\n", 1)
    texts = dict(part.split("\n", 1) for part in body.split("# @branch "))
    return head, {b: text.rstrip("\n") for b, text in texts.items()}, tail


def _fill(name: str, text: str, terms: dict[str, SparqlTerm]) -> str:
    for slot, value in terms.items():
        if not isinstance(value, SparqlTerm):
            raise TypeError(f"slot {slot!r} of {name}.rq got {type(value).__name__}, not an escaped SparqlTerm")
    return _substitute(f"{name}.rq", text, terms)


def _substitute(file: str, text: str, values: dict[str, str]) -> str:
    missing = set(_SLOT.findall(text)) - values.keys()
    if missing:
        raise KeyError(f"{file} needs {sorted(missing)}")
    return _SLOT.sub(lambda m: values[m.group(1)], text)


_SQL_SAFE_IRI = re.compile(r"^[A-Za-z0-9_:./\-]+$")  # our own graph IRIs (urn:kgqa:kg:NAME:data)


def sql_statements(name: str, **iris: str) -> list[str]:
    """The `;`-terminated statements of `name.sql` (Virtuoso, loader side only), `{{slot}}`s filled
    with IRIs that need no SQL quoting (anything else is refused)."""
    for slot, value in iris.items():
        _check_sql_iri(f"{name}.sql: {slot}", value)
    text = _substitute(f"{name}.sql", _sql_text(name), iris)
    return [statement.strip() for statement in text.split(";\n") if statement.strip()]


def sql_procedure(name: str) -> list[str]:
    """The statements of `name.sql` that creates stored procedures: a procedure body has `;`s of its
    own, so statements there end with a line holding only `;`."""
    return [statement.strip() for statement in _sql_text(name).split("\n;\n") if statement.strip()]


def sql_call(procedure: str, *args: str | int) -> str:
    """A call of a stored procedure with IRIs (each one checked to need no quoting) and integers as its
    arguments."""
    texts = []
    for i, value in enumerate(args):
        if isinstance(value, int):
            texts.append(str(int(value)))
        else:
            _check_sql_iri(f"{procedure} argument {i + 1}", value)
            texts.append(f"'{value}'")
    return f"{procedure} (" + ", ".join(texts) + ")"


def _sql_text(name: str) -> str:
    text = resources.files(__package__).joinpath(f"{name}.sql").read_text(encoding="utf-8")
    return "\n".join(line for line in text.splitlines() if not line.startswith("--"))


def _check_sql_iri(where: str, value: str) -> None:
    if not _SQL_SAFE_IRI.match(value):
        raise StoreError(f"{where}: IRI {value!r} cannot be written into SQL")


def graph_terms(ns: KGNamespace) -> dict[str, SparqlTerm]:
    """The `{{meta}}`, `{{data}}`, `{{fanout}}`, `{{fanin}}` slots of a KG's queries."""
    return {
        "meta": iri(ns.meta_graph),
        "data": iri(ns.data_graph),
        "fanout": iri(ns.fanout_graph),
        "fanin": iri(ns.fanin_graph),
    }
