"""`kgqa.Engine` over a real embedded store: ask, aask, stream (events in order, tokens when the LLM
streams), sharing across threads and tasks, option and input errors, close."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time

import pytest
from conftest import DEMO_KG
from scripted_llm import ScriptedLLM

from kgqa import Engine, EvidenceReady, Final, Linked, Retrieved, Token
from kgqa.core import control
from kgqa.core.control import RequestStopped, request_scope
from kgqa.core.errors import EntityNotFound, KGQAError
from kgqa.core.events import emit
from kgqa.loaders import load_file
from kgqa.sparql.embedded import EmbeddedWriter


class StreamingScriptedLLM(ScriptedLLM):
    """Scripted, and hands its reply out in pieces like a streaming server."""

    def stream_complete(self, prompt, on_text, **kwargs):  # type: ignore[no-untyped-def]
        completion = self.complete(prompt, **kwargs)
        for word in completion.text.split(" "):
            on_text(word + " ")
        return completion


@pytest.fixture(scope="module")
def store():
    writer = EmbeddedWriter.open(None, "demo")
    load_file(writer, DEMO_KG)
    return writer.reader()


@pytest.fixture(scope="module")
def engine(store):
    return Engine(store)  # kgfr, no LLM


def test_ask_without_an_llm_is_the_kgfr_ranking(engine):
    answer = engine.ask("who directed Kismet")
    assert answer.method == "kgfr" and [t["label"] for t in answer.topics] == ["Kismet"]
    assert answer.answers and answer.answers[0].score is not None and answer.trace.llm_calls == []
    data = answer.to_json()
    assert set(data) == {"question", "method", "answers", "text", "topics", "evidence", "trace", "confidence", "declined"}
    assert set(data["trace"]) >= {"round_trips", "subgraph", "seconds", "llm", "llm_calls", "fallback", "confidence_signals"}
    assert 0.0 <= data["confidence"] <= 1.0 and data["declined"] is None


def test_given_topics_are_looked_up_in_the_store_once_per_question(store):
    """ask and stream check the given topics with one label look-up, and the method's linking reuses
    it instead of asking the store again (a round trip per request to a remote store)."""
    looked_up: list[list[str]] = []
    real = store.resolve
    store.resolve = lambda labels: looked_up.append(list(labels)) or real(labels)
    try:
        with Engine(store) as engine:
            asked = engine.ask("who directed Kismet", topics=["Kismet"])
            streamed = [e for e in engine.stream("who directed Kismet", topics=["Kismet"]) if isinstance(e, Final)]
            with pytest.raises(EntityNotFound, match="Nowhere Film"):
                engine.ask("who directed it", topics=["Nowhere Film"])
    finally:
        del store.resolve
    assert [t["label"] for t in asked.topics] == ["Kismet"] and asked.answers
    assert streamed[0].answer.answers[0].label == asked.answers[0].label
    assert looked_up == [["Kismet"], ["Kismet"], ["Nowhere Film"]]


def test_below_the_answerability_threshold_the_answer_is_declined_with_the_closest_evidence(store, engine):
    answered = engine.ask("who directed Kismet")
    with Engine(store, decline_below=1.0) as strict:  # nothing short of certainty is answered
        declined = strict.ask("who directed Kismet")
    assert declined.confidence == answered.confidence  # the same question, only the threshold differs
    assert declined.answers == [] and "no answer I trust" in declined.declined and answered.answers[0].label in declined.declined
    assert declined.evidence.candidates == answered.evidence.candidates  # the closest evidence stays
    with Engine(store, decline_below=0.0) as lenient:
        assert lenient.ask("who directed Kismet").declined is None
    nothing = engine.ask("what is the boiling point of zyxwv")
    assert nothing.answers == [] and nothing.confidence == 0.0 and "no entity" in nothing.declined


def test_stream_yields_typed_events_in_order(engine):
    events = list(engine.stream("who directed Kismet"))
    kinds = [e.kind for e in events]
    assert kinds == ["linked", "retrieved", "evidence", "final"]
    assert isinstance(events[0], Linked) and events[0].topics[0]["label"] == "Kismet"
    assert isinstance(events[1], Retrieved) and events[1].subgraph["nodes"] > 1 and events[1].round_trips >= 2
    assert isinstance(events[2], EvidenceReady) and events[2].evidence.candidates
    assert isinstance(events[3], Final) and events[3].answer.answers[0].label == events[2].evidence.candidates[0]["label"]


def test_stream_works_within_the_callers_deadline_and_stops_when_its_reader_leaves(store, engine):
    """stream and astream: the worker keeps the caller's deadline, and stops when its reader leaves early."""
    with request_scope(timeout_s=0):  # the caller is out of time: the worker thread must see it too
        with pytest.raises(RequestStopped, match="deadline passed"):
            list(engine.stream("who directed Kismet"))
    with request_scope(timeout_s=60) as caller:
        assert [e.kind for e in engine.stream("who directed Kismet")][-1] == "final"
    assert not caller.cancelled.is_set()  # a finished stream leaves its caller's request alone

    ended: list[str] = []
    finished = threading.Event()

    def slow_method(question, topics):  # type: ignore[no-untyped-def]
        emit(Token("first"))
        try:
            for _ in range(500):  # ~5 s unless stopped
                control.check("waiting")
                time.sleep(0.01)
            ended.append("ran to the end")
        except RequestStopped as stopped:
            ended.append(str(stopped))
            raise
        finally:
            finished.set()

    async def read_one_async(engine: Engine) -> str:
        events = engine.astream("who directed Kismet")
        first = await events.__anext__()
        await events.aclose()  # the reader leaves after the first event
        return first.text

    def read_one(engine: Engine) -> str:
        events = engine.stream("who directed Kismet")
        first = next(events)
        events.close()
        return first.text

    with Engine(store) as slow:
        slow.runner = lambda method=None, **options: slow_method  # type: ignore[method-assign]
        for reader in (read_one, lambda engine: asyncio.run(read_one_async(engine))):
            ended.clear()
            finished.clear()
            assert reader(slow) == "first"
            left = time.monotonic()
            assert finished.wait(5)
            assert ended == ["cancelled before waiting"] and time.monotonic() - left < 2


def test_stream_passes_answer_tokens_when_the_llm_streams(store):
    llm = StreamingScriptedLLM(lambda prompt: "1. William Dieterle" if "answers:" in prompt.splitlines()[-1] else "yes")
    with Engine(store, "kgfr", llm) as engine:
        events = list(engine.stream("who directed Kismet", max_steps=1))
    kinds = [e.kind for e in events]
    assert kinds[:3] == ["linked", "retrieved", "evidence"] and kinds[-1] == "final"
    tokens = [e.text for e in events if isinstance(e, Token)]
    assert "".join(tokens).strip() == "1. William Dieterle"
    assert kinds.index("token") > kinds.index("evidence")


def test_one_engine_serves_threads_and_tasks(engine):
    # different topics, so the threads score subgraphs of different sizes at the same time
    questions = ["who directed Kismet", "who directed Les Misérables", "who wrote Funny Games", "when was Felon released",
                 "who starred in Click", "who directed China O'Brien"] * 3
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        threaded = list(pool.map(engine.ask, questions))
    serial = [engine.ask(q) for q in questions]
    assert [[a.iri for a in x.answers] for x in threaded] == [[a.iri for a in x.answers] for x in serial]

    async def many():  # type: ignore[no-untyped-def]
        return await asyncio.gather(*(engine.aask(q) for q in questions[:4]))

    assert [[a.iri for a in x.answers] for x in asyncio.run(many())] == [[a.iri for a in x.answers] for x in serial[:4]]


def test_errors_name_what_was_wrong(store, engine):
    with pytest.raises(ValueError, match="unknown method 'sql'"):
        Engine(store, "sql")
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['widht'\]"):
        engine.ask("who directed Kismet", widht=3)
    with pytest.raises(ValueError, match="needs an LLM"):
        engine.ask("who directed Kismet", method="lmp")
    with pytest.raises(ValueError, match="non-empty string"):
        engine.ask("   ")
    with pytest.raises(EntityNotFound, match="Nowhere Film"):
        engine.ask("who directed it", ["Nowhere Film"])
    with pytest.raises(EntityNotFound):
        list(engine.stream("who directed it", ["Nowhere Film"]))


def test_close_refuses_later_use_and_leaves_a_given_store_open(store, tmp_path):
    engine = Engine(store)
    engine.close()
    engine.close()  # twice is fine
    with pytest.raises(KGQAError, match="closed"):
        engine.ask("who directed Kismet")
    assert store.resolve(["Kismet"])["Kismet"]  # the caller's store is still open
    with pytest.raises(KGQAError):
        Engine(f"oxigraph://{tmp_path / 'nothing-here'}")


def test_warm_up_loads_the_method_and_the_encoder_without_answering(store):
    """What a first question would load (the checkpoint, the sentence encoder, the store's label look-up
    and text index) is loaded by `warm_up`, which answers nothing: the first question then only answers."""
    from kgqa.retrieval import text

    engine = Engine(store)
    seconds = engine.warm_up()
    assert set(seconds) == {"store", "method", "encoder"}  # no LLM: no "llm" step
    assert len(engine._runners) == 1 and "cpu" in text._MODELS  # the runner built; the encoder's weights shared by every TextEncoder
    runner = engine.runner()
    assert engine.warm_up()["method"] < seconds["method"] and engine.runner() is runner  # a second warm-up finds it all loaded
    assert engine.ask("who directed Kismet").answers[0].label == "William Dieterle"
    engine.close()


def test_a_warm_up_that_cannot_load_names_the_step_and_why(store, tmp_path):
    from kgqa.faces.sdk import WarmUpFailed

    engine = Engine(store, checkpoint=tmp_path / "no-checkpoint")
    with pytest.raises(WarmUpFailed, match=r"^method: ValueError: .*no-checkpoint: no KGFR checkpoint here") as failed:
        engine.warm_up()
    assert failed.value.step == "method" and isinstance(failed.value, KGQAError)


def test_a_local_llm_loads_its_weights_on_first_use_or_warm_up_not_when_opened(store, tmp_path):
    """`kgqa serve --llm gemma3-270m` listens before the weights load: opening the LLM checks the model
    is there and loads nothing; a model that cannot be loaded is an LLMError when it is first used."""
    from kgqa.llm.local import TransformersLLM
    from kgqa.llm.protocol import LLMError

    with pytest.raises(LLMError, match="does not exist"):
        TransformersLLM(tmp_path / "missing")
    started = time.perf_counter()
    llm = TransformersLLM(tmp_path)  # a folder, but no model in it
    assert time.perf_counter() - started < 1.0 and llm._lm is None
    for _ in range(2):  # the failure is kept, not retried on every call
        with pytest.raises(LLMError, match="could not be loaded"):
            llm.warm_up()
    with pytest.raises(LLMError, match="could not be loaded"):
        llm.complete("who directed Kismet?")


def test_close_during_a_warm_up_returns_at_once_and_the_warm_up_releases_the_engine(store):
    """`kgqa serve` stopped while it warms up: the warm-up may hold the method context's lock for
    minutes (an LLM writing relation descriptions), so close() leaves releasing to the warm-up's end."""
    engine = Engine(store)
    building, gate, closed = threading.Event(), threading.Event(), []
    engine.runner = lambda method=None: (building.set(), gate.wait(30))  # type: ignore[method-assign]
    engine.context.close = lambda: closed.append(True)  # type: ignore[method-assign]
    outcome: list = []
    warming = threading.Thread(target=lambda: outcome.append(_raised(engine.warm_up)))
    warming.start()
    assert building.wait(30)
    started = time.perf_counter()
    engine.close()
    assert time.perf_counter() - started < 1.0 and closed == []  # not released under the warm-up's feet
    gate.set()
    warming.join(30)
    assert closed == [True] and isinstance(outcome[0], KGQAError) and "closed" in str(outcome[0])  # released once, loading stopped
    with pytest.raises(KGQAError, match="closed"):
        engine.warm_up()


def _raised(call):  # type: ignore[no-untyped-def]
    try:
        return call()
    except Exception as error:
        return error
