"""The directed line graph L(G) of a retrieved subgraph (RAPL Def. 1, eq. 3), built from the
Subgraph's arrays with sorting and `searchsorted`, never a Python loop per edge.

A node of L(G) is a triple walked away from the topic entities: each fact of the subgraph read in
the direction that leaves the entity APP expanded it from (fact reached at hop h, head first reached
at hop h-1); a fact between two entities of the same frontier is kept both ways. Its `step` is that
hop. L(G) has an edge i → j iff tail(i) = head(j) (Def. 1) and step(j) = step(i) + 1.

The step restriction is ours (the paper links every pair of triples that meet): it keeps a hub
entity from joining each triple into it to each triple out of it at every hop, it is what APP's
layers give anyway, and it makes every walk of L(G) a path that leaves the topics one hop at a time:
Prop. 1's bijection between KG paths of length n and L(G) walks of n nodes holds for such paths.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kgqa.core.subgraph import Subgraph


@dataclass
class LineGraph:
    head: np.ndarray  # int64 [M]: local node id (of the Subgraph) of each triple's head
    relation: np.ndarray  # int64 [M]: type t (2·relation + inverse) as walked
    tail: np.ndarray  # int64 [M]
    step: np.ndarray  # int64 [M]: 1-based position on a path from a topic entity
    fact: np.ndarray  # int64 [M]: the Subgraph edge each triple reads
    edges: np.ndarray  # int64 [2, L]: i → j

    @property
    def num_triples(self) -> int:
        return int(self.head.shape[0])

    @property
    def num_edges(self) -> int:
        return int(self.edges.shape[1])

    @property
    def starts(self) -> np.ndarray:
        """The question triples (eq. 7): those whose head is a topic entity."""
        return np.flatnonzero(self.step == 1)

    @property
    def topics(self) -> np.ndarray:
        """Local node ids of the topic entities that have a fact."""
        return np.unique(self.head[self.step == 1])

    def successors(self) -> tuple[np.ndarray, np.ndarray]:
        """CSR (ptr [M+1], idx): the successors of triple i are idx[ptr[i]:ptr[i+1]]."""
        order = np.argsort(self.edges[0], kind="stable")
        ptr = np.concatenate([[0], np.cumsum(np.bincount(self.edges[0], minlength=self.num_triples))]).astype(np.int64)
        return ptr, self.edges[1][order]


def walked_triples(sg: Subgraph) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(head, type, tail, step, fact) of every fact read away from the topics (see the module)."""
    h, t = sg.edge_index.astype(np.int64)
    kind = sg.edge_type.astype(np.int64)
    hop = sg.edge_hop.astype(np.int64)
    fact = np.arange(h.shape[0], dtype=np.int64)
    node_hop = sg.node_hop.astype(np.int64)
    head = np.concatenate([h, t])
    tail = np.concatenate([t, h])
    types = np.concatenate([kind, kind ^ 1])
    steps = np.concatenate([hop, hop])
    facts = np.concatenate([fact, fact])
    keep = node_hop[head] == steps - 1 if head.size else np.zeros(0, dtype=bool)
    return head[keep], types[keep], tail[keep], steps[keep], facts[keep]


def line_graph(sg: Subgraph) -> LineGraph:
    head, relation, tail, step, fact = walked_triples(sg)
    n = max(sg.num_nodes, 1)
    key = step * n + head  # where a triple is entered from
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    want = (step + 1) * n + tail  # where a triple's successors start
    lo = np.searchsorted(sorted_key, want, side="left")
    hi = np.searchsorted(sorted_key, want, side="right")
    counts = hi - lo
    total = int(counts.sum())
    src = np.repeat(np.arange(head.shape[0], dtype=np.int64), counts)
    offsets = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    dst = order[np.repeat(lo, counts) + offsets]
    return LineGraph(head, relation, tail, step, fact, np.stack([src, dst]) if total else np.zeros((2, 0), dtype=np.int64))
