"""The `llm-only` baselines (LMP Appendix B.1): IO prompting and chain-of-thought, one call, no KG.

The answers are still mapped to KG entities so they score like every other method. The IO prompt
is also the no-KG fallback of the other methods (LMP A.7).
"""

from __future__ import annotations

import time

from kgqa.core.answer import Answer
from kgqa.retrieval.answer_mapping import map_answers
from kgqa.llm.protocol import LLM, LLMError
from kgqa.llm.session import LLMSession, Reply
from kgqa.core.store import GraphStore

STYLES = ("io", "cot")


def answer_without_kg(session: LLMSession, question: str, purpose: str, style: str = "io") -> Reply:
    return session.ask(purpose, f"llm_only_{style}", stream=True, question=question)


def answer_llm_only(store: GraphStore, llm: LLM, question: str, style: str = "io") -> Answer:
    if style not in STYLES:
        raise ValueError(f"llm-only style must be one of {STYLES}, not {style!r}")
    started = time.perf_counter()
    session = LLMSession(llm, max_calls=1)
    result = Answer(question, "llm-only" if style == "io" else "llm-only-cot")
    try:
        reply = answer_without_kg(session, question, f"llm_only.{style}", style)
        result.trace.seconds["answer"] = time.perf_counter() - started
        result.text = reply.text
        mark = time.perf_counter()
        result.answers = map_answers(reply.text, store)
        result.trace.seconds["map_answers"] = time.perf_counter() - mark
    except LLMError as error:
        result.trace.fallback = f"LLM failed: {error}"
    result.trace.llm_calls = session.calls
    result.trace.seconds["total"] = time.perf_counter() - started
    return result
