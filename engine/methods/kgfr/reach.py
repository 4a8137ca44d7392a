"""Walks over a subgraph that the answer-kind rules (kgfr/answer_kind.py) read what a question asks of a neighbour it
names with: what lies next to nodes, past them, and within a few edges of them without going back through a topic."""

from __future__ import annotations

import numpy as np

from kgqa.core.subgraph import Subgraph


def next_to(sg: Subgraph, nodes: np.ndarray) -> np.ndarray:
    """The nodes one edge from any of `nodes` (a bool per node, both)."""
    heads, tails = np.asarray(sg.edge_index[0]), np.asarray(sg.edge_index[1])
    near = np.zeros(sg.num_nodes, dtype=bool)
    near[tails[nodes[heads]]] = True
    near[heads[nodes[tails]]] = True
    return near


def past(sg: Subgraph, neighbours: np.ndarray, through: np.ndarray) -> np.ndarray:
    """What a question asks of the topic's `neighbours` lies beyond them: the topic's other one-hop neighbours lose
    unless one of them leads there (`through`), and so does every node they do not reach within hops − 1 (`beyond`)."""
    return ((np.asarray(sg.node_hop) == 1) & ~through) | ~beyond(sg, np.flatnonzero(neighbours), max(1, sg.hops - 1))


def beyond(sg: Subgraph, named: np.ndarray, steps: int, blocked: np.ndarray | None = None) -> np.ndarray:
    """The nodes within `steps` edges of the `named` ones, not through a topic nor any of the `blocked` ones (a bool per
    node; a named one is crossed all the same, of the topic's kind or not): "the country X's wife was born in" lies past
    the wife, and X's own birth country, reached only back through X, does not."""
    start = np.zeros(sg.num_nodes, dtype=bool)
    start[named] = True
    crossed = np.ones(sg.num_nodes, dtype=bool) if blocked is None else ~np.asarray(blocked, dtype=bool)
    crossed[np.asarray(sg.topics, dtype=np.int64)] = False
    return _spread(sg, start, crossed | start, steps)


def around(sg: Subgraph, blocked: np.ndarray, steps: int) -> np.ndarray:
    """The nodes within `steps` edges of a topic, through none of the `blocked` ones (they are reached, not crossed)."""
    start = np.zeros(sg.num_nodes, dtype=bool)
    start[np.asarray(sg.topics, dtype=np.int64)] = True
    return _spread(sg, start, ~blocked | start, steps)


def _spread(sg: Subgraph, reached: np.ndarray, crossed: np.ndarray, steps: int) -> np.ndarray:
    """`reached` grown `steps` edges at most, out of the nodes that may be `crossed` only."""
    for _ in range(steps):
        grown = reached | next_to(sg, reached & crossed)
        if (grown == reached).all():
            break
        reached = grown
    return reached
