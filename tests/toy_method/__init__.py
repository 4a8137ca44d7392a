"""A toy method, as a method author would add one: this folder plus one line in the registry.

`echo` answers with the question's linked topic entities, repeated; it shows that the CLI flags, the
service's schema and /v1/methods, the SDK's keywords and `kgqa eval --method` follow the registry."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kgqa.core.answer import Answer, AnswerItem
from kgqa.methods.registry import Method, MethodContext, Runner, option


@dataclass(frozen=True)
class EchoOptions:
    repeat: int = option(1, "Echo: how often each topic is repeated", min=1, max=3)
    shout: bool = option(False, "Echo: upper-case the answers")


def build(context: MethodContext, options: EchoOptions) -> Runner:
    def run(question: str, topics: list[str] | None = None) -> Answer:
        from kgqa.retrieval.linking import link_or_resolve

        linked = link_or_resolve(context.store, question, topics, None)
        label = (lambda s: s.upper()) if options.shout else (lambda s: s)
        items = [AnswerItem(label(t.entity.label), t.entity.iri, t.entity.label, "linked", None)
                 for t in linked.topics for _ in range(options.repeat)]
        return Answer(question, "echo", answers=items, topics=linked.topics_json())

    return run


def call_bound(options: Any, topics: int, has_llm: bool) -> int:
    return 0


METHOD = Method(name="echo", summary="repeats the question's topic entities (a toy)", options=EchoOptions,
                needs_llm="no", call_bound=call_bound, call_bound_text="0", build=build)
