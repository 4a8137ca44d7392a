"""A training-free prior from relation text, fused with KGFR's scores on KGs the model never saw.

KGFR reads a relation only through W1[r; q] and a 4-wide gate, and on a KG it was not trained on it
barely uses how well a relation's text matches the question: the model trained without FB15k-237
scored 0.237 Hits@1 on its generated questions, while ranking by the prior below alone scores 0.63.
The prior makes that signal explicit:

    match(p) = mean over the edges of path p of cos(q, a_r)      (a_r: how a question asks along the
                                                                  edge, relation_text.relation_question)
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

Three refinements, each measured on the leave-one-KG-out arms (bench/transfer.py):
- q is the question with its topic mentions masked (`KGFRBatch.probe`, confidence.relation_probe):
  the entity's name says nothing about which relation is asked for. Ranking by the prior alone,
  FB15k-237 left out: 0.61 → 0.65; UMLS 0.30 → 0.35.
- Where a question's relations are unfamiliar (their text far from every relation text the model
  trained on, `relation_vocab.npy` in the checkpoint), c is a guess and the prior gets its own, larger
  weight: c + (1 − n)·β·z(prior_λ) + n·β_novel·z(prior_λ_novel), n(q) the share of the subgraph's
  relation types the model never saw. β_novel and λ_novel cannot be chosen on KGs the model trained
  on (there n = 0); bench/transfer.py chooses them on other models' left-out KGs (scored as if n = 1:
  there n is 0.95–1.00). A prior chosen before the masking (no "novel_weight") reads the probe too:
  only the bundled checkpoint had one, and its was chosen again.
- a_r is not the relation's text u_r but the question that asks along the edge, the fact read from
  the answer: "what directed something" for (film, directed by, ?), "what complicates something" for
  (?, complicates, X). u_r says which relation, not which end: "what complicates X?" is cos 0.91 from
  "complicates" (X's outgoing edge) and 0.41 from "complicated by" (the edge it asks along).
  Left-out KG Hits@1, each arm with the prior settings chosen for relation texts: UMLS 0.355 → 0.475,
  Countries 0.658 → 0.742, FB15k-237 0.618 → 0.627, MetaQA in free words 0.657 → 0.660; with settings
  chosen again for relation questions (bench/transfer.py prior): 0.450, 0.742, 0.647, 0.657. The
  encoder hardly sees word order, so a question whose wh-word is the fact's object ("what does X
  complicate?") reads like the other end still. Packs and batches without relation questions (older
  packs) read u_r.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import Tensor

if TYPE_CHECKING:  # model.py applies the prior
    from kgqa.methods.kgfr.model import KGFRBatch

MAX_PATH = 3
FAMILIAR_COSINE = 0.8  # a relation text this close to one the model trained on counts as seen
VOCABULARY_FILE = "relation_vocab.npy"  # in a checkpoint: unit vectors (float16) of its training relation texts


@dataclass(frozen=True)
class TextPrior:
    weight: float  # β
    length_penalty: float  # λ
    novel_weight: float | None = None  # β_novel (None: β)
    novel_penalty: float | None = None  # λ_novel (None: λ)
    familiar: Tensor | None = field(default=None, compare=False, repr=False)  # the training relation texts (unit rows)

    def __post_init__(self) -> None:
        for name in ("weight", "length_penalty", "novel_weight", "novel_penalty"):
            value = getattr(self, name)
            if value is not None and not value >= 0:
                raise ValueError(f"text_prior {name} {value}: must be ≥ 0")

    def fuse(self, scores: Tensor, batch: KGFRBatch) -> Tensor:
        shares = novelty(batch, self.familiar)
        any_novel = bool((shares > 0).any())
        if self.weight == 0 and not any_novel:
            return scores
        graph = batch.node_graph
        fused = scores + (self.weight * (1 - shares))[graph] * standardise(path_match(batch, self.length_penalty), batch)
        if any_novel:
            novel_weight = self.weight if self.novel_weight is None else self.novel_weight
            novel_penalty = self.length_penalty if self.novel_penalty is None else self.novel_penalty
            fused = fused + (novel_weight * shares)[graph] * standardise(path_match(batch, novel_penalty), batch)
        return fused


def novelty(batch: KGFRBatch, familiar: Tensor | None) -> Tensor:
    """n(q) per question: the share of its relation rows whose text is not within FAMILIAR_COSINE
    of a row of `familiar` (training relation texts, unit rows; zeros without one)."""
    zeros = torch.zeros(batch.num_graphs, device=batch.question.device)
    if familiar is None or batch.relation_text.shape[0] == 0:
        return zeros
    text = torch.nn.functional.normalize(batch.relation_text, dim=-1)
    unseen = ((text @ familiar.to(device=text.device, dtype=text.dtype).T).max(dim=1).values < FAMILIAR_COSINE).float()
    count = zeros.index_add(0, batch.relation_graph, torch.ones_like(unseen)).clamp(min=1)
    return zeros.index_add(0, batch.relation_graph, unseen) / count


def relation_vocabulary(vectors: np.ndarray) -> np.ndarray:
    """Unit rows, float16, duplicates dropped: what a checkpoint keeps of its training relation texts."""
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return np.unique(unit.astype(np.float16), axis=0)


def save_vocabulary(checkpoint: Path, *parts: np.ndarray | None) -> None:
    """Write the relation vocabulary of the rows of `parts` (None parts skipped) into a checkpoint."""
    rows = [np.asarray(p, dtype=np.float32) for p in parts if p is not None and len(p)]
    if rows:
        np.save(Path(checkpoint) / VOCABULARY_FILE, relation_vocabulary(np.concatenate(rows)))


def load_vocabulary(checkpoint: Path) -> np.ndarray | None:
    path = Path(checkpoint) / VOCABULARY_FILE
    return np.load(path) if path.exists() else None


def path_match(batch: KGFRBatch, length_penalty: float) -> Tensor:
    """prior(v) of the module's doc for every node of the batch (-inf where no path of ≤ 3 edges reaches v)."""
    source, target = batch.edge_index
    cosine = relation_cosine(batch, batch.relation_question)[batch.edge_type]
    reached = torch.full((batch.num_nodes,), float("-inf"), device=cosine.device)
    reached[batch.topic_mask] = 0.0
    best = torch.full_like(reached, float("-inf"))
    for length in range(1, MAX_PATH + 1):  # best sum over paths of exactly `length` edges
        reached = torch.full_like(best, float("-inf")).scatter_reduce(0, target, reached[source] + cosine, "amax")
        best = torch.maximum(best, reached / length - length_penalty * (length - 1))
    return best


def relation_cosine(batch: KGFRBatch, rows: Tensor | None = None) -> Tensor:
    """cos(q, u_r) per relation row (each row belongs to one question): q the probe (the question with
    its topics masked) where the batch has one, else the question; u_r the relation's text, or `rows`
    (one vector per relation row) where given."""
    text = torch.nn.functional.normalize(batch.relation_text if rows is None else rows, dim=-1)
    question = torch.nn.functional.normalize(batch.question if batch.probe is None else batch.probe, dim=-1)
    return (text * question[batch.relation_graph]).sum(-1)


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
