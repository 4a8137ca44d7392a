"""A training-free prior from relation text, fused with KGFR's scores on KGs the model never saw.

KGFR reads a relation only through W1[r; q] and a 4-wide gate, and on a KG it was not trained on it
barely uses how well a relation's text matches the question: the model trained without FB15k-237
scored 0.237 Hits@1 on its generated questions, while ranking by the prior below alone scores 0.63.
The prior makes that signal explicit:

    match(p) = mean over the edges of path p of cos(q, u_r)      (u_r: the relation text of eq. 1,
                                                                  its inverse's text on an inverse edge)
    prior(v) = max over paths p of length ℓ ≤ 3 from a topic to v of match(p) − λ·(ℓ − 1)

computed for all nodes at once by max-plus propagation over the batch's edges (the best-sum path of
each length, then divided by its length; walks may revisit a node). The fused score is c + β·z(prior),
z standardising over each question's non-topic nodes. c stays unscaled on purpose: c is a logit
(eq. 9 is a softmax over the candidates), so where the model is sure (a wide gap between its best
and the rest, as on MetaQA) the prior cannot overturn it, and where its scores are flat (a KG whose
relations it never saw) the prior decides. On the model trained without Countries, at a MetaQA dev
cost of 0.2–0.3 points (0.930 → 0.927/0.928), standardising c too lifted left-out Countries from
0.442 to 0.592, unscaled to 0.625.
β and λ are chosen on validation questions, after training, and live in the checkpoint's
config.json ("text_prior"); a checkpoint without it scores as before. Training always sees c (eq. 8).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import Tensor

if TYPE_CHECKING:  # model.py applies the prior
    from kgqa.methods.kgfr.model import KGFRBatch

MAX_PATH = 3


@dataclass(frozen=True)
class TextPrior:
    weight: float  # β
    length_penalty: float  # λ

    def __post_init__(self) -> None:
        if not self.weight >= 0:
            raise ValueError(f"text_prior weight {self.weight}: must be ≥ 0")
        if not self.length_penalty >= 0:
            raise ValueError(f"text_prior length_penalty {self.length_penalty}: must be ≥ 0")

    def fuse(self, scores: Tensor, batch: KGFRBatch) -> Tensor:
        if self.weight == 0:
            return scores
        return scores + self.weight * standardise(path_match(batch, self.length_penalty), batch)


def path_match(batch: KGFRBatch, length_penalty: float) -> Tensor:
    """prior(v) of the module's doc for every node of the batch (-inf where no path of ≤ 3 edges reaches v)."""
    text = torch.nn.functional.normalize(batch.relation_text, dim=-1)
    question = torch.nn.functional.normalize(batch.question, dim=-1)
    source, target = batch.edge_index
    # one cosine per relation row (each row belongs to one question), then gathered per edge
    cosine = (text * question[batch.relation_graph]).sum(-1)[batch.edge_type]
    reached = torch.full((batch.num_nodes,), float("-inf"), device=cosine.device)
    reached[batch.topic_mask] = 0.0
    best = torch.full_like(reached, float("-inf"))
    for length in range(1, MAX_PATH + 1):  # best sum over paths of exactly `length` edges
        reached = torch.full_like(best, float("-inf")).scatter_reduce(0, target, reached[source] + cosine, "amax")
        best = torch.maximum(best, reached / length - length_penalty * (length - 1))
    return best


def standardise(values: Tensor, batch: KGFRBatch) -> Tensor:
    """(v − mean) / std over each question's non-topic nodes with a finite value; a node with none
    (unreached) gets its question's smallest standardised value."""
    graph, count = batch.node_graph, batch.num_graphs
    usable = torch.isfinite(values) & ~batch.topic_mask
    zeros = torch.zeros(count, device=values.device)
    clean = torch.where(usable, values, torch.zeros_like(values))
    n = zeros.index_add(0, graph, usable.float()).clamp(min=1)
    mean = zeros.index_add(0, graph, clean) / n
    spread = zeros.index_add(0, graph, torch.where(usable, (clean - mean[graph]) ** 2, torch.zeros_like(values))) / n
    out = (clean - mean[graph]) / (spread.sqrt()[graph] + 1e-6)
    floor = torch.full_like(zeros, float("inf")).scatter_reduce(0, graph, torch.where(usable, out, torch.full_like(out, float("inf"))), "amin")
    floor = torch.where(torch.isfinite(floor), floor, zeros)
    return torch.where(usable, out, floor[graph])
