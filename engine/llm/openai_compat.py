"""Any OpenAI-compatible endpoint (OpenAI, vLLM, llama.cpp's server, Ollama, …) through the `openai` SDK.

Retries are ours, not the SDK's (its `max_retries` is 0): tenacity retries 429, 5xx, timeouts and
connection errors with exponential backoff, bounded both in attempts and in seconds; anything else
(400, 401, 404, …) fails at once. Giving up raises `LLMError` naming the endpoint, the attempts and
the last error.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import openai
from tenacity import (
    AsyncRetrying,
    RetryError,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    stop_after_delay,
    wait_exponential_jitter,
)

from kgqa.llm.protocol import Completion, LLMError, cut_at_stop, strip_reasoning

RETRYABLE = (openai.RateLimitError, openai.InternalServerError, openai.APITimeoutError, openai.APIConnectionError)


class _BrokenStream(Exception):
    """A stream failed after text was handed out: not retried."""


def _retryable(error: BaseException) -> bool:
    if isinstance(error, RETRYABLE):
        return True
    return isinstance(error, openai.APIStatusError) and error.status_code >= 500


class OpenAICompatibleLLM:
    """`mode="chat"` sends the prompt as one user message; `mode="completion"` uses /completions
    (base models: few-shot prompts, no chat template)."""

    provider = "openai-compatible"

    def __init__(self, model: str | None = None, base_url: str | None = None, api_key: str | None = None,
                 mode: str = "chat", timeout: float = 60.0, max_attempts: int = 4, max_seconds: float = 120.0,
                 few_shot: bool | None = None):
        if mode not in ("chat", "completion"):
            raise ValueError(f"mode must be 'chat' or 'completion', not {mode!r}")
        self.model = model or os.environ.get("KGQA_LLM_MODEL") or ""
        if not self.model:
            raise LLMError("no model name: pass model= or set KGQA_LLM_MODEL")
        self.base_url = base_url or os.environ.get("KGQA_LLM_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
        key = api_key or os.environ.get("KGQA_LLM_API_KEY") or os.environ.get("OPENAI_API_KEY") or "none"
        self.mode, self.timeout = mode, timeout
        self.max_attempts, self.max_seconds = max_attempts, max_seconds
        self.few_shot = (mode == "completion") if few_shot is None else few_shot
        self._client = openai.OpenAI(base_url=self.base_url, api_key=key, timeout=timeout, max_retries=0)
        self._async = openai.AsyncOpenAI(base_url=self.base_url, api_key=key, timeout=timeout, max_retries=0)

    def _retry_policy(self) -> dict[str, Any]:
        return {
            "retry": retry_if_exception(_retryable),
            "stop": stop_after_attempt(self.max_attempts) | stop_after_delay(self.max_seconds),
            "wait": wait_exponential_jitter(multiplier=0.5, max=8.0, jitter=0.5),
            "reraise": False,
        }

    def _request(self, prompt: str, temperature: float, max_tokens: int, stop: Sequence[str] | None) -> dict[str, Any]:
        request: dict[str, Any] = {"model": self.model, "temperature": temperature, "max_tokens": max_tokens}
        if stop:
            request["stop"] = list(stop)[:4]  # the API takes at most 4
        if self.mode == "chat":
            request["messages"] = [{"role": "user", "content": prompt}]
        else:
            request["prompt"] = prompt
        return request

    def _completion(self, response: Any, started: float, attempts: int, stop: Sequence[str] | None) -> Completion:
        choice = response.choices[0] if response.choices else None
        if choice is None:
            text = ""
        elif self.mode == "chat":
            text = choice.message.content or ""
        else:
            text = choice.text or ""
        usage = response.usage
        return Completion(
            text=strip_reasoning(cut_at_stop(text, stop)),
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            seconds=time.perf_counter() - started,
            retries=attempts - 1,
            provider=self.provider,
            model=self.model,
        )

    def _gave_up(self, error: RetryError | Exception, attempts: int, started: float) -> LLMError:
        last = error.last_attempt.exception() if isinstance(error, RetryError) else error
        where = self.base_url or "the OpenAI API"
        return LLMError(f"LLM {self.model!r} at {where}: gave up after {attempts} attempt(s) in "
                        f"{time.perf_counter() - started:.1f} s: {type(last).__name__}: {last}")

    def complete(self, prompt: str, *, temperature: float = 0.0, max_tokens: int = 256,
                 stop: Sequence[str] | None = None) -> Completion:
        request = self._request(prompt, temperature, max_tokens, stop)
        create = self._client.chat.completions.create if self.mode == "chat" else self._client.completions.create
        started, attempts = time.perf_counter(), 0
        try:
            for attempt in Retrying(**self._retry_policy()):
                with attempt:
                    attempts = attempt.retry_state.attempt_number
                    response = create(**request)
        except (RetryError, openai.OpenAIError) as error:
            raise self._gave_up(error, attempts, started) from None
        return self._completion(response, started, attempts, stop)

    async def acomplete(self, prompt: str, *, temperature: float = 0.0, max_tokens: int = 256,
                        stop: Sequence[str] | None = None) -> Completion:
        request = self._request(prompt, temperature, max_tokens, stop)
        create = self._async.chat.completions.create if self.mode == "chat" else self._async.completions.create
        started, attempts = time.perf_counter(), 0
        try:
            async for attempt in AsyncRetrying(**self._retry_policy()):
                with attempt:
                    attempts = attempt.retry_state.attempt_number
                    response = await create(**request)
        except (RetryError, openai.OpenAIError) as error:
            raise self._gave_up(error, attempts, started) from None
        return self._completion(response, started, attempts, stop)

    def stream_complete(self, prompt: str, on_text: Callable[[str], None], *, temperature: float = 0.0,
                        max_tokens: int = 256, stop: Sequence[str] | None = None) -> Completion:
        """Like `complete`, handing each piece of text to `on_text` as it arrives. Retries only
        until the first piece (what was handed out cannot be taken back). Pieces are raw: a stop
        string or `<think>` tag may show in them; the returned completion is cleaned as usual."""
        request = self._request(prompt, temperature, max_tokens, stop)
        request["stream"] = True
        request["stream_options"] = {"include_usage": True}
        create = self._client.chat.completions.create if self.mode == "chat" else self._client.completions.create
        started, attempts, pieces = time.perf_counter(), 0, []
        usage = None
        try:
            for attempt in Retrying(**self._retry_policy()):
                with attempt:
                    attempts = attempt.retry_state.attempt_number
                    try:
                        for chunk in create(**request):
                            usage = getattr(chunk, "usage", None) or usage
                            for choice in chunk.choices or []:
                                piece = (choice.delta.content if self.mode == "chat" else choice.text) or ""
                                if piece:
                                    pieces.append(piece)
                                    on_text(piece)
                    except openai.OpenAIError as error:
                        if pieces:
                            raise _BrokenStream(f"the stream broke after {len(pieces)} piece(s): {error}") from error
                        raise
        except (RetryError, openai.OpenAIError, _BrokenStream) as error:
            raise self._gave_up(error, attempts, started) from None
        text = "".join(pieces)
        return Completion(
            text=strip_reasoning(cut_at_stop(text, stop)),
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0) if usage else -(-len(prompt) // 4),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0) if usage else -(-len(text) // 4),
            seconds=time.perf_counter() - started,
            retries=attempts - 1,
            provider=self.provider,
            model=self.model,
            tokens_estimated=usage is None,
        )

    def close(self) -> None:
        self._client.close()
