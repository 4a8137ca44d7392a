"""A request's deadline and cancellation, carried by a context variable so that every stage of an
answer (linking, retrieval, the scoring queue) can stop early without a parameter on every call.

    with request_scope(timeout_s=60) as control:     # the service, around one question
        engine.ask(...)                               # stages call check("retrieve")
    control.cancel()                                  # from another thread: the client left

`asyncio.to_thread` copies the context into its worker, so a scope opened in a request handler
reaches the thread that answers."""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from kgqa.core.errors import KGQAError


class RequestStopped(KGQAError):
    """The request passed its deadline or was cancelled; `reason` says which and at what stage."""


@dataclass
class RequestControl:
    deadline: float | None = None  # time.monotonic()
    cancelled: threading.Event = field(default_factory=threading.Event)
    parent: RequestControl | None = None  # its cancellation stops this request too

    def cancel(self) -> None:
        self.cancelled.set()

    def child(self) -> RequestControl:
        """A control for part of this request: same deadline, stopped when this one is cancelled,
        and cancelled alone without cancelling this one."""
        return RequestControl(self.deadline, parent=self)

    def is_cancelled(self) -> bool:
        return self.cancelled.is_set() or (self.parent is not None and self.parent.is_cancelled())

    def remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def check(self, stage: str) -> None:
        if self.is_cancelled():
            raise RequestStopped(f"cancelled before {stage}")
        left = self.remaining()
        if left is not None and left <= 0:
            raise RequestStopped(f"deadline passed before {stage}")


_CURRENT: contextvars.ContextVar[RequestControl | None] = contextvars.ContextVar("kgqa_request", default=None)


def current() -> RequestControl | None:
    return _CURRENT.get()


def check(stage: str) -> None:
    """Raise `RequestStopped` when the current request (if any) is past its deadline or cancelled."""
    control = _CURRENT.get()
    if control is not None:
        control.check(stage)


@contextmanager
def request_scope(timeout_s: float | None = None, control: RequestControl | None = None) -> Iterator[RequestControl]:
    control = control or RequestControl(None if timeout_s is None else time.monotonic() + timeout_s)
    token = _CURRENT.set(control)
    try:
        yield control
    finally:
        _CURRENT.reset(token)
