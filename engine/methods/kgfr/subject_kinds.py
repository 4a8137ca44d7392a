"""Kinds in a KG without types: what stands for a node's kind is the relations it is the subject of in the subgraph
(a person is born somewhere and works somewhere, a city is located in a country). kgfr/answer_kind.py reads a
neighbour the question names as one of its topic's kind, and "where" as asking for none of the named one's kind."""

from __future__ import annotations

import numpy as np

from kgqa.core.subgraph import Subgraph
from kgqa.methods.kgfr.literal_kind import fact_ends


def subject_relations(sg: Subgraph, nodes: np.ndarray) -> dict[int, set[int]]:
    """Each of `nodes` → the relations it is the subject of in the subgraph."""
    subject, _ = fact_ends(sg)
    keep = np.isin(subject, nodes)
    out: dict[int, set[int]] = {}
    for node, relation in zip(subject[keep].tolist(), (np.asarray(sg.edge_type)[keep] // 2).tolist()):
        out.setdefault(node, set()).add(relation)
    return out


def same_kind(sg: Subgraph, named: np.ndarray) -> np.ndarray:
    """The nodes of the `named` ones' kind (a bool per node): the subjects of a relation every named node is the subject
    of (the people "where was the spouse of X born" walks through, who are born somewhere too). None where some named
    node is the subject of nothing."""
    out = np.zeros(sg.num_nodes, dtype=bool)
    kinds = subject_relations(sg, named)
    if not kinds or len(kinds) < named.size:
        return out
    shared = set.intersection(*kinds.values())
    subject, _ = fact_ends(sg)
    out[subject[np.isin(np.asarray(sg.edge_type) // 2, sorted(shared))]] = True
    return out


def of_kind(own: dict[int, set[int]], near: np.ndarray, far: np.ndarray, relation: np.ndarray, named: np.ndarray) -> np.ndarray:
    """Per link (`near` to `far` by `relation`; `own`: `subject_relations` of both ends): whether `far` is of `near`'s kind,
    the subject of a relation `near` is the subject of too, besides the link; or, where the link's word names it
    (`named`: "birthplace" and `born_in` 0.75, "founder" and `founded_by`), whether it is an entity at all, the subject
    of some relation besides the link: a city is located somewhere, while an occupation, or a MetaQA director (that KB
    states facts of films only), is the subject of nothing."""
    out = []
    for a, b, r, by_name in zip(near.tolist(), far.tolist(), relation.tolist(), named.tolist()):
        theirs = own.get(b, set()) - {r}
        out.append(bool(theirs & own.get(a, set())) or (by_name and bool(theirs)))
    return np.asarray(out, dtype=bool)
