"""Questions that name two or more entities ("what movie featuring Taylor Swift was produced by Billy
Ray Cyrus", "what country speaks Germanic languages with a capital called Brussels"): the answer is a
neighbour of each. KGFR's GNN propagates from all topics at once, and its best node may be a
neighbour of one of them only (another Taylor Swift film, Germany); so the candidates one hop from
every topic rank above the rest, their order among themselves kept. Hops are undirected: a topic
may be the subject or the object of the fact that joins it to the answer. Nothing moves for a
question with one topic, or where no candidate (or every one) is a neighbour of each.

A topic with more facts of some relation than the fan-out cap λ shows only the neighbours that
other paths reached ("male organism", the object of millions of `gender` facts): a true answer may
be missed as its neighbour, and then keeps its place below those that were not. Leaving such topics
out was tried and lost more than it saved: on Freebase most topics have some relation over λ."""

from __future__ import annotations

import numpy as np
import torch

from kgqa.core.subgraph import Subgraph
from kgqa.methods.kgfr.scorer import edge_arrays


def neighbours_of_every_topic(sg: Subgraph) -> np.ndarray | None:
    """A mask of the nodes (topics left out) one hop from every topic; None for a subgraph of one topic."""
    topics = np.unique(np.asarray(sg.topics, dtype=np.int64))
    if topics.size < 2:
        return None
    heads, tails, _ = edge_arrays(sg)
    near = np.ones(sg.num_nodes, dtype=bool)
    for topic in topics.tolist():
        mine = np.zeros(sg.num_nodes, dtype=bool)
        mine[tails[heads == topic]] = True
        near &= mine
    near[topics] = False
    return near


def favour_neighbours_of_every_topic(scores: torch.Tensor, sg: Subgraph) -> tuple[torch.Tensor, int]:
    """Scores where every finite candidate that is a neighbour of every topic (`neighbours_of_every_topic`)
    ranks above every other finite one, the order within each part kept; and how many moved up."""
    near = neighbours_of_every_topic(sg)
    if near is None:
        return scores, 0
    finite = torch.isfinite(scores)
    favoured = torch.from_numpy(near) & finite
    if not favoured.any() or bool(favoured.sum() == finite.sum()):
        return scores, 0
    spread = float(scores[finite].max() - scores[finite].min()) + 1.0
    return torch.where(favoured | ~finite, scores, scores - spread), int(favoured.sum())
