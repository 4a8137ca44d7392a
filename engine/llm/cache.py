"""An on-disk response cache around any LLM, keyed by (provider, model, prompt, parameters).

A hit returns the stored completion with `cached=True` and `seconds=0` (its tokens are kept, so the
accounting still says what the answer cost when it was made). Writes are atomic; a damaged entry is
a miss.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path

from kgqa.llm.protocol import LLM, Completion, Likelihoods, LLMError


class CachedLLM:
    def __init__(self, inner: LLM, directory: str | Path):
        self.inner = inner
        self.directory = Path(directory)
        self.provider, self.model, self.few_shot = inner.provider, inner.model, inner.few_shot
        self.scores_continuations = bool(getattr(inner, "scores_continuations", False))

    def _path(self, prompt: str, temperature: float, max_tokens: int, stop: Sequence[str] | None) -> Path:
        key = json.dumps([self.provider, self.model, prompt, round(temperature, 4), max_tokens, list(stop or [])], ensure_ascii=False)
        digest = hashlib.sha256(key.encode()).hexdigest()
        return self.directory / digest[:2] / f"{digest}.json"

    def _load(self, path: Path) -> Completion | None:
        try:
            return replace(Completion(**json.loads(path.read_text())), cached=True, seconds=0.0, retries=0)
        except (OSError, ValueError, TypeError):
            return None

    def _save(self, path: Path, completion: Completion) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(asdict(completion), ensure_ascii=False))
        os.replace(tmp, path)

    def complete(self, prompt: str, *, temperature: float = 0.0, max_tokens: int = 256,
                 stop: Sequence[str] | None = None) -> Completion:
        path = self._path(prompt, temperature, max_tokens, stop)
        hit = self._load(path)
        if hit is not None:
            return hit
        completion = self.inner.complete(prompt, temperature=temperature, max_tokens=max_tokens, stop=stop)
        self._save(path, completion)
        return completion

    async def acomplete(self, prompt: str, *, temperature: float = 0.0, max_tokens: int = 256,
                        stop: Sequence[str] | None = None) -> Completion:
        path = self._path(prompt, temperature, max_tokens, stop)
        hit = self._load(path)
        if hit is not None:
            return hit
        completion = await self.inner.acomplete(prompt, temperature=temperature, max_tokens=max_tokens, stop=stop)
        self._save(path, completion)
        return completion

    def continuation_logprobs(self, prompt: str, continuations: Sequence[str]) -> Likelihoods:
        if not self.scores_continuations:
            raise LLMError(f"{self.provider} model {self.model!r} cannot score text")
        path = self._path(prompt, -1.0, 0, list(continuations))
        try:
            return replace(Likelihoods(**json.loads(path.read_text())), cached=True, seconds=0.0)
        except (OSError, ValueError, TypeError):
            pass
        scored = self.inner.continuation_logprobs(prompt, continuations)  # type: ignore[attr-defined]
        self._save(path, scored)  # type: ignore[arg-type]
        return scored

    def close(self) -> None:
        getattr(self.inner, "close", lambda: None)()
