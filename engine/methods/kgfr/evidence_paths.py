"""The paths an answer's evidence shows (kgfr/answer.py), read from the topics as the question is:
the walk along the relation path the reader read to the answer (`Walker`), and shortest paths from
each topic (KGFR eq. 12, which goes from the candidate). Edges are numbered as `edge_arrays` numbers
them: each fact, then its inverse."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kgqa.core.subgraph import Subgraph


class Walker:
    """Walks along a group's relation sequence back to the topics, for the evidence of the answers a
    reading ranked (the path that won each its reading). Built once per question; the edges of each
    type and the nodes each sequence prefix reaches from the topics are kept as they are asked for."""

    def __init__(self, sg: Subgraph, edges: tuple[np.ndarray, np.ndarray, np.ndarray]):
        """`edges`: (heads, tails, types) as `edge_arrays` gives them."""
        self.heads, self.tails, self.types = edges
        self.num_nodes = sg.num_nodes
        topics = np.zeros(sg.num_nodes, dtype=bool)
        topics[np.asarray(sg.topics, dtype=np.int64)] = True
        self.is_topic = topics
        self._reached: dict[tuple[int, ...], np.ndarray] = {(): topics}
        self._of_type: dict[int, np.ndarray] = {}

    def of_type(self, kind: int) -> np.ndarray:
        """The ids of the edges of one type, ascending."""
        if kind not in self._of_type:
            self._of_type[kind] = np.flatnonzero(self.types == kind)
        return self._of_type[kind]

    def reached(self, prefix: tuple[int, ...]) -> np.ndarray:
        """The nodes (a mask) that walks from the topics along `prefix` end on."""
        if prefix not in self._reached:
            before = self.reached(prefix[:-1])
            edges = self.of_type(prefix[-1])
            step = np.zeros(self.num_nodes, dtype=bool)
            step[self.tails[edges[before[self.heads[edges]]]]] = True
            self._reached[prefix] = step
        return self._reached[prefix]

    def walk(self, sequence: Sequence[int], node: int) -> list[int]:
        """Edge ids of one walk from a topic along `sequence` that ends on `node`; [] where none does.
        Stepping back from `node`, a node the walks reach at that step is always there to take; one
        not yet on the walk and not a topic is preferred (X → X's wife → her country, not X → X's wife
        → X → X's country), then the lowest edge id."""
        sequence = tuple(sequence)
        if not sequence or not self.reached(sequence)[node]:
            return []
        back, on_walk = [], {node}
        for i in range(len(sequence), 0, -1):
            options = self.of_type(sequence[i - 1])
            options = options[(self.tails[options] == node) & self.reached(sequence[: i - 1])[self.heads[options]]]
            before = self.heads[options]
            fresh = options[_none_of(before, on_walk) & ((i == 1) | ~self.is_topic[before])]
            edge = int(fresh[0] if fresh.size else options[0])  # ascending: the lowest id
            back.append(edge)
            node = int(self.heads[edge])
            on_walk.add(node)
        return back[::-1]


def _none_of(values: np.ndarray, few: set[int]) -> np.ndarray:
    """~np.isin(values, few) for the handful of nodes a walk holds, without isin's sorting (a walk asks per step)."""
    out = np.ones(values.shape, dtype=bool)
    for value in few:
        out &= values != value
    return out


def shortest_tree(src: np.ndarray, dst: np.ndarray, num_nodes: int, topic: int) -> np.ndarray:
    """Breadth first from `topic` over the directed edges (both directions of every fact exist), one
    level at a time: each node reached → the edge it was first reached by (of a level's edges into
    it, the lowest id), -1 where it was not. One tree per topic serves every candidate of a question
    (a Python BFS per candidate cost ~4 ms each on 3-hop FB15k-237 subgraphs)."""
    previous = np.full(num_nodes, -1, dtype=np.int64)
    seen = np.zeros(num_nodes, dtype=bool)
    seen[topic] = True
    frontier = seen.copy()
    while True:
        edges = np.flatnonzero(frontier[src] & ~seen[dst])
        if edges.size == 0:
            return previous
        reached, first = np.unique(dst[edges], return_index=True)  # edges ascend: the first is the lowest id
        previous[reached] = edges[first]
        seen[reached] = True
        frontier = np.zeros(num_nodes, dtype=bool)
        frontier[reached] = True


def path_in(tree: np.ndarray, src: np.ndarray, node: int) -> list[int]:
    """Edge ids of the tree's path from its root to `node` ([] where the tree does not reach it)."""
    path = []
    while tree[node] >= 0:
        path.append(int(tree[node]))
        node = int(src[tree[node]])
    return path[::-1]
