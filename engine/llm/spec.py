"""`--llm SPEC` → an LLM.

    gemma3-270m | local                the bundled Gemma 3 270M base, in-process (transformers)
    local:/path/to/model(.gguf)        any local transformers model folder or GGUF file, in-process
    http://host:port/v1?model=NAME[&mode=chat|completion][&timeout=60]
                                       any OpenAI-compatible server (key: KGQA_LLM_API_KEY / OPENAI_API_KEY)
    openai:MODEL                       the OpenAI API itself

An optional on-disk response cache wraps any of them (`cache_dir`).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit, urlunsplit

from kgqa.llm.protocol import LLM, LLMError
from kgqa.llm.cache import CachedLLM


def open_llm(spec: str, cache_dir: str | Path | None = None) -> LLM:
    llm: LLM
    if spec in ("gemma3-270m", "local"):
        from kgqa.llm.local import TransformersLLM

        llm = TransformersLLM()
    elif spec.startswith("local:"):
        from kgqa.llm.local import TransformersLLM

        llm = TransformersLLM(spec[len("local:"):])
    elif spec.startswith(("http://", "https://")):
        from kgqa.llm.openai_compat import OpenAICompatibleLLM

        parts = urlsplit(spec)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        unknown = set(query) - {"model", "mode", "timeout"}
        if unknown:
            raise LLMError(f"--llm {spec!r}: unknown parameter(s) {sorted(unknown)} (model, mode, timeout)")
        base = urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
        try:
            timeout = float(query.get("timeout", 60))
        except ValueError:
            raise LLMError(f"--llm {spec!r}: timeout must be a number of seconds") from None
        llm = OpenAICompatibleLLM(model=query.get("model"), base_url=base, mode=query.get("mode", "chat"), timeout=timeout)
    elif spec.startswith("openai:"):
        from kgqa.llm.openai_compat import OpenAICompatibleLLM

        llm = OpenAICompatibleLLM(model=spec[len("openai:"):])
    else:
        raise LLMError(f"--llm {spec!r}: expected gemma3-270m, local:PATH, http(s)://…/v1?model=NAME, or openai:MODEL")
    return CachedLLM(llm, cache_dir) if cache_dir else llm
