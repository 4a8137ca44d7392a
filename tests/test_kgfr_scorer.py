"""The shared KGFR scorer: questions handed in from many threads are scored in one model call and
each gets what scoring it alone gives; a request past its deadline or cancelled stops waiting and is
left out of its batch, without holding up the others."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from kgqa import retrieve
from kgqa.core.control import RequestControl, RequestStopped, request_scope
from kgqa.methods.kgfr.batch import runs_within
from kgqa.methods.kgfr.scorer import KGFRScorer

QUESTIONS = [("Kismet", "who directed Kismet"), ("Funny Games", "who wrote Funny Games"), ("Click", "who starred in Click"),
             ("Felon", "when was Felon released"), ("China O'Brien", "who directed China O'Brien"),
             ("Les Misérables", "what language is Les Misérables in")]


@pytest.fixture(scope="module")
def graphs(demo_kg):
    store, _ = demo_kg
    out = []
    for label, question in QUESTIONS:
        topic = store.resolve([label])[label][0].entity.iri
        out.append((retrieve(store, [topic], 3, 100), question))
    return out


@pytest.fixture(scope="module")
def alone(graphs):
    scorer = KGFRScorer(window_ms=0, max_batch=1)
    yield [scorer.score(sg, q) for sg, q in graphs]
    scorer.close()


def test_questions_from_many_threads_share_a_model_call_and_get_their_own_scores(graphs, alone):
    scorer = KGFRScorer(window_ms=300, max_batch=len(graphs))
    try:
        with ThreadPoolExecutor(len(graphs)) as pool:
            together = list(pool.map(lambda g: scorer.score(*g), graphs))
    finally:
        scorer.close()
    assert scorer.batches < len(graphs) and max(s.batch_size for s in together) > 1
    for (sg, _), one, batched in zip(graphs, alone, together):
        assert one.batch_size == 1 and batched.scores.shape == (sg.num_nodes,) and batched.alpha_max.shape == (2 * sg.num_edges,)
        assert torch.equal(torch.isfinite(one.scores), torch.isfinite(batched.scores))
        finite = torch.isfinite(one.scores)
        assert torch.allclose(one.scores[finite], batched.scores[finite], atol=1e-4)
        assert torch.allclose(one.alpha_max, batched.alpha_max, atol=1e-5)


def test_runs_within_an_edge_budget():
    assert runs_within([5, 5, 5, 20, 1, 1], 10) == [range(0, 2), range(2, 3), range(3, 4), range(4, 6)]
    assert runs_within([5, 5, 5], None) == [range(0, 3)] and runs_within([], 10) == []


def test_a_batch_over_the_edge_budget_is_split_into_model_calls_with_the_same_scores(graphs, alone):
    scorer = KGFRScorer(window_ms=300, max_batch=len(graphs))
    scorer.edge_budget = max(2 * sg.num_edges for sg, _ in graphs)  # about one graph per call
    calls = []
    model_call = scorer._model_call
    scorer._model_call = lambda graphs, *rest: calls.append(len(graphs)) or model_call(graphs, *rest)  # type: ignore[method-assign]
    try:
        with ThreadPoolExecutor(len(graphs)) as pool:
            together = list(pool.map(lambda g: scorer.score(*g), graphs))
    finally:
        scorer.close()
    assert scorer.batches < len(graphs) and len(calls) > scorer.batches and sum(calls) == len(graphs)
    for one, batched in zip(alone, together):
        finite = torch.isfinite(one.scores)
        assert torch.equal(finite, torch.isfinite(batched.scores))
        assert torch.allclose(one.scores[finite], batched.scores[finite], atol=1e-4)
        assert torch.allclose(one.alpha_max, batched.alpha_max, atol=1e-5)


def test_a_request_past_its_deadline_stops_waiting_and_leaves_its_batch(graphs, alone):
    scorer = KGFRScorer(window_ms=1500, max_batch=8)  # the first request holds its batch open for 1.5 s
    results: dict[str, object] = {}

    def timed() -> None:
        started = time.monotonic()
        with request_scope(timeout_s=0.2):
            try:
                scorer.score(*graphs[0])
            except RequestStopped as stopped:
                results["timed"] = (str(stopped), time.monotonic() - started)

    def patient() -> None:
        results["patient"] = scorer.score(*graphs[1])

    try:
        threads = [threading.Thread(target=timed), threading.Thread(target=patient)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
    finally:
        scorer.close()
    reason, waited = results["timed"]  # type: ignore[misc]
    assert "scoring" in reason and waited < 1.0  # it did not wait for the batch
    patient_result = results["patient"]
    assert patient_result.batch_size == 1  # the timed-out request was left out of the batch  # type: ignore[attr-defined]
    assert torch.allclose(patient_result.alpha_max, alone[1].alpha_max, atol=1e-5)  # type: ignore[attr-defined]


def test_a_cancelled_request_is_not_scored(graphs):
    scorer = KGFRScorer(window_ms=0)
    control = RequestControl()
    control.cancel()
    try:
        with request_scope(control=control), pytest.raises(RequestStopped, match="cancelled"):
            scorer.score(*graphs[0])
        assert scorer.score(*graphs[0]).batch_size == 1 and scorer.questions == 1
    finally:
        scorer.close()
