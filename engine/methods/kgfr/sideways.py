"""What a question asks of the neighbour it names lies past that neighbour, not past others of its topic's kind: "which
nation is X's employer headquartered in" asks for the employer's country, while the KGFR scores may prefer a colleague's
nationality, which the employer reaches only through another person (kgfr/answer_kind.py reads the named neighbour)."""

from __future__ import annotations

import numpy as np

from kgqa.core.subgraph import Subgraph
from kgqa.methods.kgfr.reach import beyond


def of_topics_kind(sg: Subgraph, types: dict[int, list[str]]) -> np.ndarray:
    """The nodes sharing a type with a topic, the topics too (a bool per node; `types` as `node_types` gives them: nodes
    of the same types share one list)."""
    theirs = {name for topic in np.asarray(sg.topics).tolist() for name in types.get(int(topic), ())}
    kin = np.zeros(sg.num_nodes, dtype=bool)
    shares: dict[int, bool] = {}
    for node, names in types.items():
        kin[node] = shares.setdefault(id(names), not theirs.isdisjoint(names))
    return kin


def sideways(sg: Subgraph, named: np.ndarray, types: dict[int, list[str]], like_asked: dict[int, float], already: np.ndarray,
             floor: float) -> np.ndarray:
    """In a typed KG, the nodes the `named` neighbours (node indices) do not reach within the subgraph's hops less one
    but through one of the topic's kind (a bool per node). Only where they reach, so, something that reads like the asked
    noun (`like_asked` ≥ `floor`) besides the `already` demoted: "what genres does the director of X work in" goes
    through the director's other films, as nothing else of his leads to a genre."""
    kin = of_topics_kind(sg, types)
    if not kin.any() or not like_asked:
        return np.zeros(sg.num_nodes, dtype=bool)
    straight = beyond(sg, named, max(1, sg.hops - 1), kin)
    left = straight & ~already & ~kin
    left[named] = False
    if not any(left[node] and value >= floor for node, value in like_asked.items()):
        return np.zeros(sg.num_nodes, dtype=bool)
    return ~straight
