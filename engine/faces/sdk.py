"""`kgqa.Engine`: one object to ask questions with.

    from kgqa import Engine

    with Engine("sparql+http://127.0.0.1:8890/sparql", kg="metaqa") as engine:          # no LLM: KGFR ranking
        answer = engine.ask("which films did the director of Kismet also direct?")
        print(answer.answers[0].label, answer.evidence.paths[0], answer.trace.seconds["total"])

    engine = Engine("oxigraph:///data/store", method="lmp", llm="http://127.0.0.1:8080/v1?model=gemma3-270m&mode=completion")
    answer = await engine.aask("…", width=3, depth=2)
    for event in engine.stream("…"):            # Linked, Retrieved, EvidenceReady, Token…, Final
        ...

An engine is reusable and safe to share across threads and tasks: the store and the LLM are opened
once; each (method, options) pair builds its runner once, under a lock. `close()` (or leaving the
`with` block) releases the store's driver and the LLM client that the engine opened from URLs
(a store or LLM object passed in stays the caller's to close).
"""

from __future__ import annotations

import asyncio
import contextvars
import queue
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from kgqa.core import control
from kgqa.core.answer import Answer
from kgqa.core.errors import EntityNotFound, KGQAError
from kgqa.core.events import Event, Final, events_to
from kgqa.core.store import GraphStore
from kgqa.core.types import LinkedEntity
from kgqa.llm.protocol import LLM
from kgqa.methods import REGISTRY, MethodContext, Runner
from kgqa.retrieval.linking import topics_resolved

MAX_QUESTION_CHARS = 2000


class Engine:
    def __init__(self, store: str | GraphStore, method: str = "kgfr", llm: str | LLM | None = None, *,
                 kg: str | None = None, checkpoint: str | Path | None = None, llm_cache: str | Path | None = None,
                 settings: dict[str, Any] | None = None, **options: Any):
        """`options` are the default method's options (see `kgqa.methods.REGISTRY`, or
        `Engine.options_of(method)`); `settings` are engine-wide knobs: `scoring_window_ms`,
        `scoring_max_batch` (the KGFR batcher) and `torch_threads`."""
        from kgqa.llm.spec import open_llm
        from kgqa.retrieval.store_url import open_store

        self.method = REGISTRY.get(method).name
        self.defaults: dict[str, Any] = {method: REGISTRY.get(method).make_options(options)}
        self.store: GraphStore = open_store(store, kg) if isinstance(store, str) else store
        try:
            self.llm: LLM | None = open_llm(llm, llm_cache) if isinstance(llm, str) else llm
        except Exception:
            self.store.close()
            raise
        self._owns = (isinstance(store, str), isinstance(llm, str))  # close only what this engine opened
        self.checkpoint = checkpoint
        self.context = MethodContext(self.store, self.llm, checkpoint, dict(settings or {}))
        self._runners: dict[tuple[str, Any], Runner] = {}
        self._lock = threading.Lock()
        self._closed = False

    @staticmethod
    def options_of(method: str) -> dict[str, Any]:
        """The options a method takes, with type, default, range and help (from the registry)."""
        return {spec.name: spec.to_json() for spec in REGISTRY.get(method).option_specs()}

    def method_options(self, method: str | None = None, **options: Any) -> Any:
        """The options a call would run with: this engine's defaults for the method, then `options`
        (checked: an unknown option or a value out of range raises ValueError naming it)."""
        spec = REGISTRY.get(method or self.method)
        return spec.make_options(options, self.defaults.get(spec.name))

    def runner(self, method: str | None = None, **options: Any) -> Runner:
        if self._closed:
            raise KGQAError("this Engine is closed")
        method = REGISTRY.get(method or self.method).name
        key = (method, self.method_options(method, **options))
        with self._lock:
            if key not in self._runners:
                self._runners[key] = REGISTRY.build(method, self.context, key[1])
            return self._runners[key]

    def ask(self, question: str, topics: list[str] | None = None, method: str | None = None, **options: Any) -> Answer:
        """Answer one question. `topics` (labels) skips entity linking; `options` override the
        engine's options of that method for this call."""
        question = _checked_question(question)
        runner = self.runner(method, **options)
        with topics_resolved(self.store, topics, self._check_topics(topics)):
            return runner(question, topics)  # its linking reuses the check's look-up

    def _check_topics(self, topics: list[str] | None) -> dict[str, list[LinkedEntity]] | None:
        """Given topics must each name an entity of the KG (one label look-up for all, returned)."""
        if topics is None:
            return None
        if not isinstance(topics, list) or not all(isinstance(t, str) and t.strip() for t in topics):
            raise ValueError("topics must be a list of non-empty labels")
        found = self.store.resolve(topics)
        missing = [label for label, hits in found.items() if not hits]
        if missing:
            raise EntityNotFound(f"topic(s) {missing} are not entities of KG {self.store.kg!r}")
        return found

    async def aask(self, question: str, topics: list[str] | None = None, method: str | None = None, **options: Any) -> Answer:
        """`ask` without blocking the event loop (the work runs in a worker thread)."""
        return await asyncio.to_thread(self.ask, question, topics, method, **options)

    def stream(self, question: str, topics: list[str] | None = None, method: str | None = None, **options: Any) -> Iterator[Event]:
        """Events in order — `Linked`, `Retrieved`, `EvidenceReady`, `Token`… (when the LLM streams),
        `Final` — while the question is answered in a worker thread. An error is raised here."""
        runner = self.runner(method, **options)
        question = _checked_question(question)
        found = self._check_topics(topics)
        events: queue.Queue = queue.Queue()
        done = object()
        caller = control.current()  # the caller's deadline and cancellation reach the worker
        own = caller.child() if caller is not None else control.RequestControl()

        def work() -> None:
            try:
                with control.request_scope(control=own), events_to(events.put), topics_resolved(self.store, topics, found):
                    answer = runner(question, topics)
                events.put(Final(answer))
            except BaseException as error:  # handed to the consumer, raised there
                events.put(error)
            finally:
                events.put(done)

        context = contextvars.copy_context()  # as asyncio.to_thread does for aask
        threading.Thread(target=context.run, args=(work,), name="kgqa-stream", daemon=True).start()
        try:
            while (item := events.get()) is not done:
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            own.cancel()  # a consumer that stops reading stops the work at its next stage

    async def astream(self, question: str, topics: list[str] | None = None, method: str | None = None, **options: Any) -> AsyncIterator[Event]:
        iterator = self.stream(question, topics, method, **options)
        sentinel = object()
        while (event := await asyncio.to_thread(next, iterator, sentinel)) is not sentinel:
            yield event  # type: ignore[misc]

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.context.close()
        if self._owns[0]:
            self.store.close()
        close = getattr(self.llm, "close", None)
        if close and self._owns[1]:
            close()

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _checked_question(question: str) -> str:
    if not isinstance(question, str) or not question.strip():
        raise ValueError("question must be a non-empty string")
    if len(question) > MAX_QUESTION_CHARS:
        raise ValueError(f"question is {len(question)} characters long; the limit is {MAX_QUESTION_CHARS}")
    return question.strip()
