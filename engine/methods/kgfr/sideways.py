"""What a question asks of the neighbour it names lies past that neighbour, not past others of its topic's kind: "which
nation is X's employer headquartered in" asks for the employer's country, while the KGFR scores may prefer a colleague's
nationality, which the employer reaches only through another person (kgfr/answer_kind.py reads the named neighbour)."""

from __future__ import annotations

import numpy as np

from kgqa.core.subgraph import Subgraph
from kgqa.methods.kgfr.reach import beyond


def of_topics_kind(sg: Subgraph, types: dict[int, list[str]]) -> np.ndarray:
    """The nodes sharing a type with a topic, the typed topics too (a bool per node; `types` as `node_types` gives them)."""
    theirs = {name for topic in np.asarray(sg.topics).tolist() for name in types.get(int(topic), ())}
    kin = np.zeros(sg.num_nodes, dtype=bool)
    kin[[node for node, names in types.items() if not theirs.isdisjoint(names)]] = True
    return kin


def only_through_topics_kind(sg: Subgraph, named: np.ndarray, types: dict[int, list[str]], like_asked: dict[int, float],
                             already: np.ndarray, floor: float) -> np.ndarray:
    """Where the KG types its nodes (a type relation, or Freebase property names): the nodes the `named` neighbours
    (node indices) reach within the subgraph's hops less one only through a node of the topic's kind (a bool per node).
    Nothing unless they also reach, without, a node not of the topic's kind and not `already` demoted (the named ones
    are) whose type reads like the asked noun (`like_asked` ≥ `floor`): "what genres does the director of X work in"
    goes through the director's other films, as nothing else of his leads to a genre; and a question asking for the
    topic's own kind ("which people does X's employer employ") is left alone."""
    if not like_asked:
        return np.zeros(sg.num_nodes, dtype=bool)
    kin = of_topics_kind(sg, types)
    if not kin.any():
        return np.zeros(sg.num_nodes, dtype=bool)
    directly = beyond(sg, named, max(1, sg.hops - 1), kin)
    left = directly & ~already & ~kin
    if not any(left[node] and value >= floor for node, value in like_asked.items()):
        return np.zeros(sg.num_nodes, dtype=bool)
    return ~directly
