"""Typed progress events of one question, in the order a method produces them:
`Linked` → `Retrieved` → `EvidenceReady` → `Token`… (only when the LLM streams) → `Final`.

Methods call `emit(event)` at each stage; it is a no-op unless `Engine.stream` has installed a sink
for the current context (a `ContextVar`, so concurrent questions never see each other's events).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from kgqa.core.answer import Answer, Evidence


@dataclass(frozen=True)
class Linked:
    topics: list[dict[str, str]]
    kind: str = field(default="linked", init=False)


@dataclass(frozen=True)
class Retrieved:
    subgraph: dict[str, Any]  # nodes, edges, hops, lambda
    round_trips: int
    kind: str = field(default="retrieved", init=False)


@dataclass(frozen=True)
class EvidenceReady:
    evidence: Evidence
    kind: str = field(default="evidence", init=False)


@dataclass(frozen=True)
class Token:
    text: str
    kind: str = field(default="token", init=False)


@dataclass(frozen=True)
class Final:
    answer: Answer
    kind: str = field(default="final", init=False)


Event = Linked | Retrieved | EvidenceReady | Token | Final
_sink: ContextVar[Callable[[Event], None] | None] = ContextVar("kgqa_event_sink", default=None)


def emit(event: Event) -> None:
    sink = _sink.get()
    if sink is not None:
        sink(event)


def streaming() -> bool:
    return _sink.get() is not None


@contextmanager
def events_to(sink: Callable[[Event], None]) -> Iterator[None]:
    token = _sink.set(sink)
    try:
        yield
    finally:
        _sink.reset(token)
