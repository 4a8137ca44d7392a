"""GraSP training examples: per question its focus graph (eq. 1) as arrays, the text vectors the
encoder starts from, the candidate names and the selector's target (App. A). A pack (`torch.save`,
format `grasp-pack/2`) needs no store and no sentence encoder to train from. Its float16 vectors are
stored once per distinct row (questions share most entities and relations: 7,608 MetaQA questions
take 73 MiB instead of 373); `grasp-pack/1` packs, one copy per question, still load."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

from kgqa.core.subgraph import Subgraph
from kgqa.methods.grasp.focus import FocusGraph, focus
from kgqa.methods.grasp.labels import selection_target
from kgqa.methods.kgfr.batch import relation_texts
from kgqa.methods.kgfr.data import Prepared
from kgqa.retrieval.entity_vectors import EntityVectors
from kgqa.retrieval.text import TextEncoder

FORMAT = "grasp-pack/2"
FORMATS = ("grasp-pack/1", FORMAT)
TARGET_SEPARATOR = "; "


@dataclass
class GraphInput:
    """One focus graph as the encoder reads it: relation types renumbered to the ones it uses
    (type 2·k + inverse, so that `^ 1` still reverses a type)."""

    names: list[str]
    hop: np.ndarray  # int64 [K]
    entities: np.ndarray  # float [K, D]
    question: np.ndarray  # float [D]
    edge_index: np.ndarray  # int64 [2, M]
    edge_type: np.ndarray  # int64 [M]
    relations: np.ndarray  # float [2·R', D]
    facts: list[str]  # "head —relation→ tail" per edge (the "triples as text" input)

    def tensors(self, device: str = "cpu") -> tuple[torch.Tensor, ...]:
        def t(a: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
            return torch.as_tensor(np.asarray(a), dtype=dtype, device=device)
        return (t(self.entities, torch.float32), t(self.question, torch.float32), t(self.edge_index, torch.long),
                t(self.edge_type, torch.long), t(self.relations, torch.float32))


def graph_input(sg: Subgraph, fg: FocusGraph, node_vectors: np.ndarray, relation_vectors: np.ndarray, texts: Sequence[str],
                question: np.ndarray) -> GraphInput:
    used = np.unique(fg.edge_type // 2)
    row = {int(r): k for k, r in enumerate(used.tolist())}
    edge_type = np.array([2 * row[int(t) // 2] + int(t) % 2 for t in fg.edge_type.tolist()], dtype=np.int64)
    relations = relation_vectors[np.stack([2 * used, 2 * used + 1], axis=1).reshape(-1)] if used.size else np.zeros((0, relation_vectors.shape[1]), np.float32)
    names = fg.labels(sg)
    facts = [f"{names[h]} —{texts[int(t)]}→ {names[o]}" for (h, o), t in zip(fg.edge_index.T.tolist(), fg.edge_type.tolist())]
    return GraphInput(names, fg.hop, node_vectors[fg.nodes], question, fg.edge_index, edge_type, relations, facts)


def focus_input(sg: Subgraph, question_vector: np.ndarray, entities: EntityVectors, encoder: TextEncoder,
                per_hop: Sequence[int]) -> tuple[FocusGraph, GraphInput]:
    """A question's focus graph and encoder input from its APP subgraph."""
    texts = relation_texts(sg)
    node_vectors = entities.of(sg).astype(np.float32)
    relation_vectors = encoder.encode(texts) if texts else np.zeros((0, encoder.dim), np.float32)
    fg = focus(sg, question_vector, node_vectors, relation_vectors, per_hop)
    return fg, graph_input(sg, fg, node_vectors, relation_vectors, texts, question_vector)


@dataclass
class Example:
    qid: str
    question: str
    hop: int
    graph: GraphInput
    target: list[int] | None  # local ids to name, in order (None: no answer in the focus graph)
    answers: list[str]  # the gold answer labels
    validation: bool

    @property
    def target_text(self) -> str:
        return TARGET_SEPARATOR.join(self.graph.names[i] for i in self.target or [])


def build_pack(items: Sequence[Prepared], entities: EntityVectors, encoder: TextEncoder, per_hop: Sequence[int],
               validation: Sequence[bool], progress: Callable[[int], None] | None = None) -> list[Example]:
    questions = encoder.encode_bulk([p.example.question for p in items]) if items else np.zeros((0, encoder.dim), np.float32)
    out = []
    for i, (p, held) in enumerate(zip(items, validation)):
        if p.subgraph is not None and p.subgraph.num_nodes:
            fg, graph = focus_input(p.subgraph, questions[i], entities, encoder, per_hop)
            graph.entities = graph.entities.astype(np.float16)
            graph.relations = graph.relations.astype(np.float16)
            out.append(Example(p.example.qid, p.example.question, p.example.hop or 0, graph, selection_target(fg, p.answers),
                               list(p.example.answers), held))
        if progress:
            progress(i + 1)
    return out


def save_pack(examples: Sequence[Example], meta: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tables, indexed = {}, [replace(e, graph=replace(e.graph)) for e in examples]
    for field in ("entities", "relations"):
        blocks = [np.asarray(getattr(e.graph, field), np.float16) for e in examples]
        width = next((b.shape[1] for b in blocks if b.size), 0)
        rows = np.concatenate([b.reshape(-1, width) for b in blocks]) if blocks else np.zeros((0, width), np.float16)
        table, index = np.unique(rows, axis=0, return_inverse=True)
        tables[field], index = torch.from_numpy(table), index.reshape(-1).astype(np.int32)
        bounds = np.cumsum([0] + [len(b) for b in blocks])
        for e, start, end in zip(indexed, bounds[:-1], bounds[1:]):
            setattr(e.graph, field, index[start:end])
    torch.save({"format": FORMAT, "meta": meta, "tables": tables, "examples": indexed}, path)


def load_pack(path: Path) -> tuple[list[Example], dict]:
    data = torch.load(path, weights_only=False)
    if data.get("format") not in FORMATS:
        raise ValueError(f"{path}: not a GraSP pack ({' or '.join(FORMATS)}; found {data.get('format')!r})")
    examples = data["examples"]
    for field, table in data.get("tables", {}).items():
        rows = table.numpy()
        for e in examples:
            setattr(e.graph, field, rows[getattr(e.graph, field)])
    return examples, data["meta"]
