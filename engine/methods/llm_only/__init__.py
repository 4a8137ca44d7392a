"""`llm-only` and `llm-only-cot`: IO and chain-of-thought prompting without the KG (LMP App. B
baselines); the answers are still mapped to KG entities so that they score like the others."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kgqa.methods.registry import Method, MethodContext, Runner


@dataclass(frozen=True)
class NoOptions:
    pass


def _factory(style: str):  # type: ignore[no-untyped-def]
    def build(context: MethodContext, options: NoOptions) -> Runner:
        from kgqa.methods.llm_only.method import answer_llm_only

        store, llm = context.store, context.llm
        assert llm is not None
        return lambda question, topics=None: answer_llm_only(store, llm, question, style)

    return build


def one_call(options: Any, topics: int, has_llm: bool) -> int:
    return 1


IO_METHOD = Method(name="llm-only", summary="IO prompting, no KG (LMP App. B)", options=NoOptions, needs_llm="yes",
                   call_bound=one_call, call_bound_text="1", build=_factory("io"))
COT_METHOD = Method(name="llm-only-cot", summary="chain-of-thought prompting, no KG (LMP App. B)", options=NoOptions,
                    needs_llm="yes", call_bound=one_call, call_bound_text="1", build=_factory("cot"))
