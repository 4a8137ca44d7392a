"""Answering with a trained RAPL retriever (RAPL §4.3): link → APP subgraph → L(G) → decoded paths.

Without an LLM the answer is the tails of the most probable paths: each entity scores the summed
probability of the decoded paths that end at it, and the answers are those within `answer_share`
of the best. With an LLM the paths (`e1 -> r1 -> e2 -> …`) go into the reasoner prompt and its reply
is mapped back to entities. Answer labels are never used here.
"""

from __future__ import annotations

import copy
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from kgqa.core.answer import Answer, AnswerItem, Evidence
from kgqa.core.control import check
from kgqa.core.events import EvidenceReady, Retrieved, emit
from kgqa.core.store import GraphStore
from kgqa.core.subgraph import Subgraph
from kgqa.llm.protocol import LLM, LLMError
from kgqa.llm.session import LLMSession
from kgqa.methods.kgfr.batch import relation_texts
from kgqa.methods.linking_step import link_into
from kgqa.methods.registry import checkpoint_or_bundled
from kgqa.methods.rapl.data import one_question_batch, question_text
from kgqa.methods.rapl.decode import Walk, decode, tail_mass
from kgqa.methods.rapl.labels import path_text
from kgqa.methods.rapl.line_graph import LineGraph, line_graph
from kgqa.methods.rapl.train import FORMAT, load_checkpoint
from kgqa.retrieval.answer_mapping import map_answers
from kgqa.retrieval.app import retrieve
from kgqa.retrieval.entity_vectors import EntityVectors
from kgqa.retrieval.text import TextEncoder

BUNDLED_CHECKPOINT = Path(__file__).resolve().parent / "checkpoints" / "rapl-metaqa"


@dataclass(frozen=True)
class Decoding:
    starts: int = 20  # question triples sampled (with replacement)
    rollouts: int = 5  # paths walked from each
    paths: int = 20  # most probable distinct paths kept (M)
    answer_share: float = -1.0  # without an LLM: answers score at least this share of the best (below 0: the checkpoint's)


def checkpoint_for(given: str | Path | None) -> Path:
    """The RAPL checkpoint to run: `given` when it is one, else the bundled one."""
    return checkpoint_or_bundled(given, FORMAT, BUNDLED_CHECKPOINT)


class RAPLAnswerer:
    def __init__(self, store: GraphStore, checkpoint: str | Path | None = None, encoder: TextEncoder | None = None,
                 decoding: Decoding = Decoding(), llm: LLM | None = None, entities: EntityVectors | None = None):
        self.store = store
        self.checkpoint = Path(checkpoint) if checkpoint else BUNDLED_CHECKPOINT
        self.model, self.meta = load_checkpoint(self.checkpoint, "cpu")
        self.hops = int(self.meta.get("data", {}).get("hops", 3))
        self.lam = int(self.meta.get("data", {}).get("lambda", 100))
        self.encoder = encoder or TextEncoder()
        self.entities = entities or EntityVectors(store, self.encoder)
        self.decoding, self.llm = decoding, llm
        self.checkpoint_share = float(self.meta.get("answer_share", 0.5))
        self._lock = threading.Lock()  # one decode at a time per model (torch threads are the parallelism)

    def with_options(self, decoding: Decoding, llm: LLM | None) -> "RAPLAnswerer":
        """This answerer (model, vectors and lock shared) with other decoding options or LLM."""
        other = copy.copy(self)
        other.decoding, other.llm = decoding, llm
        return other

    def answer(self, question: str, topics: list[str] | None = None) -> Answer:
        started = time.perf_counter()
        result = Answer(question, "rapl")
        trace = result.trace
        linking = link_into(result, self.store, topics, self.encoder)
        trace.seconds["link"] = time.perf_counter() - started
        if linking is None:
            return result
        check("retrieval")
        mark = time.perf_counter()
        sg = retrieve(self.store, linking.iris, self.hops, self.lam)
        trace.seconds["retrieve"] = time.perf_counter() - mark
        trace.round_trips = sg.trace.round_trips
        result.graph = sg
        emit(Retrieved({"nodes": sg.num_nodes, "edges": sg.num_edges, "hops": sg.hops, "lambda": sg.lam}, sg.trace.round_trips))
        mark = time.perf_counter()
        lg = line_graph(sg)
        texts = relation_texts(sg)
        asked = question_text(question, result.topics, self.meta.get("data", {}))
        batch = one_question_batch(lg, self.entities.of(sg), self.encoder.encode(texts), self.encoder.encode([asked])[0])
        trace.seconds["line_graph"] = time.perf_counter() - mark
        mark = time.perf_counter()
        with self._lock, torch.inference_mode():
            walks = decode(self.model, batch, self.decoding.starts, self.decoding.rollouts, self.decoding.paths)
        trace.seconds["decode"] = time.perf_counter() - mark
        trace.subgraph = {"nodes": sg.num_nodes, "edges": sg.num_edges, "hops": sg.hops, "lambda": sg.lam,
                          "line_graph_triples": lg.num_triples, "line_graph_edges": lg.num_edges,
                          "paths": len(walks), "path_triples": len({t for w in walks for t in w.triples})}
        mass = tail_mass(walks, lg.tail, lg.topics)
        result.evidence = self.evidence(sg, lg, walks, texts, mass)
        emit(EvidenceReady(result.evidence))
        if not walks:
            result.declined = "no path leaves the topic entities in the retrieved subgraph"
        elif self.llm is None:
            result.answers = self.tail_answers(sg, mass)
            if not result.answers:
                result.declined = "every decoded path leads back to a topic entity"
        else:
            self.reason(result, sg)
        trace.seconds["total"] = time.perf_counter() - started
        return result

    def tail_answers(self, sg: Subgraph, mass: dict[int, float]) -> list[AnswerItem]:
        """The tails (`decode.tail_mass`, best first) scoring at least the answer share of the best."""
        best = max(mass.values(), default=0.0)
        share = self.decoding.answer_share if self.decoding.answer_share >= 0 else self.checkpoint_share
        return [AnswerItem(sg.node_labels[n], sg.nodes[n], sg.node_labels[n], "ranked", round(s, 4)) for n, s in mass.items() if s >= share * best]

    def evidence(self, sg: Subgraph, lg: LineGraph, walks: list[Walk], texts: list[str], mass: dict[int, float]) -> Evidence:
        return Evidence(
            candidates=[{"label": sg.node_labels[n], "iri": sg.nodes[n], "score": round(s, 4)} for n, s in mass.items()],
            paths=[f"{path_text(sg, lg, w.triples, texts)}  (p={w.probability:.3f})" for w in walks],
            path_edges=[[{"head": sg.node_labels[int(lg.head[t])], "relation": texts[int(lg.relation[t])], "tail": sg.node_labels[int(lg.tail[t])]}
                         for t in w.triples] for w in walks[:5]],
            facts=list(dict.fromkeys(f"{sg.node_labels[int(lg.head[t])]} —{texts[int(lg.relation[t])]}→ {sg.node_labels[int(lg.tail[t])]}"
                                     for w in walks for t in w.triples)),
        )

    def reason(self, result: Answer, sg: Subgraph) -> None:
        """The reasoner prompt over the paths (one call); a failed call falls back to the paths' tails."""
        assert self.llm is not None
        session = LLMSession(self.llm, max_calls=1)
        mark = time.perf_counter()
        paths = "\n".join(p.rsplit("  (p=", 1)[0] for p in result.evidence.paths)
        try:
            reply = session.ask("rapl.answer", "rapl_answer", stream=True, question=result.question, paths=paths)
            result.text = reply.text
            result.answers = map_answers(reply.text, self.store, sg)
        except LLMError as error:
            result.trace.fallback = f"LLM failed on the answer: {error}; answering with the paths' tails"
            result.answers = [AnswerItem(c["label"], c["iri"], c["label"], "ranked", c["score"]) for c in result.evidence.candidates[:1]]
        result.trace.llm_calls = session.calls
        result.trace.seconds["answer"] = time.perf_counter() - mark
