"""The LLM protocol: one prompt in, one completion out, with its cost.

Every method sends a single prompt string (the papers' prompts are single-turn). A chat provider
sends it as one user message; a completion provider (a base model such as Gemma 3 270M) sends it as
is. Reasoning tags (`<think>…</think>`) are stripped from every completion before anyone parses it.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from kgqa.core.errors import KGQAError

_THINK = re.compile(r"<(think|thinking|reasoning)>.*?(</\1>|$)", re.DOTALL | re.IGNORECASE)


class LLMError(KGQAError):
    """A provider gave up (attempts or seconds exhausted, or a non-retryable error)."""


@dataclass(frozen=True)
class Completion:
    text: str  # reasoning tags stripped
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    retries: int = 0
    provider: str = ""
    model: str = ""
    cached: bool = False
    tokens_estimated: bool = False  # the server reported no usage (some do not when streaming): ~4 chars a token


@dataclass(frozen=True)
class Likelihoods:
    """What a model that can score text (`scores_continuations = True`) says of continuations."""

    scores: list[float]  # each continuation's summed token log-probability after the prompt
    prompt_tokens: int
    seconds: float
    cached: bool = False


@runtime_checkable
class LLM(Protocol):
    provider: str
    model: str
    few_shot: bool  # True for base models: prompts keep their worked examples

    def complete(self, prompt: str, *, temperature: float = 0.0, max_tokens: int = 256,
                 stop: Sequence[str] | None = None) -> Completion: ...

    async def acomplete(self, prompt: str, *, temperature: float = 0.0, max_tokens: int = 256,
                        stop: Sequence[str] | None = None) -> Completion: ...


class ThreadedAsync:
    """`acomplete` for providers whose natural call is blocking: run it in a worker thread."""

    async def acomplete(self, prompt: str, *, temperature: float = 0.0, max_tokens: int = 256,
                        stop: Sequence[str] | None = None) -> Completion:
        return await asyncio.to_thread(self.complete, prompt, temperature=temperature, max_tokens=max_tokens, stop=stop)  # type: ignore[attr-defined]


def strip_reasoning(text: str) -> str:
    """Drop `<think>…</think>` (and an unclosed `<think>` to the end), then surrounding blanks."""
    return _THINK.sub("", text).strip()


def cut_at_stop(text: str, stop: Sequence[str] | None) -> str:
    """Providers that cannot stop early (or stop late) are cut here, so every provider agrees."""
    if stop:
        cuts = [text.find(s) for s in stop if s and s in text]
        if cuts:
            return text[: min(cuts)]
    return text
