"""Line graphs as model input, for one question at answer time and for many in a training pack.

A pack (`.npz`, format `rapl-pack/1`) holds per question its line graph (triples by local node and
relation-type ids, L(G) edges), its labels (rational paths, positive question triples), its gold
answers, and rows into two shared tables of text vectors (entity labels, relation texts): training
needs no store and no encoder. Each question's labelling log (candidates, chain scores, the choice)
is written beside it as JSON lines.
"""

from __future__ import annotations

import json
import random
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np
import torch

from kgqa.core.subgraph import Subgraph
from kgqa.methods.kgfr.batch import relation_texts
from kgqa.methods.kgfr.data import Prepared
from kgqa.methods.kgfr.confidence import gold_probe, relation_probe
from kgqa.methods.rapl.labels import choose_labels, label_candidates
from kgqa.methods.rapl.line_graph import LineGraph, line_graph
from kgqa.methods.rapl.model import RAPLBatch
from kgqa.methods.rapl.rationalise import NEIGHBOURS, Rationaliser, neighbour_support
from kgqa.retrieval.text import TextEncoder

FORMAT = "rapl-pack/1"
QUESTION_TEXT = "masked"  # what the question vectors encode: the question with its topic mentions masked (`question_text`)


def question_text(question: str, topics: Sequence[Mapping], meta: Mapping) -> str:
    """The text a model's question vector encodes: with the topic mentions replaced by "something"
    (`relation_probe`) for models trained so (pack meta `question_text: masked`), else the question as
    asked (checkpoints from before). A model then reads what is asked, not whom it names."""
    return relation_probe(question, topics) if meta.get("question_text") == QUESTION_TEXT else question


def features(lg: LineGraph, node_vectors: np.ndarray, relation_vectors: np.ndarray) -> np.ndarray:
    """x_v = [e(h) ‖ e(r) ‖ e(t)] for every triple (eq. 3)."""
    return np.concatenate([node_vectors[lg.head], relation_vectors[lg.relation], node_vectors[lg.tail]], axis=1).astype(np.float32)


def one_question_batch(lg: LineGraph, node_vectors: np.ndarray, relation_vectors: np.ndarray, question: np.ndarray) -> RAPLBatch:
    return RAPLBatch(
        x=torch.from_numpy(features(lg, node_vectors, relation_vectors)),
        edges=torch.from_numpy(lg.edges.astype(np.int64)),
        graph=torch.zeros(lg.num_triples, dtype=torch.long),
        starts=torch.from_numpy(lg.step == 1),
        question=torch.from_numpy(np.asarray(question, dtype=np.float32).reshape(1, -1)),
    )


def _ptr(lengths: Sequence[int]) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(np.asarray(lengths, dtype=np.int64))]).astype(np.int64)


@dataclass
class RAPLPack:
    qid: np.ndarray  # str [Q]
    hop: np.ndarray  # int8 [Q] (0: unknown)
    question: np.ndarray  # float16 [Q, D]
    validation: np.ndarray  # bool [Q]
    tri_ptr: np.ndarray
    tri_head: np.ndarray  # int32: local node id
    tri_relation: np.ndarray  # int32: local relation type
    tri_tail: np.ndarray
    tri_step: np.ndarray  # int8
    edge_ptr: np.ndarray
    edge_src: np.ndarray  # int32: local triple ids
    edge_dst: np.ndarray
    node_ptr: np.ndarray
    node_row: np.ndarray  # int32: row of entity_vectors for each local node
    type_ptr: np.ndarray
    type_row: np.ndarray  # int32: row of relation_vectors for each local relation type
    answer_ptr: np.ndarray
    answer_node: np.ndarray  # int32: local node ids of the gold answers
    label_ptr: np.ndarray  # question → its range of paths
    path_ptr: np.ndarray  # path → its range of path_triples
    path_triples: np.ndarray  # int32: local triple ids
    positive_ptr: np.ndarray
    positive_triples: np.ndarray  # int32: question triples to select (eq. 8)
    entity_vectors: np.ndarray  # float16 [U, D]
    relation_vectors: np.ndarray  # float16 [V, D]
    meta: str = "{}"

    def __len__(self) -> int:
        return int(self.qid.shape[0])

    def span(self, name: str, i: int) -> np.ndarray:
        ptr = getattr(self, f"{name}_ptr")
        values = {"tri": self.tri_head, "edge": self.edge_src, "node": self.node_row, "type": self.type_row, "answer": self.answer_node,
                  "label": None, "positive": self.positive_triples}[name]
        return values[ptr[i]:ptr[i + 1]] if values is not None else np.arange(ptr[i], ptr[i + 1])

    def line_graph(self, i: int) -> LineGraph:
        a, b = self.tri_ptr[i], self.tri_ptr[i + 1]
        e0, e1 = self.edge_ptr[i], self.edge_ptr[i + 1]
        return LineGraph(self.tri_head[a:b].astype(np.int64), self.tri_relation[a:b].astype(np.int64), self.tri_tail[a:b].astype(np.int64),
                         self.tri_step[a:b].astype(np.int64), np.arange(b - a, dtype=np.int64),
                         np.stack([self.edge_src[e0:e1], self.edge_dst[e0:e1]]).astype(np.int64))

    def paths(self, i: int) -> list[np.ndarray]:
        return [self.path_triples[self.path_ptr[p]:self.path_ptr[p + 1]] for p in range(self.label_ptr[i], self.label_ptr[i + 1])]

    def trainable(self) -> np.ndarray:
        """Questions with at least one rational path."""
        return np.flatnonzero(np.diff(self.label_ptr) > 0)

    def vectors(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        nodes = self.entity_vectors[self.span("node", i)].astype(np.float32)
        types = self.relation_vectors[self.span("type", i)].astype(np.float32)
        return nodes, types

    def batch(self, indices: Sequence[int], rng: random.Random | None = None) -> tuple[RAPLBatch, list[list[int]], list[list[int]]]:
        """The batch of questions `indices`, one label path per question (a random one with `rng`, else
        the first) and the positive question triples, both as batch triple ids."""
        xs, edges, graph, starts, paths, positives = [], [], [], [], [], []
        offset = 0
        for g, i in enumerate(indices):
            lg = self.line_graph(i)
            nodes, types = self.vectors(i)
            xs.append(features(lg, nodes, types))
            edges.append(lg.edges + offset)
            graph.append(np.full(lg.num_triples, g, dtype=np.int64))
            starts.append(lg.step == 1)
            options = self.paths(i)
            if options:
                chosen = options[rng.randrange(len(options))] if rng is not None else options[0]
                paths.append([int(t) + offset for t in chosen])
            else:
                paths.append([])
            positives.append([int(t) + offset for t in self.span("positive", i)])
            offset += lg.num_triples
        batch = RAPLBatch(
            x=torch.from_numpy(np.concatenate(xs)),
            edges=torch.from_numpy(np.concatenate(edges, axis=1)),
            graph=torch.from_numpy(np.concatenate(graph)),
            starts=torch.from_numpy(np.concatenate(starts)),
            question=torch.from_numpy(self.question[list(indices)].astype(np.float32)),
        )
        return batch, paths, positives

    def split(self) -> tuple[np.ndarray, np.ndarray]:
        return np.flatnonzero(~self.validation), np.flatnonzero(self.validation)

    def save(self, path: Path) -> None:
        arrays = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "meta"}
        np.savez(path, format=np.array(FORMAT), meta=np.array(self.meta), **arrays)

    @classmethod
    def load(cls, path: Path) -> "RAPLPack":
        try:
            with np.load(path, allow_pickle=False) as data:
                found = str(data["format"]) if "format" in data.files else "none"
                if found != FORMAT:
                    raise ValueError(f"{path} is not a RAPL pack (format {found!r}, expected {FORMAT!r})")
                return cls(**{f.name: (str(data[f.name]) if f.name == "meta" else data[f.name]) for f in fields(cls)})
        except (zipfile.BadZipFile, OSError, KeyError) as exc:
            raise ValueError(f"{path}: not a readable RAPL pack ({exc})") from None


def build_pack(items: Sequence[Prepared], encoder: TextEncoder, rationaliser: Rationaliser, validation: Sequence[bool],
               meta: dict, log_path: Path | None = None, progress: Callable[[int], None] | None = None,
               neighbours: int = NEIGHBOURS) -> RAPLPack:
    """Line graphs and labels for prepared questions (those without a subgraph are skipped). Between
    the two labelling stages each question's chains get their support from the `neighbours` most
    similar training questions (`rationalise.neighbour_support`; 0: none)."""
    entity_row: dict[str, int] = {}
    relation_row: dict[str, int] = {}
    cols: dict[str, list] = {k: [] for k in ("qid", "hop", "question", "validation", "tri_head", "tri_relation", "tri_tail", "tri_step", "edge_src",
                                              "edge_dst", "node_row", "type_row", "answer_node", "path_triples", "positive_triples")}
    lengths: dict[str, list[int]] = {k: [] for k in ("tri", "edge", "node", "type", "answer", "label", "path", "positive")}
    staged = []
    for n, (item, held) in enumerate(zip(items, validation)):
        if progress:
            progress(n + 1)
        if item.subgraph is not None:
            lg = line_graph(item.subgraph)
            staged.append((item, bool(held), lg, label_candidates(item.subgraph, lg, item.answers)))
    probes = [gold_probe(item.example.question, item.example.topics) for item, _, _, _ in staged]
    questions = encoder.encode_bulk(probes) if probes else np.zeros((0, encoder.dim), np.float32)
    support: list[list[float] | None] = [None] * len(staged)
    if neighbours > 0 and staged:
        support = list(neighbour_support(questions, [found.texts for _, _, _, found in staged], [found.coverage for _, _, _, found in staged],
                                         [not held for _, held, _, _ in staged], neighbours))
    log = open(log_path, "w", encoding="utf-8") if log_path else None
    labelled = 0
    try:
        for (item, held, lg, found), agreement in zip(staged, support):
            sg: Subgraph = item.subgraph
            labels = choose_labels(lg, found, item.example.question, list(item.example.topics), rationaliser, agreement)
            labelled += bool(labels.paths)
            if log is not None:
                log.write(json.dumps({"qid": item.example.qid, "question": item.example.question, "paths": len(labels.paths), **labels.log}) + "\n")
            cols["qid"].append(item.example.qid)
            cols["hop"].append(item.example.hop or 0)
            cols["question"].append(item.example.question)
            cols["validation"].append(held)
            for name, values in (("tri_head", lg.head), ("tri_relation", lg.relation), ("tri_tail", lg.tail), ("tri_step", lg.step),
                                 ("edge_src", lg.edges[0]), ("edge_dst", lg.edges[1]), ("answer_node", item.answers),
                                 ("positive_triples", labels.positives)):
                cols[name].append(np.asarray(values, dtype=np.int32))
            cols["node_row"].append(np.asarray([entity_row.setdefault(label, len(entity_row)) for label in sg.node_labels], dtype=np.int32))
            cols["type_row"].append(np.asarray([relation_row.setdefault(t, len(relation_row)) for t in relation_texts(sg)], dtype=np.int32))
            for p in labels.paths:
                cols["path_triples"].append(np.asarray(p, dtype=np.int32))
                lengths["path"].append(len(p))
            for key, size in (("tri", lg.num_triples), ("edge", lg.num_edges), ("node", sg.num_nodes), ("type", sg.num_relation_types),
                              ("answer", len(item.answers)), ("label", len(labels.paths)), ("positive", len(labels.positives))):
                lengths[key].append(size)
    finally:
        if log is not None:
            log.close()

    def cat(name: str, dtype) -> np.ndarray:  # type: ignore[no-untyped-def]
        return np.concatenate(cols[name]).astype(dtype) if cols[name] else np.zeros(0, dtype)

    meta = {**meta, "questions": len(cols["qid"]), "labelled": labelled, "rationaliser": rationaliser.name, "neighbours": neighbours,
            "question_text": QUESTION_TEXT}
    return RAPLPack(
        qid=np.asarray(cols["qid"]), hop=np.asarray(cols["hop"], dtype=np.int8),
        question=questions.astype(np.float16),
        validation=np.asarray(cols["validation"], dtype=bool),
        tri_ptr=_ptr(lengths["tri"]), tri_head=cat("tri_head", np.int32), tri_relation=cat("tri_relation", np.int32),
        tri_tail=cat("tri_tail", np.int32), tri_step=cat("tri_step", np.int8),
        edge_ptr=_ptr(lengths["edge"]), edge_src=cat("edge_src", np.int32), edge_dst=cat("edge_dst", np.int32),
        node_ptr=_ptr(lengths["node"]), node_row=cat("node_row", np.int32), type_ptr=_ptr(lengths["type"]), type_row=cat("type_row", np.int32),
        answer_ptr=_ptr(lengths["answer"]), answer_node=cat("answer_node", np.int32),
        label_ptr=_ptr(lengths["label"]), path_ptr=_ptr(lengths["path"]), path_triples=cat("path_triples", np.int32),
        positive_ptr=_ptr(lengths["positive"]), positive_triples=cat("positive_triples", np.int32),
        entity_vectors=encoder.encode_bulk(list(entity_row), progress=len(entity_row) > 5000).astype(np.float16),
        relation_vectors=encoder.encode(list(relation_row)).astype(np.float16) if relation_row else np.zeros((0, encoder.dim), np.float16),
        meta=json.dumps(meta),
    )
