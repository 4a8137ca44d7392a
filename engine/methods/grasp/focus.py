"""GraSP's question-relevant subgraph (§4.1, eq. 1), cut from the store's APP subgraph.

Hop by hop from the topic entities, the not-yet-kept neighbours of the last hop's entities are
ranked by their relevance to the question and the top `per_hop[h]` are kept. Relevance is eq. 1's
cos(q, e) on the entity's label, plus the cosine of the question with the text of the relation that
reaches it (the best such edge): on MetaQA a hop's neighbours are often all reached by one relation
and named alike ("1999", "English"), and the relation is what the question names. Ranking is over
the whole frontier, not per entity, so the subgraph holds at most 1 + Σ per_hop entities (the paper
keeps k₁, then k₂ per kept entity). Edges are all the APP edges between kept entities.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kgqa.core.subgraph import Subgraph


@dataclass
class FocusGraph:
    nodes: np.ndarray  # int64 [K]: ids into the APP subgraph; topics first, then each hop's picks by rank
    hop: np.ndarray  # int64 [K]: the hop that kept the entity (topics: 0)
    score: np.ndarray  # float32 [K]: relevance to the question (topics: +inf)
    edge_index: np.ndarray  # int64 [2, M]: local ids, one direction per fact (as the APP subgraph has it)
    edge_type: np.ndarray  # int64 [M]: the APP subgraph's relation types (2·relation + inverse)

    @property
    def num_nodes(self) -> int:
        return int(self.nodes.shape[0])

    def labels(self, sg: Subgraph) -> list[str]:
        return [sg.node_labels[int(i)] for i in self.nodes]


def focus(sg: Subgraph, question: np.ndarray, node_vectors: np.ndarray, relation_vectors: np.ndarray,
          per_hop: Sequence[int]) -> FocusGraph:
    """`node_vectors` [N, D] for the APP subgraph's nodes, `relation_vectors` [2R, D] for its relation
    types, all unit length like `question` [D]."""
    node_cos = node_vectors @ question
    relation_cos = relation_vectors @ question if len(relation_vectors) else np.zeros(0, np.float32)
    heads, tails = sg.edge_index
    kept = np.zeros(sg.num_nodes, dtype=bool)
    kept[sg.topics] = True
    order: list[np.ndarray] = [np.asarray(sg.topics, dtype=np.int64)]
    hops: list[np.ndarray] = [np.zeros(len(sg.topics), dtype=np.int64)]
    scores: list[np.ndarray] = [np.full(len(sg.topics), np.inf, dtype=np.float32)]
    frontier = kept.copy()
    for h, k in enumerate(per_hop, start=1):
        forward = frontier[heads] & ~kept[tails]
        backward = frontier[tails] & ~kept[heads]
        candidates = np.concatenate([tails[forward], heads[backward]])
        if candidates.size == 0 or k <= 0:
            break
        via = np.concatenate([sg.edge_type[forward], sg.edge_type[backward] ^ 1])  # read from the kept side
        score = node_cos[candidates] + relation_cos[via]
        rank = np.lexsort((candidates, -score))  # best first; ties by node id
        candidates, score = candidates[rank], score[rank]
        _, first = np.unique(candidates, return_index=True)
        first = np.sort(first)[:k]
        picked = candidates[first]
        order.append(picked)
        hops.append(np.full(len(picked), h, dtype=np.int64))
        scores.append(score[first].astype(np.float32))
        kept[picked] = True
        frontier = np.zeros_like(kept)
        frontier[picked] = True
    nodes = np.concatenate(order)
    local = np.full(sg.num_nodes, -1, dtype=np.int64)
    local[nodes] = np.arange(len(nodes))
    inside = kept[heads] & kept[tails]
    h, t, r = local[heads[inside]], local[tails[inside]], sg.edge_type[inside]
    backwards = r % 2 == 1  # a fact APP reached from both ends appears twice: keep it once, read forwards
    h, t, r = np.where(backwards, t, h), np.where(backwards, h, t), np.where(backwards, r ^ 1, r)
    unique = np.unique(np.stack([h, t, r]), axis=1) if h.size else np.zeros((3, 0), dtype=np.int64)
    return FocusGraph(nodes=nodes, hop=np.concatenate(hops), score=np.concatenate(scores),
                      edge_index=unique[:2].astype(np.int64), edge_type=unique[2].astype(np.int64))
