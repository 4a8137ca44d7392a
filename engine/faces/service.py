"""The HTTP QA service (`kgqa serve`): FastAPI over one shared `Engine`, read-only by construction.

    POST /v1/ask      {"question", "topics"?, "method"?, "options"?} → the Answer JSON (engine/answer.py)
    GET  /v1/health   {"status": "warming" | "ok" | "unavailable" | "failed", ...}: 200 only when "ok"
    GET  /v1/methods  the methods, whether each can run here, their options and defaults
    GET  /metrics     Prometheus text: requests, latency histogram, LLM calls and tokens, store round trips
    GET  /docs        OpenAPI;   GET /  the playground page

The service listens at once and warms up in a background thread (`Engine.warm_up`: the method's
checkpoint, the sentence encoder, a local LLM, the store's label index). Until it is warm, /v1/health
answers 503 `"warming"`, and a question waits for the warm-up (within its request timeout; past it,
503 with Retry-After). A warm-up that fails is 503 `"failed"` with its reason, for health and
questions alike; the next request at least `warm_up_retry_s` later starts it again.

Limits (environment or `kgqa serve` options): body size, question length, per-request timeout,
concurrent questions (503 with Retry-After when full), optional API keys (`X-API-Key`). Every error
is JSON `{"error": {"status", "reason"}}`; no traceback ever reaches a client. The service holds a
store opened for reading (SPARQL SELECT only, Neo4j READ sessions) and has no code path that writes.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from kgqa.core.control import RequestControl, RequestStopped, request_scope
from kgqa.core.errors import EntityNotFound, KGQAError
from kgqa.faces.schemas import AnswerSchema, AskRequest, ErrorSchema
from kgqa.faces.sdk import Engine, WarmUp
from kgqa.llm.protocol import LLMError
from kgqa.methods import REGISTRY

log = logging.getLogger("kgqa.faces.service")
PLAYGROUND = Path(__file__).resolve().parent / "playground.html"
LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


def _problem(error: dict[str, Any]) -> str:
    """One validation error in words; an unknown method or option names the input and what is known."""
    where = [str(p) for p in error["loc"] if p != "body"]
    if where == ["method"] and error["type"] == "literal_error":
        return f"unknown method {error['input']!r}; known: {', '.join(REGISTRY.names)}"
    if where[:1] == ["options"] and len(where) == 2 and error["type"] == "extra_forbidden":
        return f"unknown option {where[1]!r}; known: {', '.join(sorted(REGISTRY.all_options()))}"
    return f"{'.'.join(where) or 'body'}: {error['msg']}"


@dataclass
class ServiceLimits:
    max_body_bytes: int = 16_384
    max_question_chars: int = 500
    max_topics: int = 10
    request_timeout_s: float = 60.0  # from arrival: the wait in the queue counts
    max_concurrent: int = 16  # questions answered at once (their scoring is batched)
    max_queue: int = 256  # questions waiting for a slot; past that, 503 + Retry-After
    queue_timeout_s: float = 30.0  # longest wait for a slot before 503 (never past the request timeout)
    api_keys: frozenset[str] = field(default_factory=frozenset)
    warm_up_retry_s: float = 30.0  # after a failed warm-up, the next request this much later tries again


class Metrics:
    """Counters and one latency histogram, rendered in the Prometheus text format."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: dict[tuple[str, int], int] = {}
        self.buckets = [0] * (len(LATENCY_BUCKETS) + 1)
        self.latency_sum = 0.0
        self.latency_count = 0
        self.llm_calls = self.prompt_tokens = self.completion_tokens = self.round_trips = self.answers = 0
        self.in_flight = 0

    def enter(self) -> None:
        with self._lock:
            self.in_flight += 1

    def leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def request(self, path: str, status: int, seconds: float) -> None:
        with self._lock:
            self.requests[path, status] = self.requests.get((path, status), 0) + 1
            if path == "/v1/ask":
                self.buckets[next((i for i, b in enumerate(LATENCY_BUCKETS) if seconds <= b), len(LATENCY_BUCKETS))] += 1
                self.latency_sum += seconds
                self.latency_count += 1

    def answer(self, data: dict[str, Any]) -> None:
        llm = data["trace"]["llm"]
        with self._lock:
            self.answers += 1
            self.llm_calls += int(llm["calls"])
            self.prompt_tokens += int(llm["prompt_tokens"])
            self.completion_tokens += int(llm["completion_tokens"])
            self.round_trips += int(data["trace"]["round_trips"])

    def render(self) -> str:
        with self._lock:
            lines = ["# HELP kgqa_requests_total HTTP requests by path and status.", "# TYPE kgqa_requests_total counter"]
            lines += [f'kgqa_requests_total{{path="{p}",status="{s}"}} {n}' for (p, s), n in sorted(self.requests.items())]
            lines += ["# HELP kgqa_ask_seconds Latency of POST /v1/ask.", "# TYPE kgqa_ask_seconds histogram"]
            total = 0
            for bound, count in zip((*LATENCY_BUCKETS, float("inf")), self.buckets):
                total += count
                le = "+Inf" if bound == float("inf") else repr(bound)
                lines.append(f'kgqa_ask_seconds_bucket{{le="{le}"}} {total}')
            lines += [f"kgqa_ask_seconds_sum {self.latency_sum:.6f}", f"kgqa_ask_seconds_count {self.latency_count}"]
            for name, value, help_text in (
                ("kgqa_answers_total", self.answers, "Questions answered."),
                ("kgqa_llm_calls_total", self.llm_calls, "LLM calls made for answers."),
                ("kgqa_llm_prompt_tokens_total", self.prompt_tokens, "Prompt tokens sent."),
                ("kgqa_llm_completion_tokens_total", self.completion_tokens, "Completion tokens received."),
                ("kgqa_store_round_trips_total", self.round_trips, "Store round trips made for answers."),
            ):
                lines += [f"# HELP {name} {help_text}", f"# TYPE {name} counter", f"{name} {value}"]
            lines += ["# HELP kgqa_in_flight Questions being answered now.", "# TYPE kgqa_in_flight gauge", f"kgqa_in_flight {self.in_flight}"]
        return "\n".join(lines) + "\n"


def limit_malloc_arenas(arenas: int = 2) -> bool:
    """glibc gives each thread that allocates its own malloc arena (up to 8 per core); the worker
    threads' tensors of every size then fragment them and RSS climbs (measured with 32 clients for
    60 s: +36% without this, +5.6% with MALLOC_ARENA_MAX=2). Same as that variable, set from inside;
    call it before the worker threads start. False where the C library has no mallopt."""
    mallopt = _libc("mallopt")
    m_arena_max = -8  # <malloc.h>
    return bool(mallopt(m_arena_max, arenas)) if mallopt else False


def _libc(function: str):  # type: ignore[no-untyped-def]
    """A C library function by name, or None where there is none (not glibc)."""
    import ctypes
    import ctypes.util

    try:
        return getattr(ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6"), function)
    except (OSError, AttributeError):
        return None


class _Trimmer:
    """Hands freed heap back to the OS every `every` answers (glibc malloc_trim): one question's big
    subgraph otherwise leaves its peak in the process for good (bench/service_load.py, 32 clients,
    60 s: RSS +28% with the arena limit alone, −1.4% with this every 64 answers; every 16 cost ~15%
    of the throughput)."""

    def __init__(self, every: int = 64):
        self._trim = _libc("malloc_trim")
        self.every, self.count = every, 0
        self._lock = threading.Lock()

    def tick(self) -> None:
        with self._lock:
            self.count += 1
            due = self._trim is not None and self.count % self.every == 0
        if due:
            self._trim(0)


class _Slots:
    """At most `size` questions at once; up to `queue` more wait (in arrival order) for a slot.
    Used from the event loop only (the worker threads release through `call_soon_threadsafe`)."""

    def __init__(self, size: int, queue: int):
        self._free = asyncio.Semaphore(size)
        self.queue, self.waiting = queue, 0

    def full(self) -> bool:
        return self.waiting >= self.queue

    async def acquire(self, timeout_s: float) -> bool:
        if not self._free.locked():
            await self._free.acquire()
            return True
        if self.full():
            return False
        self.waiting += 1
        try:
            await asyncio.wait_for(self._free.acquire(), timeout=timeout_s)
            return True
        except asyncio.TimeoutError:
            return False
        finally:
            self.waiting -= 1

    def release(self) -> None:
        self._free.release()


WARMING_RETRY_AFTER_S = 5


def _error(status: int, reason: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"status": status, "reason": reason}}, status_code=status, headers=headers)


def create_app(engine: Engine, limits: ServiceLimits | None = None, warm_up: bool = True) -> FastAPI:
    """The service over `engine`. It warms the engine up in the background from its start
    (`warm_up=False`: it is "ok" at once, and the first question loads what it needs)."""
    limits = limits or ServiceLimits()
    metrics = Metrics()
    warm = WarmUp(engine, warm_up, limits.warm_up_retry_s)
    slots = _Slots(limits.max_concurrent, limits.max_queue)
    # One thread per slot: asyncio's default pool has min(32, cores + 4) threads (6 on 2 cores), which
    # would cap the questions answered at once, and so the scorer's batches, below max_concurrent.
    workers = ThreadPoolExecutor(max_workers=limits.max_concurrent, thread_name_prefix="kgqa-ask")
    trimmer = _Trimmer()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        warm.start()  # in the background: the server listens meanwhile
        yield

    app = FastAPI(title="kgqa", version="0.1.0", description="Question answering over a knowledge graph, with evidence and cost.",
                  lifespan=lifespan)
    app.state.engine, app.state.limits, app.state.metrics, app.state.warm_up = engine, limits, metrics, warm

    @app.middleware("http")
    async def guard(request: Request, call_next):  # type: ignore[no-untyped-def]
        started = time.perf_counter()
        path = request.url.path
        warm.start()  # where the server ran no lifespan; a no-op once started (or warm)
        if limits.api_keys and path.startswith("/v1/") and request.headers.get("x-api-key") not in limits.api_keys:
            response: Response = _error(401, "missing or unknown API key (send it in the X-API-Key header)")
        elif request.method == "POST" and _too_big(request, limits.max_body_bytes):
            response = _error(413, f"request body over {limits.max_body_bytes} bytes")
        else:
            try:
                response = await call_next(request)
            except Exception:  # never a traceback to the client
                log.exception("unhandled error on %s", path)
                response = _error(500, "internal error (logged on the server)")
        metrics.request(path if path in _KNOWN_PATHS else "other", response.status_code, time.perf_counter() - started)
        return response

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, str(exc.detail))

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(422, f"invalid request: {'; '.join(_problem(e) for e in exc.errors())}")

    @app.post("/v1/ask", summary="Answer a question", response_model=AnswerSchema,
              responses={401: {"model": ErrorSchema}, 413: {"model": ErrorSchema}, 422: {"model": ErrorSchema},
                         502: {"model": ErrorSchema}, 503: {"model": ErrorSchema}, 504: {"model": ErrorSchema}})
    async def ask(body: AskRequest) -> JSONResponse:
        arrived = time.monotonic()
        deadline = arrived + limits.request_timeout_s
        question = body.question.strip()
        if not question:
            return _error(422, "question is empty")
        if len(question) > limits.max_question_chars:
            return _error(422, f"question is {len(question)} characters long; the limit is {limits.max_question_chars}")
        if body.topics is not None and (len(body.topics) > limits.max_topics or not all(t.strip() for t in body.topics)):
            return _error(422, f"topics must be at most {limits.max_topics} non-empty labels")
        method = REGISTRY.get(body.method or engine.method)
        if not method.runs_with(engine.llm is not None):
            return _error(422, f"method {method.name!r} needs an LLM and this service has none (start it with --llm)")
        options = body.given_options()
        try:
            engine.method_options(method.name, **options)
        except ValueError as error:
            return _error(422, str(error))
        if warm.state != "ok":  # a question that comes while the service warms up waits for it
            if warm.state == "warming" and warm.waiting >= limits.max_queue:
                return _error(503, f"the service is warming up and {limits.max_queue} questions are waiting for it; retry shortly",
                              {"Retry-After": str(WARMING_RETRY_AFTER_S)})
            if not await warm.wait(deadline - time.monotonic()):
                return _error(503, f"the service is still warming up (loading models, opening indexes: {warm.warming_for():.0f} s so far); "
                                   "retry shortly", {"Retry-After": str(WARMING_RETRY_AFTER_S)})
            if warm.state == "failed":
                return _error(503, f"the service could not warm up: {warm.reason}", {"Retry-After": warm.retry_after()})
        wait = max(0.0, min(limits.queue_timeout_s, deadline - time.monotonic()))
        if not await slots.acquire(wait):
            reason = (f"all {limits.max_concurrent} question slots are busy and {limits.max_queue} questions are waiting"
                      if slots.full() else f"no question slot came free within {wait:g} s")
            return _error(503, f"{reason}; retry shortly", {"Retry-After": "1"})
        metrics.enter()
        control = RequestControl(deadline=deadline)
        loop = asyncio.get_running_loop()

        def work() -> dict[str, Any]:
            try:
                with request_scope(control=control):
                    return engine.ask(question, body.topics, method.name, **options).to_json()
            finally:  # the slot is freed when the work ends, even after the client was told it timed out
                metrics.leave()
                loop.call_soon_threadsafe(slots.release)
                trimmer.tick()

        try:
            data = await asyncio.wait_for(loop.run_in_executor(workers, work), timeout=max(0.0, control.deadline - time.monotonic()))
        except (asyncio.TimeoutError, RequestStopped):
            control.cancel()  # the stages still to come (scoring included) are skipped
            return _error(504, f"no answer within the {limits.request_timeout_s:g} s request timeout")
        except asyncio.CancelledError:  # the client went away
            control.cancel()
            raise
        except (ValueError, EntityNotFound) as error:
            return _error(422, str(error))
        except LLMError as error:
            return _error(502, f"the LLM failed: {error}")
        except KGQAError as error:
            return _error(502, f"the store failed: {error}")
        if method.name == "kgfr" and engine.llm is None and not data["topics"]:
            return _error(422, "no entity of the KG was found in the question; name one in \"topics\"")
        metrics.answer(data)
        return JSONResponse(data)

    @app.get("/v1/health", summary="Warm, store reachable, method and LLM ready (200 only when status is \"ok\")")
    async def health() -> JSONResponse:
        base: dict[str, Any] = {"kg": engine.store.kg, "method": engine.method,
                                "llm": f"{engine.llm.provider}:{engine.llm.model}" if engine.llm else "none (kgfr answers without an LLM)"}
        if warm.state == "warming":
            report = {"status": "warming", "ok": False, **base, "reason": "loading models and opening indexes",
                      "warming_s": round(warm.warming_for(), 1), "attempt": warm.attempts}
            return JSONResponse(report, status_code=503, headers={"Retry-After": str(WARMING_RETRY_AFTER_S)})
        if warm.state == "failed":
            return JSONResponse({"status": "failed", "ok": False, **base, "reason": f"warm-up failed: {warm.reason}",
                                 "attempt": warm.attempts}, status_code=503, headers={"Retry-After": warm.retry_after()})

        def check() -> dict[str, Any]:
            report: dict[str, Any] = dict(base)
            try:
                engine.store.resolve(["kgqa health probe"])
                report["store"] = "reachable"
            except Exception as error:  # reported, not raised
                report["store"] = f"unreachable: {error}"
            try:
                engine.runner()  # the service's method: built by the warm-up (loads its checkpoint otherwise)
                report["checkpoint"] = "ready"
            except Exception as error:
                report["checkpoint"] = f"not ready: {error}"
            report["ok"] = report["store"] == "reachable" and report["checkpoint"] == "ready"
            return report

        report = await asyncio.to_thread(check)
        report = {"status": "ok" if report["ok"] else "unavailable", **report, "warm_up_s": warm.seconds}
        return JSONResponse(report, status_code=200 if report["ok"] else 503)

    @app.get("/v1/methods", summary="Methods, their options and LLM-call bounds (from the method registry)")
    async def methods() -> dict[str, Any]:
        has_llm = engine.llm is not None
        listed = []
        for m in REGISTRY:
            defaults = engine.method_options(m.name)
            options = {s.name: {**s.to_json(), "default": getattr(defaults, s.name)} for s in m.option_specs()}
            listed.append({"name": m.name, "summary": m.summary, "needs_llm": m.needs_llm, "available": m.runs_with(has_llm),
                           "llm_calls": m.call_bound_text if has_llm else "0" if m.runs_with(False) else m.call_bound_text,
                           "options": options})
        return {"default": engine.method, "methods": listed}

    @app.get("/metrics", response_class=PlainTextResponse, summary="Prometheus metrics")
    async def prometheus() -> PlainTextResponse:
        return PlainTextResponse(metrics.render(), media_type="text/plain; version=0.0.4")

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def playground() -> HTMLResponse:
        return HTMLResponse(PLAYGROUND.read_text(encoding="utf-8"))

    return app


_KNOWN_PATHS = {"/v1/ask", "/v1/health", "/v1/methods", "/metrics", "/", "/docs", "/openapi.json"}


def _too_big(request: Request, limit: int) -> bool:
    length = request.headers.get("content-length")
    if length is None:
        return request.headers.get("transfer-encoding", "").lower() == "chunked"  # refuse bodies of unknown size
    try:
        return int(length) > limit
    except ValueError:
        return True

