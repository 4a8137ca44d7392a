"""One loaded KGFR checkpoint that scores subgraphs for many callers at once, in batches.

Callers (request threads of the service, `Engine.ask` from many threads, `kgqa eval`'s workers) hand
in a subgraph and a question and wait. One scoring thread takes what has queued up — waiting at
most `window_ms` after the first request for others to join, at most `max_batch` questions — embeds
the questions together, runs the model on the batch (on CPU in calls of at most CPU_EDGE_BUDGET
edges, see kgfr/batch.py), and hands each caller its own scores and edge attention. A caller whose request is past its deadline or cancelled (kgqa.core.control) before
its batch starts is dropped from it; one that gives up while waiting stops waiting.

The model runs in this one thread only, so torch's intra-op threads (set to the machine's cores)
are not oversubscribed by request threads each starting their own.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from concurrent.futures import CancelledError, Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from kgqa.core import control
from kgqa.core.control import RequestStopped
from kgqa.core.subgraph import Subgraph
from kgqa.methods.kgfr.confidence import Calibration
from kgqa.methods.kgfr.batch import CPU_EDGE_BUDGET, make_batch, runs_within
from kgqa.methods.kgfr.model import KGFRBatch
from kgqa.methods.kgfr.cross_reader import CROSS_READER_DIR, CrossReader
from kgqa.methods.kgfr.path_reader import READER_DIR, PathReader
from kgqa.methods.kgfr.text_prior import relation_cosine
from kgqa.methods.kgfr.train import load_checkpoint
from kgqa.methods.registry import MethodContext
from kgqa.retrieval.text import TextEncoder

BUNDLED_CHECKPOINT = Path(__file__).resolve().parent / "checkpoints" / "kgfr-multikg"
DEFAULT_MARGIN = 1.0
DEFAULT_WINDOW_MS = 2.0
DEFAULT_MAX_BATCH = 32
log = logging.getLogger(__name__)


@dataclass
class Scored:
    """One question's output: a score per node (topic entities -inf) and, per edge of the subgraph
    in both directions (the order of `edge_arrays`), the largest attention over the layers (eq. 11)."""

    scores: torch.Tensor  # (N,)
    alpha_max: torch.Tensor  # (2E,)
    batch_size: int  # how many questions were scored together (in one model call or, on CPU, a few)
    relation_match: float = -1.0  # the best cosine between the question's relation probe and a relation text of the subgraph
    #: the probe's token states from the pass that encoded it (where the checkpoint has a path reader,
    #: which reads them: `PathReader.read`), so that no second pass of the encoder is needed
    probe_states: np.ndarray | None = None


def edge_arrays(sg: Subgraph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(source, target, type) of every edge as the model sees it: each fact, then its inverse."""
    h, t = sg.edge_index
    return np.concatenate([h, t]), np.concatenate([t, h]), np.concatenate([sg.edge_type, sg.edge_type ^ 1])


@dataclass
class _Request:
    sg: Subgraph
    question: str
    descriptions: dict[str, str] | None
    probe: str  # the question with its topics masked (kgfr/confidence.py), for `Scored.relation_match`
    control: control.RequestControl | None
    future: Future


class KGFRScorer:
    def __init__(self, checkpoint: str | Path | None = None, device: str = "auto", encoder: TextEncoder | None = None,
                 window_ms: float = DEFAULT_WINDOW_MS, max_batch: int = DEFAULT_MAX_BATCH, torch_threads: int | None = None):
        if window_ms < 0 or max_batch < 1:
            raise ValueError(f"the scoring window must be >= 0 ms and the batch >= 1 (got {window_ms} ms, {max_batch})")
        self.checkpoint = Path(checkpoint) if checkpoint else BUNDLED_CHECKPOINT
        self.model, self.meta = load_checkpoint(self.checkpoint, device)
        self.calibration = Calibration.load(self.checkpoint)  # None: the checkpoint never declines (kgfr/confidence.py)
        reader = self.checkpoint / READER_DIR
        cross = self.checkpoint / CROSS_READER_DIR
        self.reader = (PathReader(reader, CrossReader.load(cross) if (cross / "config.json").exists() else None)
                       if (reader / "config.json").exists() else None)  # kgfr/path_reader.py, kgfr/cross_reader.py
        self.device = next(self.model.parameters()).device
        self.edge_budget = CPU_EDGE_BUDGET if self.device.type == "cpu" else None  # a batch is split into model calls of at most this many edges
        self.encoder = encoder or TextEncoder()
        train = self.meta.get("train", {})
        self.hops, self.lam = int(train.get("hops", 3)), int(train.get("lam", 100))
        self.margin = float(self.meta.get("margin", DEFAULT_MARGIN))
        self.relation_text = str(self.meta.get("relation_text", "v1"))  # how u_r is written (checkpoints before v2 lack the key)
        self.window_s, self.max_batch = window_ms / 1000, max_batch
        self.torch_threads = torch_threads or _cores()
        self.batches = self.questions = 0  # counters, for the service's metrics and tests
        self._queue: queue.Queue[_Request | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._closed = False

    def score(self, sg: Subgraph, question: str, descriptions: dict[str, str] | None = None, probe: str | None = None) -> Scored:
        """Score one subgraph for one question; blocks until its batch has run. Honours the current
        request's deadline and cancellation (raises `RequestStopped`). `probe` (default: the question)
        is the text whose closeness to the subgraph's relations `Scored.relation_match` reports."""
        if self._closed:
            raise RuntimeError("this KGFR scorer is closed")
        control.check("scoring")
        self._ensure_thread()
        request = _Request(sg, question, descriptions, probe or question, control.current(), Future())
        self._queue.put(request)
        while True:
            left = request.control.remaining() if request.control else None
            try:
                return request.future.result(timeout=0.05 if left is None else max(0.0, min(left, 0.05)))
            except FutureTimeout:
                if request.control is None:
                    continue
                try:
                    request.control.check("scoring")
                except RequestStopped:
                    request.future.cancel()  # dropped from its batch if that has not started
                    raise
            except CancelledError:
                raise RequestStopped("cancelled while waiting for scoring") from None

    def _ensure_thread(self) -> None:
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="kgqa-kgfr-scorer", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        torch.set_num_threads(self.torch_threads)
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            deadline = time.perf_counter() + self.window_s
            while len(batch) < self.max_batch:
                try:  # whatever has queued already joins at once; then wait out the window
                    item = self._queue.get_nowait() if self.window_s == 0 else self._queue.get(timeout=max(0.0, deadline - time.perf_counter()))
                except queue.Empty:
                    break
                if item is None:
                    self._queue.put(None)  # stop after this batch
                    break
                batch.append(item)
            live = [r for r in batch if self._still_wanted(r)]
            if live:
                self._score_batch(live)

    @staticmethod
    def _still_wanted(request: _Request) -> bool:
        if request.control is not None:
            try:
                request.control.check("scoring")
            except RequestStopped:
                request.future.cancel()  # its caller sees it stop
                return False
        return request.future.set_running_or_notify_cancel()

    def _score_batch(self, requests: list[_Request]) -> None:
        groups: dict[int, list[_Request]] = {}
        for r in requests:  # one model call per set of relation descriptions (almost always one)
            groups.setdefault(id(r.descriptions), []).append(r)
        for group in groups.values():
            try:
                results = self._forward(group)
            except BaseException as error:  # handed to every caller of the batch
                for r in group:
                    r.future.set_exception(error)
                continue
            for r, result in zip(group, results):
                r.future.set_result(result)

    @torch.no_grad()
    def _forward(self, requests: list[_Request]) -> list[Scored]:
        graphs = [r.sg for r in requests]
        # not cached: a service sees each question once
        texts = list(dict.fromkeys([r.question for r in requests] + [r.probe for r in requests]))  # a probe is often its question
        if self.reader is None:
            vectors, states = self.encoder.encode_bulk(texts), []
        else:
            vectors, states = self.encoder.encode_with_states(texts)
        row = {text: i for i, text in enumerate(texts)}
        questions, probes = vectors[[row[r.question] for r in requests]], vectors[[row[r.probe] for r in requests]]
        out: list[Scored] = []
        for run in runs_within([2 * sg.num_edges for sg in graphs], self.edge_budget):
            out += self._model_call([graphs[i] for i in run], questions[run.start:run.stop], probes[run.start:run.stop],
                                    requests[0].descriptions, len(requests))
        if states:
            out = [replace(scored, probe_states=states[row[r.probe]]) for scored, r in zip(out, requests)]
        self.batches += 1
        self.questions += len(requests)
        return out

    def _model_call(self, graphs: list[Subgraph], vectors: np.ndarray, probes: np.ndarray, descriptions: dict[str, str] | None,
                    shared: int) -> list[Scored]:
        batch = make_batch(graphs, vectors, self.encoder, descriptions=descriptions, style=self.relation_text, probe_vectors=probes,
                           with_relation_questions=self.model.text_prior is not None).to(self.device)
        scores, attention = self.model(batch, keep_attention=True)
        scores = scores.masked_fill(batch.topic_mask, float("-inf")).cpu()
        alpha_max = torch.zeros(batch.edge_index.shape[1])
        hops = batch.edge_hop.cpu()
        for i, alpha in enumerate(attention):  # α^max over the layers that used each edge (eq. 11)
            used = (hops <= i + 1).nonzero().squeeze(-1)
            alpha_max[used] = torch.maximum(alpha_max[used], alpha.cpu())
        match = relation_match(batch).tolist()
        out, node, edge = [], 0, 0
        for g, sg in enumerate(graphs):  # make_batch lays the graphs side by side: nodes and edges are contiguous
            out.append(Scored(scores[node:node + sg.num_nodes], alpha_max[edge:edge + 2 * sg.num_edges], shared, match[g]))
            node += sg.num_nodes
            edge += 2 * sg.num_edges
        return out

    def close(self) -> None:
        self._closed = True
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout=10)

    def stats(self) -> dict[str, Any]:
        return {"batches": self.batches, "questions": self.questions,
                "mean_batch": self.questions / self.batches if self.batches else 0.0}


def relation_match(batch: KGFRBatch) -> torch.Tensor:
    """Per question of the batch, the largest cosine between its probe's embedding and the text of a
    relation in its subgraph: low when the question asks for something no relation there reads like
    ("how tall is ⟨topic⟩" over a film KG)."""
    cosine = relation_cosine(batch)
    best = torch.full((batch.num_graphs,), -1.0, device=cosine.device)
    return best.scatter_reduce(0, batch.relation_graph, cosine, "amax").cpu()


def shared_scorer(context: MethodContext) -> KGFRScorer:
    """The engine's one scorer per checkpoint; `context.settings` may set the batcher's
    `scoring_window_ms`, `scoring_max_batch` and `torch_threads`."""
    s = context.settings
    key = ("kgfr-scorer", str(context.checkpoint or BUNDLED_CHECKPOINT))
    return context.shared(key, lambda: KGFRScorer(
        context.checkpoint, window_ms=s.get("scoring_window_ms", DEFAULT_WINDOW_MS),
        max_batch=s.get("scoring_max_batch", DEFAULT_MAX_BATCH), torch_threads=s.get("torch_threads"),
    ))


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)
