"""The first step every retrieving method shares: link the question's entities, record the linking on
the Answer (topics, candidates, the `Linked` event) and decline when nothing links."""

from __future__ import annotations

from kgqa.core.answer import Answer
from kgqa.core.control import check
from kgqa.core.events import Linked, emit
from kgqa.core.store import GraphStore
from kgqa.retrieval.linking import Linking, link_or_resolve


def linked_into(result: Answer, store: GraphStore, topics: list[str] | None, encoder) -> Linking:  # type: ignore[no-untyped-def]
    """The linking, recorded on `result`, whatever it found (text2query asks its LLM even so)."""
    check("linking")
    linking = link_or_resolve(store, result.question, topics, encoder)
    result.topics = linking.topics_json()
    result.trace.linking_candidates = linking.candidates_json()
    emit(Linked(result.topics))
    return linking


def link_into(result: Answer, store: GraphStore, topics: list[str] | None, encoder) -> Linking | None:  # type: ignore[no-untyped-def]
    """The linking, or None with `result` declined when the question names no entity of the KG."""
    linking = linked_into(result, store, topics, encoder)
    if not linking.topics:
        result.declined = "no entity of the KG was found in the question"
        result.trace.fallback = "no topic entity was linked"
        return None
    return linking
