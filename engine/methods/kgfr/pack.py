"""Prepared QA examples packed into flat numpy arrays (one `.npz`): everything training needs —
subgraph structure, topic/answer positions, question and relation-description embeddings — and
nothing it does not (no IRIs, no labels). A pack is built once where the store is, and training
(`kgqa train --pack`) then runs anywhere torch runs, a GPU machine included, without store or encoder.
Batches come out of it with array slicing only, so a training step costs no Python per edge."""

from __future__ import annotations

import json
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from kgqa.methods.kgfr.model import KGFRBatch
from kgqa.methods.kgfr.batch import relation_questions, relation_texts
from kgqa.methods.kgfr.confidence import gold_probe
from kgqa.methods.kgfr.data import Prepared
from kgqa.retrieval.text import TextEncoder

FORMAT = "kgfr-pack/2"
OPTIONAL = ("probe", "probe_scale", "rel_question_vocab", "rel_question_vectors")  # arrays a pack may lack (made before they existed)
PAIRED = (("probe", "probe_scale"), ("rel_question_vocab", "rel_question_vectors"))  # a pack has both of each pair or neither


def _ptr(lengths: Sequence[int]) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(np.asarray(lengths, dtype=np.int64))]).astype(np.int64)


@dataclass
class PackedQA:
    """Question i owns nodes 0..num_nodes[i]-1, edges edge_ptr[i]:edge_ptr[i+1], relation rows
    rel_ptr[i]:rel_ptr[i+1] (local type t → vocabulary row rel_vocab[...]), topics and answers likewise."""

    qid: np.ndarray  # str [Q]
    hop: np.ndarray  # int8 [Q], 0 = unknown
    question: np.ndarray  # int8 [Q, D]: unit vectors quantised per row (error < 0.4 % of the largest component)
    question_scale: np.ndarray  # float32 [Q]: question[i] * question_scale[i] ≈ the embedding
    num_nodes: np.ndarray  # int32 [Q], 0 = no subgraph (no topic resolved)
    answers_in_kb: np.ndarray  # bool [Q]
    edge_ptr: np.ndarray
    edge_head: np.ndarray  # int32 [E] (one direction per fact; batches add the reverse)
    edge_tail: np.ndarray
    edge_type: np.ndarray  # int [E], local type t = 2·relation + inverse
    edge_hop: np.ndarray  # int8 [E]
    rel_ptr: np.ndarray
    rel_vocab: np.ndarray  # int32: row of `rel_text_vectors` for each local type
    rel_text: np.ndarray  # str [V]: the descriptions u_r (eq. 1)
    rel_text_vectors: np.ndarray  # float32 [V, D]
    topic_ptr: np.ndarray
    topic_idx: np.ndarray  # int32
    answer_ptr: np.ndarray
    answer_idx: np.ndarray  # int32
    validation: np.ndarray  # bool [Q]: held out for early stopping / the margin
    meta: str = "{}"  # JSON: how the questions were chosen and split (copied into the checkpoint)
    probe: np.ndarray | None = None  # int8 [Q, D]: the questions with their topics masked (the text prior reads them), as `question`
    probe_scale: np.ndarray | None = None  # float32 [Q] (both absent in packs made before probes)
    rel_question_vocab: np.ndarray | None = None  # int32, parallel to rel_vocab: row of `rel_question_vectors` for each local type
    rel_question_vectors: np.ndarray | None = None  # float32 [V', D]: relation_text.relation_question (the text prior reads them; both absent in older packs)

    def __len__(self) -> int:
        return int(self.qid.shape[0])

    def has_subgraph(self, i: int) -> bool:
        return bool(self.num_nodes[i] > 0)

    def answers(self, i: int) -> np.ndarray:
        return self.answer_idx[self.answer_ptr[i] : self.answer_ptr[i + 1]]

    def topics(self, i: int) -> np.ndarray:
        return self.topic_idx[self.topic_ptr[i] : self.topic_ptr[i + 1]]

    def question_vectors(self, indices: Sequence[int]) -> np.ndarray:
        idx = np.asarray(indices, dtype=np.int64)
        return self.question[idx].astype(np.float32) * self.question_scale[idx, None]

    def trained_relation_vectors(self) -> np.ndarray:
        """The text vectors of the relations its questions' subgraphs use (a subset keeps the whole
        vocabulary of the pack it was cut from): what a model trained on it has seen."""
        return self.rel_text_vectors[np.unique(self.rel_vocab)] if len(self.rel_vocab) else self.rel_text_vectors[:0]

    def probe_vectors(self, indices: Sequence[int]) -> np.ndarray | None:
        if self.probe is None or self.probe_scale is None:
            return None
        idx = np.asarray(indices, dtype=np.int64)
        return self.probe[idx].astype(np.float32) * self.probe_scale[idx, None]

    def batch(self, indices: Sequence[int], with_answers: bool = False) -> KGFRBatch:
        """The KGFRBatch of questions `indices` (each with a subgraph), both directions of each fact."""
        heads, tails, types, hops, node_graph, topics, answers, rel_rows, rel_graph, asked_rows = [], [], [], [], [], [], [], [], [], []
        node_offset = rel_offset = 0
        for g, i in enumerate(indices):
            e0, e1 = self.edge_ptr[i], self.edge_ptr[i + 1]
            h = self.edge_head[e0:e1].astype(np.int64) + node_offset
            t = self.edge_tail[e0:e1].astype(np.int64) + node_offset
            k = self.edge_type[e0:e1].astype(np.int64)
            heads += [h, t]
            tails += [t, h]
            types += [k + rel_offset, (k ^ 1) + rel_offset]
            hop = self.edge_hop[e0:e1]
            hops += [hop, hop]
            n = int(self.num_nodes[i])
            node_graph.append(np.full(n, g, dtype=np.int64))
            topics.append(self.topics(i).astype(np.int64) + node_offset)
            answers.append(self.answers(i).astype(np.int64) + node_offset)
            rows = self.rel_vocab[self.rel_ptr[i] : self.rel_ptr[i + 1]]
            rel_rows.append(rows)
            if self.rel_question_vocab is not None:
                asked_rows.append(self.rel_question_vocab[self.rel_ptr[i] : self.rel_ptr[i + 1]])
            rel_graph.append(np.full(len(rows), g, dtype=np.int64))
            node_offset += n
            rel_offset += len(rows)
        total = node_offset
        topic_mask = np.zeros(total, dtype=bool)
        topic_mask[np.concatenate(topics)] = True
        answer_mask = None
        if with_answers:
            answer_mask = np.zeros(total, dtype=bool)
            answer_mask[np.concatenate(answers)] = True
        probes = self.probe_vectors(indices)
        return KGFRBatch(
            edge_index=torch.from_numpy(np.stack([np.concatenate(heads), np.concatenate(tails)])),
            edge_type=torch.from_numpy(np.concatenate(types)),
            edge_hop=torch.from_numpy(np.concatenate(hops).astype(np.int64)),
            relation_text=torch.from_numpy(self.rel_text_vectors[np.concatenate(rel_rows)]),
            relation_graph=torch.from_numpy(np.concatenate(rel_graph)),
            node_graph=torch.from_numpy(np.concatenate(node_graph)),
            topic_mask=torch.from_numpy(topic_mask),
            question=torch.from_numpy(self.question_vectors(indices)),
            answer_mask=torch.from_numpy(answer_mask) if answer_mask is not None else None,
            probe=None if probes is None else torch.from_numpy(probes),
            relation_question=None if self.rel_question_vectors is None else torch.from_numpy(self.rel_question_vectors[np.concatenate(asked_rows)]),
        )

    def subset(self, indices: Sequence[int]) -> "PackedQA":
        """A pack of questions `indices` only (vocabulary shared)."""
        idx = np.asarray(indices, dtype=np.int64)

        def ranges(ptr: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            parts = [values[ptr[i] : ptr[i + 1]] for i in idx]
            return _ptr([len(p) for p in parts]), (np.concatenate(parts) if parts else values[:0])

        edge_ptr, _ = ranges(self.edge_ptr, self.edge_head)
        edges = [np.concatenate([a[self.edge_ptr[i] : self.edge_ptr[i + 1]] for i in idx]) if len(idx) else a[:0]
                 for a in (self.edge_head, self.edge_tail, self.edge_type, self.edge_hop)]
        rel_ptr, rel_vocab = ranges(self.rel_ptr, self.rel_vocab)
        asked = None if self.rel_question_vocab is None else ranges(self.rel_ptr, self.rel_question_vocab)[1]
        topic_ptr, topic_idx = ranges(self.topic_ptr, self.topic_idx)
        answer_ptr, answer_idx = ranges(self.answer_ptr, self.answer_idx)
        return PackedQA(self.qid[idx], self.hop[idx], self.question[idx], self.question_scale[idx], self.num_nodes[idx], self.answers_in_kb[idx],
                        edge_ptr, *edges, rel_ptr, rel_vocab, self.rel_text, self.rel_text_vectors, topic_ptr, topic_idx, answer_ptr, answer_idx,
                        self.validation[idx], self.meta,
                        None if self.probe is None else self.probe[idx], None if self.probe_scale is None else self.probe_scale[idx],
                        asked, self.rel_question_vectors)

    @property
    def metas(self) -> list[dict]:
        """The meta of each pack this one was made of (one, unless joined by `concat`)."""
        meta = json.loads(self.meta)
        return meta if isinstance(meta, list) else [meta]

    @property
    def relation_text(self) -> str:
        """The style its relation texts were written in (`kgqa.retrieval.relation_text`); packs made
        before styles were recorded are v1."""
        styles = {m.get("relation_text", "v1") for m in self.metas}
        if len(styles) != 1:
            raise ValueError(f"a pack mixes relation text styles {sorted(styles)}")
        return styles.pop()

    @property
    def hops(self) -> int:
        """The most APP hops any of its subgraphs was retrieved with (3 for packs that did not record it)."""
        return max(int(m.get("hops", 3)) for m in self.metas)

    def capped(self, limit: int | None, seed: int) -> "PackedQA":
        """At most `limit` of its training questions (a fixed-seed sample), and all its validation ones."""
        train_idx = np.flatnonzero(~self.validation)
        if limit is None or len(train_idx) <= limit:
            return self
        keep = np.random.default_rng(seed).choice(train_idx, limit, replace=False)
        return self.subset(np.sort(np.concatenate([keep, np.flatnonzero(self.validation)])))

    @classmethod
    def concat(cls, packs: Sequence["PackedQA"]) -> "PackedQA":
        """One pack of several (each its own KG): relation vocabularies side by side, metas in a list.
        Batches drawn from it mix the KGs."""
        if not packs:
            raise ValueError("no packs to join")
        if len(packs) == 1:
            return packs[0]
        styles = {p.relation_text for p in packs}
        if len(styles) > 1:
            raise ValueError(f"the packs were written in different relation text styles ({sorted(styles)}): make them again with one kgqa version")
        vocab_offsets = np.cumsum([0] + [len(p.rel_text) for p in packs[:-1]])
        asked_offsets = np.cumsum([0] + [0 if p.rel_question_vectors is None else len(p.rel_question_vectors) for p in packs[:-1]])

        def ptrs(name: str) -> np.ndarray:
            parts, total = [np.zeros(1, np.int64)], 0
            for p in packs:
                ptr = getattr(p, name)
                parts.append(ptr[1:] + total)
                total += int(ptr[-1])
            return np.concatenate(parts)

        def cat(name: str, dtype=None) -> np.ndarray:  # type: ignore[no-untyped-def]
            arrays = [getattr(p, name) for p in packs]
            return np.concatenate([a.astype(dtype) if dtype else a for a in arrays])

        return cls(
            qid=cat("qid"), hop=cat("hop"), question=cat("question"), question_scale=cat("question_scale"), num_nodes=cat("num_nodes"),
            answers_in_kb=cat("answers_in_kb"), edge_ptr=ptrs("edge_ptr"), edge_head=cat("edge_head", np.int32), edge_tail=cat("edge_tail", np.int32),
            edge_type=cat("edge_type", np.int32), edge_hop=cat("edge_hop"), rel_ptr=ptrs("rel_ptr"),
            rel_vocab=np.concatenate([p.rel_vocab.astype(np.int32) + off for p, off in zip(packs, vocab_offsets)]),
            rel_text=cat("rel_text"), rel_text_vectors=cat("rel_text_vectors"), topic_ptr=ptrs("topic_ptr"), topic_idx=cat("topic_idx", np.int32),
            answer_ptr=ptrs("answer_ptr"), answer_idx=cat("answer_idx", np.int32), validation=cat("validation"), meta=json.dumps([m for p in packs for m in p.metas]),
            # a pack made before probes lends its questions as its probes (what its prior read), so that the others keep theirs
            **({"probe": np.concatenate([p.question if p.probe is None else p.probe for p in packs]),
                "probe_scale": np.concatenate([p.question_scale if p.probe_scale is None else p.probe_scale for p in packs])}
               if any(p.probe is not None for p in packs) else {}),
            # without them in every part the prior reads the relation texts (relation_cosine) for all
            **({"rel_question_vocab": np.concatenate([p.rel_question_vocab.astype(np.int32) + off for p, off in zip(packs, asked_offsets)]),
                "rel_question_vectors": cat("rel_question_vectors")}
               if all(p.rel_question_vocab is not None for p in packs) else {}),
        )

    def split(self) -> tuple["PackedQA", "PackedQA"]:
        """(training part, validation part)."""
        return self.subset(np.flatnonzero(~self.validation)), self.subset(np.flatnonzero(self.validation))

    def compact(self) -> "PackedQA":
        """The same pack with node ids and types in the narrowest integer types that hold them
        (a MetaQA pack: 71 → 49 MB on disk)."""
        def narrow(values: np.ndarray) -> np.ndarray:
            top = int(values.max()) if values.size else 0
            return values.astype(next(t for t in (np.int8, np.int16, np.int32, np.int64) if top <= np.iinfo(t).max))

        fields = dict(self.__dict__)
        for name in ("edge_head", "edge_tail", "edge_type", "topic_idx", "answer_idx"):
            fields[name] = narrow(fields[name])
        return PackedQA(**fields)

    def save(self, path: str | Path) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp.npz")
        arrays = {k: (np.array(v) if k == "meta" else v) for k, v in self.compact().__dict__.items() if v is not None}
        np.savez_compressed(tmp, format=np.array(FORMAT), **arrays)
        tmp.replace(path)

    @classmethod
    def load(cls, path: str | Path) -> "PackedQA":
        problem = f"{path}: not a {FORMAT} file (write one with `kgqa train --pack-out`)"
        unreadable = (OSError, EOFError, ValueError, zipfile.BadZipFile, zlib.error)
        try:
            data = np.load(path, allow_pickle=False)
        except unreadable as exc:
            raise ValueError(f"{problem}: {exc}") from None
        with data:
            if "format" not in data or str(data["format"]) != FORMAT:
                raise ValueError(problem)
            missing = [name for name in cls.__dataclass_fields__ if name not in data and name not in OPTIONAL]
            if missing:
                raise ValueError(f"{problem}: missing {', '.join(missing)}")
            try:
                fields = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
            except unreadable as exc:  # a damaged member of a valid zip
                raise ValueError(f"{problem}: {exc}") from None
        fields["meta"] = str(fields["meta"])
        for first, second in PAIRED:
            if (first in fields) != (second in fields):
                raise ValueError(f"{problem}: it has one of {first} and {second} without the other")
        return cls(**fields)


def _quantised(vectors: np.ndarray, name: str = "question") -> dict[str, np.ndarray]:
    scale = np.maximum(np.abs(vectors).max(axis=1), 1e-12) / 127.0 if len(vectors) else np.zeros(0)
    return {name: np.round(vectors / scale[:, None]).astype(np.int8) if len(vectors) else np.zeros((0, vectors.shape[1]), np.int8),
            f"{name}_scale": scale.astype(np.float32)}


def pack(items: Sequence[Prepared], encoder: TextEncoder, validation: Sequence[bool] | None = None, meta: str = "{}",
         descriptions: Mapping[str, str] | None = None, style: str = "v2") -> PackedQA:
    """Pack prepared examples; question and relation texts are embedded here (cached by the encoder).
    The meta records the relation text style and the subgraphs' APP hops besides what `meta` says."""
    vocab: dict[str, int] = {}
    asked_vocab: dict[str, int] = {}
    num_nodes, heads, tails, types, hops, rel_rows, topics, answers, asked_rows = [], [], [], [], [], [], [], [], []
    for p in items:
        sg = p.subgraph
        if sg is None:
            num_nodes.append(0)
            for part, dtype in ((heads, np.int32), (tails, np.int32), (types, np.int32), (hops, np.int8), (rel_rows, np.int32), (topics, np.int32), (answers, np.int32),
                                (asked_rows, np.int32)):
                part.append(np.zeros(0, dtype=dtype))
            continue
        num_nodes.append(sg.num_nodes)
        heads.append(sg.edge_index[0].astype(np.int32))
        tails.append(sg.edge_index[1].astype(np.int32))
        types.append(sg.edge_type.astype(np.int32))
        hops.append(sg.edge_hop.astype(np.int8))
        rel_rows.append(np.array([vocab.setdefault(text, len(vocab)) for text in relation_texts(sg, descriptions, style)], dtype=np.int32))
        asked_rows.append(np.array([asked_vocab.setdefault(text, len(asked_vocab)) for text in relation_questions(sg, descriptions)], dtype=np.int32))
        topics.append(sg.topics.astype(np.int32))
        answers.append(np.asarray(p.answers, dtype=np.int32))
    rel_text, asked_text = list(vocab), list(asked_vocab)
    recorded = {**json.loads(meta), "relation_text": style}
    retrieved = [p.subgraph.hops for p in items if p.subgraph is not None]
    if retrieved:
        recorded["hops"] = max(retrieved)
    return PackedQA(
        qid=np.array([p.example.qid for p in items]),
        hop=np.array([p.example.hop or 0 for p in items], dtype=np.int8),
        **_quantised(encoder.encode([p.example.question for p in items])),
        **_quantised(encoder.encode([gold_probe(p.example.question, p.example.topics) for p in items]), "probe"),
        num_nodes=np.array(num_nodes, dtype=np.int32),
        answers_in_kb=np.array([p.answers_in_kb for p in items], dtype=bool),
        edge_ptr=_ptr([len(h) for h in heads]),
        edge_head=np.concatenate(heads) if heads else np.zeros(0, np.int32),
        edge_tail=np.concatenate(tails) if tails else np.zeros(0, np.int32),
        edge_type=np.concatenate(types) if types else np.zeros(0, np.int32),
        edge_hop=np.concatenate(hops) if hops else np.zeros(0, np.int8),
        rel_ptr=_ptr([len(r) for r in rel_rows]),
        rel_vocab=np.concatenate(rel_rows) if rel_rows else np.zeros(0, np.int32),
        rel_text=np.array(rel_text if rel_text else [""])[: len(rel_text)],
        rel_text_vectors=encoder.encode(rel_text) if rel_text else np.zeros((0, encoder.dim), np.float32),
        topic_ptr=_ptr([len(t) for t in topics]),
        topic_idx=np.concatenate(topics) if topics else np.zeros(0, np.int32),
        answer_ptr=_ptr([len(a) for a in answers]),
        answer_idx=np.concatenate(answers) if answers else np.zeros(0, np.int32),
        validation=np.array(validation if validation is not None else [False] * len(items), dtype=bool),
        meta=json.dumps(recorded),
        rel_question_vocab=np.concatenate(asked_rows) if asked_rows else np.zeros(0, np.int32),
        rel_question_vectors=encoder.encode(asked_text) if asked_text else np.zeros((0, encoder.dim), np.float32),
    )
