"""One question's conversation with an LLM: renders a prompt file, calls the model, records the call.

Every call lands in the trace with its purpose, tokens, latency and retries — failed calls too. A
session has a hard call budget (the method's stated bound): one call past it is a bug in the method
and raises instead of spending.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgqa.core.answer import LLMCall
from kgqa.core.errors import KGQAError
from kgqa.core.events import Token, emit, streaming
from kgqa.llm.protocol import LLM, LLMError
from kgqa.llm.prompt import load_prompt


class CallBudgetExceeded(KGQAError):
    pass


@dataclass
class Reply:
    text: str
    prompt: str


class LLMSession:
    def __init__(self, llm: LLM, max_calls: int):
        self.llm = llm
        self.max_calls = max_calls
        self.calls: list[LLMCall] = []

    def ask(self, purpose: str, prompt_name: str, temperature: float = 0.0, stop_also: str | None = None,
            stream: bool = False, **values: object) -> Reply:
        """Raises `LLMError` when the provider gives up (the failed call is recorded first).
        `stop_also` adds one stop string to the prompt file's (e.g. the item after the last wanted).
        `stream`: this reply is the answer; while `Engine.stream` listens and the provider can
        stream, its pieces go out as `Token` events as they arrive."""
        if len(self.calls) >= self.max_calls:
            raise CallBudgetExceeded(f"{purpose}: call {len(self.calls) + 1} is past this method's bound of {self.max_calls}")
        prompt = load_prompt(prompt_name)
        text = prompt.render(self.llm.few_shot, **values)
        record = LLMCall(purpose, self.llm.provider, self.llm.model, temperature=temperature)
        self.calls.append(record)
        try:
            stop = (*prompt.stop, stop_also) if stop_also else prompt.stop
            stream_complete = getattr(self.llm, "stream_complete", None)
            if stream and streaming() and stream_complete is not None:
                completion = stream_complete(text, lambda piece: emit(Token(piece)), temperature=temperature,
                                             max_tokens=prompt.max_tokens, stop=stop)
            else:
                completion = self.llm.complete(text, temperature=temperature, max_tokens=prompt.max_tokens, stop=stop)
        except LLMError as error:
            record.ok, record.error = False, str(error)
            raise
        record.prompt_tokens, record.completion_tokens = completion.prompt_tokens, completion.completion_tokens
        record.seconds, record.retries, record.cached = completion.seconds, completion.retries, completion.cached
        record.tokens_estimated = completion.tokens_estimated
        return Reply(completion.text, text)
