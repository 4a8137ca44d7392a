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
once; each (method, options) pair builds its runner once, under a lock. Models load on first use;
`engine.warm_up()` loads them now (the service runs it in the background while it already listens).
`close()` (or leaving the `with` block) releases the store's driver and the LLM client that the
engine opened from URLs (a store or LLM object passed in stays the caller's to close).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
import queue
import threading
import time
import warnings
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from kgqa.core import control
from kgqa.core.answer import Answer
from kgqa.core.errors import EntityNotFound, KGQAError, NoLabelIndex
from kgqa.core.events import Event, Final, events_to
from kgqa.core.store import GraphStore, SearchesLabels
from kgqa.core.types import LinkedEntity
from kgqa.llm.protocol import LLM
from kgqa.methods import REGISTRY, MethodContext, Runner
from kgqa.retrieval.linking import topics_resolved

MAX_QUESTION_CHARS = 2000
log = logging.getLogger("kgqa.faces.sdk")
WARM_UP_PROBE = "kgqa warm-up"

# Deprecation warnings that kgqa's dependencies raise on every run, about their own code, which a
# user of kgqa can do nothing about. Each is matched by its exact message; nothing else is hidden.
DEPENDENCY_WARNINGS = (
    # PyG decorates some of its functions with torch.jit.script when it is imported (torch >= 2.10)
    (FutureWarning, r"`torch\.jit\.script` is deprecated\. Please switch to `torch\.compile` or `torch\.export`\."),
    # peft reads this property of the model it wraps (GraSP's selector; transformers 5)
    (FutureWarning, r"`is_gradient_checkpointing` is deprecated and will be removed in v6\."),
)
for _category, _message in DEPENDENCY_WARNINGS:
    warnings.filterwarnings("ignore", message=_message, category=_category)


class WarmUpFailed(KGQAError):
    """`Engine.warm_up` could not load something; `step` says what (the cause is chained)."""

    def __init__(self, step: str, error: BaseException):
        super().__init__(f"{step}: {type(error).__name__}: {error}")
        self.step = step


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
        self._warming = 0  # warm-ups running
        self._warming_lock = threading.Lock()

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

    def warm_up(self, method: str | None = None) -> dict[str, float]:
        """Load now what the first question would load, without answering one: the store's label
        look-up and text index of labels, the method's runner (its checkpoint; torch and PyG; kgfr with
        an LLM also has its relation descriptions written once per KG, as a first question would), the
        sentence encoder (run once) and a local LLM's weights. Returns the seconds of each step. A step
        that fails raises `WarmUpFailed` naming it, except the store's: a store that cannot be reached
        now is reported by the probes (the service's /v1/health) and may come up later, and a KG
        without a text index is answered without the linker's fallbacks."""
        with self._warming_lock:
            if self._closed:
                raise KGQAError("this Engine is closed")
            self._warming += 1
        try:
            return self._warm_up(method)
        finally:
            with self._warming_lock:
                self._warming -= 1
                release = self._closed and not self._warming
            if release:  # closed meanwhile: close() left this to the warm-up
                self._release()

    def _warm_up(self, method: str | None) -> dict[str, float]:
        from kgqa.retrieval.text import TextEncoder

        seconds: dict[str, float] = {}
        llm = getattr(self.llm, "inner", self.llm)  # under an on-disk cache (kgqa.llm.cache)
        steps: list[tuple[str, Any]] = [
            ("store", self._probe_store),
            ("method", lambda: self.runner(method)),
            ("encoder", lambda: TextEncoder().warm_up()),
            ("llm", getattr(llm, "warm_up", None)),
        ]
        for step, run in steps:
            if run is None:
                continue
            if self._closed:  # stopped meanwhile: load nothing more
                raise KGQAError("this Engine is closed")
            started = time.perf_counter()
            try:
                run()
            except Exception as error:
                raise WarmUpFailed(step, error) from error
            seconds[step] = round(time.perf_counter() - started, 3)
        return seconds

    def _probe_store(self) -> None:
        """One label look-up, and one search of the text index of labels (which opens it), where the
        store has one. Errors are left to the probes that report them."""
        try:
            self.store.resolve([WARM_UP_PROBE])
            if isinstance(self.store, SearchesLabels):
                self.store.search_labels([WARM_UP_PROBE], limit=1)
        except NoLabelIndex:
            pass  # linking says so (once) when it first needs the index
        except Exception as error:  # not the warm-up's to fail on: the store may come up later
            log.warning("warm-up: the store did not answer its probe (%s: %s)", type(error).__name__, error)

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
        """Release what the engine opened. While a `warm_up` runs, that warm-up releases it when it ends
        instead: it may hold the method context's lock for minutes (an LLM writing the KG's relation
        descriptions), and `kgqa serve` stopped by SIGTERM meanwhile must not wait for it."""
        with self._warming_lock:
            if self._closed:
                return
            self._closed = True
            if self._warming:
                return
        self._release()

    def _release(self) -> None:
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


class WarmUp:
    """An engine's warm-up in a background thread, for a server that listens meanwhile (kgqa serve):
    `start()` it when the server starts (and on each request: a no-op unless it is due); `state` is
    "warming", then "ok" or "failed" with `reason` (one line, never a traceback); `await wait(s)`
    from any event loop. A failed one is started again by a `start()` at least `retry_s` after it
    ended (the store or the LLM server may have come up since)."""

    def __init__(self, engine: Engine, enabled: bool = True, retry_s: float = 30.0):
        self.engine, self.retry_s = engine, retry_s
        self.state = "warming" if enabled else "ok"
        self.reason: str | None = None
        self.seconds: dict[str, float] = {}
        self.attempts = 0
        self.started: float | None = None  # time.monotonic() of the latest attempt's start and end
        self.ended: float | None = None
        self.waiting = 0  # questions waiting for it
        self._running = False
        self._lock = threading.Lock()
        self._waiters: list[asyncio.Future] = []  # each on its own event loop (a test client may run one per request)

    def start(self) -> None:
        """Start the warm-up unless it runs, has succeeded, or failed less than `retry_s` ago."""
        with self._lock:
            if self._running or self.state == "ok":
                return
            if self.state == "failed" and time.monotonic() - (self.ended or 0.0) < self.retry_s:
                return
            self._running, self.state, self.attempts = True, "warming", self.attempts + 1
            self.started = time.monotonic()
        # a daemon thread, not the loop's executor: a server stopped while warming exits at once
        threading.Thread(target=self._run, name="kgqa-warm-up", daemon=True).start()

    def _run(self) -> None:
        try:
            seconds = self.engine.warm_up()
        except Exception as error:  # reported by /v1/health and to questions; the traceback only in the log
            log.error("warm-up failed: %s", error, exc_info=True)
            reason = " ".join(str(error).split()) or type(error).__name__
            with self._lock:
                self.state, self.reason, self._running, self.ended = "failed", reason[:500], False, time.monotonic()
                waiters, self._waiters = self._waiters, []
        else:
            log.info("warm: %s", ", ".join(f"{k} {v:.1f} s" for k, v in seconds.items()))
            with self._lock:
                self.state, self.reason, self.seconds, self._running, self.ended = "ok", None, seconds, False, time.monotonic()
                waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            try:
                waiter.get_loop().call_soon_threadsafe(_resolve, waiter)
            except RuntimeError:  # its loop has closed
                pass
        if self.state == "ok":
            # Stay (parked, a daemon): this thread built the models with torch (OpenMP), and when it
            # ended, later questions ran 4-5x slower on 2 cores (median 0.38-0.51 s against
            # 0.08-0.09 s): two threads of the process, the scoring thread and its OpenMP worker, spun
            # (OMP_WAIT_POLICY=PASSIVE removed it too). Likely libgomp spinning at full count once the
            # scoring thread's team is the only one left; a thread that stays keeps things as they
            # were when the first /v1/health built the models on a pooled thread.
            threading.Event().wait()

    def warming_for(self) -> float:
        return time.monotonic() - (self.started or time.monotonic())

    def retry_after(self) -> str:
        """Retry-After for a failed warm-up: whole seconds until a request may start it again."""
        return str(max(1, math.ceil(self.retry_s - (time.monotonic() - (self.ended or 0.0)))))

    async def wait(self, timeout_s: float) -> bool:
        """Whether the warm-up has ended (ok or failed) within `timeout_s`; starts it if it has not."""
        self.start()
        with self._lock:
            if self.state != "warming":
                return True
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
        self.waiting += 1
        try:
            await asyncio.wait_for(waiter, timeout=max(0.0, timeout_s))
            return True
        except asyncio.TimeoutError:
            return False
        finally:
            self.waiting -= 1
            with self._lock:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)


def _resolve(waiter: asyncio.Future) -> None:
    if not waiter.done():  # a waiter past its timeout is cancelled
        waiter.set_result(None)
