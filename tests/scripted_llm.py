"""A scripted LLM for control-flow tests (no model): replies come from a list or a function of the
prompt, and every call's prompt and temperature are kept for the test to inspect."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kgqa.llm.protocol import Completion, Likelihoods, LLMError, ThreadedAsync, cut_at_stop, strip_reasoning


class ScriptedLLM(ThreadedAsync):
    provider = "scripted"
    model = "script"
    few_shot = False

    def __init__(self, replies: Sequence[str] | Callable[[str], str]):
        self.replies = replies
        self.prompts: list[str] = []
        self.temperatures: list[float] = []
        self.stops: list[tuple[str, ...]] = []

    def complete(self, prompt: str, *, temperature: float = 0.0, max_tokens: int = 256,
                 stop: Sequence[str] | None = None) -> Completion:
        self.prompts.append(prompt)
        self.temperatures.append(temperature)
        self.stops.append(tuple(stop or ()))
        if callable(self.replies):
            text = self.replies(prompt)
        else:
            index = len(self.prompts) - 1
            if index >= len(self.replies):
                raise AssertionError(f"the script has {len(self.replies)} replies; call {index + 1} asked for another")
            text = self.replies[index]
        if text == "!error":
            raise LLMError("scripted provider failure")
        return Completion(strip_reasoning(cut_at_stop(text, stop)), len(prompt.split()), len(text.split()), 0.001,
                          provider=self.provider, model=self.model)


class ScriptedScorer(ScriptedLLM):
    """A scripted model that can score text: `score(prompt, continuation)` gives each continuation's
    log-likelihood, as a local transformers model's `continuation_logprobs` would."""

    scores_continuations = True

    def __init__(self, score: Callable[[str, str], float]):
        super().__init__([])
        self.score = score
        self.scored: list[tuple[str, list[str]]] = []

    def continuation_logprobs(self, prompt: str, continuations: Sequence[str]) -> Likelihoods:
        self.scored.append((prompt, list(continuations)))
        return Likelihoods([self.score(prompt, c) for c in continuations], len(prompt.split()), 0.001)
