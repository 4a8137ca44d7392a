"""LLM replies → answer strings → KG entities, so Hits@1 and F1 compare KG answers.

Parsing: a numbered or bulleted list gives one answer per item (the papers ask for numbered lists);
otherwise the reply's first line, split on ";" / ", " / " and " only where the whole line is not
itself a label. Mapping, cheapest first: a label in the question's subgraph (normalised), the
store's label index (exact, then normalised) in one call, then the entity linker over the string.
The raw text of each answer is kept either way.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kgqa.core.answer import AnswerItem
from kgqa.core.labels import normalise_label
from kgqa.retrieval.linking import link
from kgqa.core.store import GraphStore
from kgqa.core.subgraph import Subgraph

_ITEM = re.compile(r"^\s*(?:\d+(?:\.\d+)*[.)]|[-*•])\s+(.+?)\s*$")
_LEAD = re.compile(r"^\s*(?:(?:the\s+)?answers?(?:\s+is|\s+are)?|so the answers? (?:is|are))\s*[:\-]?\s*", re.IGNORECASE)
_SPLIT = re.compile(r"\s*;\s*|,\s+|\s+and\s+")
MAX_ANSWERS = 20
MAX_LINKED = 10  # at most this many strings go through the linker (one store call each)


def _clean(item: str) -> str:
    return item.strip().strip("\"'“”*").rstrip(".").strip()


def numbered_items(text: str, unique: bool = True) -> list[str]:
    """Items of the first numbered/bulleted list in `text` (order kept; duplicates dropped if `unique`)."""
    items: list[str] = []
    for line in text.splitlines():
        match = _ITEM.match(line)
        if match:
            items.append(_clean(match.group(1)))
        elif items and line.strip():
            break  # the list ended
    return [i for i in (dict.fromkeys(items) if unique else items) if i]


def answer_strings(text: str) -> tuple[list[str], list[list[str]]]:
    """(answers, alternatives): `alternatives[i]` are the pieces answer i splits into, tried when the
    whole string maps to nothing."""
    tail = re.split(r"so the answers? (?:is|are)\s*:?", text, flags=re.IGNORECASE)[-1]
    items = numbered_items(tail)
    if not items:
        first = next((line for line in tail.splitlines() if line.strip()), "")
        items = [_clean(_LEAD.sub("", first))] if first.strip() else []
    items = [i for i in items if i][:MAX_ANSWERS]
    return items, [[_clean(p) for p in _SPLIT.split(i) if _clean(p)] for i in items]


def map_answers(text: str, store: GraphStore, subgraph: Subgraph | None = None) -> list[AnswerItem]:
    items, pieces = answer_strings(text)
    by_label: dict[str, tuple[str, str]] = {}
    if subgraph is not None:
        for iri, label in zip(subgraph.nodes, subgraph.node_labels):
            by_label.setdefault(normalise_label(label), (iri, label))
    wanted = sorted({s for item, parts in zip(items, pieces) for s in [item, *parts]
                     if normalise_label(s) and normalise_label(s) not in by_label})
    resolved = store.resolve(wanted) if wanted else {}

    def lookup(s: str) -> AnswerItem | None:
        hit = by_label.get(normalise_label(s))
        if hit:
            return AnswerItem(s, hit[0], hit[1], "subgraph")
        hits = resolved.get(s) or []
        return AnswerItem(s, hits[0].entity.iri, hits[0].entity.label, hits[0].match) if hits else None

    out: list[AnswerItem] = []
    linked_budget = MAX_LINKED
    for item, parts in zip(items, pieces):
        found = lookup(item)
        if found:
            out.append(found)
            continue
        split = [lookup(p) for p in parts] if len(parts) > 1 else []
        if split and all(split):
            out.extend(s for s in split if s)
            continue
        if linked_budget > 0:
            linked_budget -= 1
            topics = link(store, item, fallback=False).topics
            if topics:
                out.append(AnswerItem(item, topics[0].entity.iri, topics[0].entity.label, "linked"))
                continue
        out.append(AnswerItem(item))
    return _dedupe(out)


def _dedupe(items: Sequence[AnswerItem]) -> list[AnswerItem]:
    seen: set[str] = set()
    out = []
    for item in items:
        key = item.iri or f"text:{normalise_label(item.text)}"
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out
