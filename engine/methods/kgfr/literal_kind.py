"""Kinds a KG's labels show without a model (issue 46, part 2): a year, a date or a number, told from an
entity that happens to be named like one by whether it is ever a fact's subject; and whether a question
for a quantity finds any number at all. The kinds read from types and roles are kgfr/answer_kind.py."""

from __future__ import annotations

import re

import numpy as np

from kgqa.core.subgraph import Subgraph
from kgqa.methods.kgfr.asked_kind import QUANTITY, asked_kind, names_quantity

_YEAR = re.compile(r"^\s*(?:1[0-9]{3}|20[0-9]{2})\s*$")
_DATE = re.compile(r"^\s*\d{4}-\d{2}(?:-\d{2})?(?:[T ].*)?$|^\s*\d{1,2} [A-Z][a-z]+ \d{4}\s*$")
_NUMBER = re.compile(r"^\s*[-+]?\d[\d,]*(?:\.\d+)?\s*$")


def literal_kind(label: str) -> str | None:
    """"time" for a year or a date, "number" for another number, None for anything else."""
    first = label.lstrip()[:1]
    if not first or not (first.isdigit() or first in "+-"):  # most labels: read for every node of a subgraph
        return None
    if _YEAR.match(label) or _DATE.match(label):
        return "time"
    if _NUMBER.match(label):
        return "number"
    return None


def fact_ends(sg: Subgraph) -> tuple[np.ndarray, np.ndarray]:
    """Each edge's fact as (subject, object) nodes: edge types are 2·relation + inverse, and an
    inverse edge runs from the fact's object to its subject."""
    inverse = np.asarray(sg.edge_type) % 2 == 1
    heads, tails = np.asarray(sg.edge_index[0]), np.asarray(sg.edge_index[1])
    return np.where(inverse, tails, heads), np.where(inverse, heads, tails)


def subjects(sg: Subgraph) -> np.ndarray:
    """The nodes that are the subject of some fact of the subgraph (a bool per node)."""
    out = np.zeros(sg.num_nodes, dtype=bool)
    out[fact_ends(sg)[0]] = True
    return out


def literal_nodes(sg: Subgraph) -> list[str | None]:
    """Each node's literal kind: a label that reads as a year, date or number, of a node that is no
    fact's subject (the year 2012 is only ever an object); "either" for such a label on a subject (a
    film called "2012", or a KG like MetaQA's where the film and the year are one node); None for
    anything else."""
    is_subject = subjects(sg)
    kinds = [literal_kind(label) for label in sg.node_labels]
    return ["either" if kind is not None and is_subject[i] else kind for i, kind in enumerate(kinds)]


def literal_mismatch(sg: Subgraph, asked: str) -> np.ndarray:
    """The nodes whose literal kind is not the `asked` one ("time", "number" or "entity"): for an entity, the years and
    numbers; for a time or a number, every node of another kind, unless the subgraph holds none of that kind."""
    kinds = literal_nodes(sg)
    if asked == "entity":
        return np.array([k in ("time", "number") for k in kinds])
    wanted = np.array([k == asked for k in kinds])
    return np.array([k != asked and k != "either" for k in kinds]) if wanted.any() else np.zeros(len(kinds), dtype=bool)


def missing_number(sg: Subgraph, probe: str) -> bool:
    """True where the question asks for a quantity (how many / how tall …, the population, budget or
    height or running time of …) and no node of the subgraph other than its topics is a number: the KG cannot answer
    it there, whatever ranks first (a city for "how many employees does X have"). Dates are not
    judged so: people ask "when" of events a KG names as entities ("when did X go to college")."""
    asked = asked_kind(probe)
    if asked.literal != "number" or not (QUANTITY.search(probe.lower()) or names_quantity(asked.noun)):
        return False
    others = np.ones(sg.num_nodes, dtype=bool)
    others[np.asarray(sg.topics, dtype=np.int64)] = False
    kinds = literal_nodes(sg)
    return not any(kinds[i] in ("number", "either") for i in np.flatnonzero(others).tolist())
