"""Subgraphs + text → a `KGFRBatch`: both directions of every fact, relation rows per question."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch

from kgqa.methods.kgfr.model import KGFRBatch
from kgqa.core.subgraph import Subgraph
from kgqa.retrieval.relation_text import relation_description, relation_question
from kgqa.retrieval.text import TextEncoder


# Edges (both directions) per model call on CPU. One call over a large batch is slower per question
# than several smaller ones once its per-edge tensors (edges × d floats) leave the cache: 3-hop MetaQA
# subgraphs (~1,800 edges each), 32 at once on 2 cores, 130 q/s in one call against 163 q/s one by
# one and 198–235 q/s in calls of at most 4,096 edges (8,192: 162–192; 2,048: 176).
CPU_EDGE_BUDGET = 4_096


def runs_within(edge_counts: Sequence[int], budget: int | None) -> list[range]:
    """Consecutive runs of graphs whose edge counts sum to at most `budget` (a graph over it runs
    alone; None: one run)."""
    if budget is None:
        return [range(len(edge_counts))] if len(edge_counts) else []
    runs, start, total = [], 0, 0
    for i, n in enumerate(edge_counts):
        if i > start and total + n > budget:
            runs.append(range(start, i))
            start, total = i, 0
        total += n
    if start < len(edge_counts):
        runs.append(range(start, len(edge_counts)))
    return runs


def relation_texts(sg: Subgraph, descriptions: Mapping[str, str] | None = None, style: str = "v2") -> list[str]:
    """u_r for each relation type t of the subgraph (t = 2·relation + inverse), in a checkpoint's
    relation text style (`kgqa.retrieval.relation_text`)."""
    return [relation_description(sg.relation_labels[t // 2], bool(t % 2), descriptions, style) for t in range(sg.num_relation_types)]


def relation_questions(sg: Subgraph, descriptions: Mapping[str, str] | None = None) -> list[str]:
    """relation_question for each relation type t of the subgraph, in the order of `relation_texts`."""
    return [relation_question(sg.relation_labels[t // 2], bool(t % 2), descriptions) for t in range(sg.num_relation_types)]


def make_batch(
    subgraphs: Sequence[Subgraph],
    question_vectors: np.ndarray,
    encoder: TextEncoder,
    answers: Sequence[Sequence[int]] | None = None,
    descriptions: dict[str, str] | None = None,
    style: str = "v2",
    probe_vectors: np.ndarray | None = None,
    with_relation_questions: bool = True,
) -> KGFRBatch:
    """`probe_vectors`: the questions with their topics masked, for the text prior (default: none, the
    prior reads the questions); `with_relation_questions`: encode what the prior compares them with
    (off for a model without a prior)."""
    heads, tails, types, hops, node_graph, topic_mask, rel_graph = [], [], [], [], [], [], []
    answer_mask = []
    node_offset = rel_offset = 0
    texts: list[str] = []
    asked: list[str] = []
    for g, sg in enumerate(subgraphs):
        h, t = sg.edge_index
        # (s, r, o) and (o, r⁻¹, s): the reverse of type t is t ^ 1
        heads += [h + node_offset, t + node_offset]
        tails += [t + node_offset, h + node_offset]
        types += [sg.edge_type + rel_offset, (sg.edge_type ^ 1) + rel_offset]
        hops += [sg.edge_hop, sg.edge_hop]
        node_graph.append(np.full(sg.num_nodes, g))
        mask = np.zeros(sg.num_nodes, dtype=bool)
        mask[sg.topics] = True
        topic_mask.append(mask)
        if answers is not None:
            gold = np.zeros(sg.num_nodes, dtype=bool)
            gold[list(answers[g])] = True
            answer_mask.append(gold)
        texts += relation_texts(sg, descriptions, style)
        if with_relation_questions:
            asked += relation_questions(sg, descriptions)
        rel_graph.append(np.full(sg.num_relation_types, g))
        node_offset += sg.num_nodes
        rel_offset += sg.num_relation_types
    relation_text = encoder.encode(texts) if texts else np.zeros((0, encoder.dim), np.float32)
    relation_question = (encoder.encode(asked) if asked else np.zeros((0, encoder.dim), np.float32)) if with_relation_questions else None

    def cat(parts: list[np.ndarray], dtype) -> torch.Tensor:  # type: ignore[no-untyped-def]
        return torch.from_numpy(np.concatenate(parts).astype(dtype)) if parts else torch.zeros(0, dtype=torch.long)

    return KGFRBatch(
        edge_index=torch.stack([cat(heads, np.int64), cat(tails, np.int64)]),
        edge_type=cat(types, np.int64),
        edge_hop=cat(hops, np.int64),
        relation_text=torch.from_numpy(np.asarray(relation_text, dtype=np.float32)),
        relation_graph=cat(rel_graph, np.int64),
        node_graph=cat(node_graph, np.int64),
        topic_mask=cat(topic_mask, bool),
        question=torch.from_numpy(np.asarray(question_vectors, dtype=np.float32)),
        answer_mask=cat(answer_mask, bool) if answers is not None else None,
        probe=torch.from_numpy(np.asarray(probe_vectors, dtype=np.float32)) if probe_vectors is not None else None,
        relation_question=None if relation_question is None else torch.from_numpy(np.asarray(relation_question, dtype=np.float32)),
    )
