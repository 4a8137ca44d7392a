"""GLOW's LLM linking (Alg. 1 lines 2–4, App. A.1): one call extracts the question's main entity,
its type and the asked label; a second chooses, from the KG schema written as BGP lines, the one that
describes that label. Here the schema has a line per question pattern (a two-step pattern's relations
joined by " / ") and a label line per entity type; the chosen line names the pattern, and the entity
is then resolved by its label in the store (the paper's SPARQL over name/label fields)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from kgqa.core.labels import normalise_label
from kgqa.llm.protocol import LLMError
from kgqa.llm.session import LLMSession
from kgqa.methods.glow.patterns import Pattern
from kgqa.retrieval.relation_text import relation_description

CALLS = 2  # question understanding, then entity/relation linking
_ITEM = re.compile(r"(?:^|\n)[ \t]*([1-4])[ \t]*-[ \t]*(?:[^:\n]*?:)?[ \t]*([^\n]*)")  # "2-Main Entity: X" or "2- X"
_INLINE = re.compile(r"[ \t]+(?=[2-4][ \t]*-[^\n:]*:)")  # "1-…: drug 2-Main Entity: X" on one line, as the paper's skeleton is


@dataclass(frozen=True)
class Understood:
    entity_type: str
    entity: str  # the mention, to be resolved by label
    label: str  # what is asked ("nationality")


def schema_line(pattern: Pattern) -> str:
    relations = " / ".join(relation_description(s.relation, inverse=s.direction == "in") for s in pattern.path)
    return f"{pattern.entity_type}, {relations}, {pattern.label_name}"


def schema(patterns: Sequence[Pattern]) -> str:
    types = dict.fromkeys(p.entity_type for p in patterns)
    return "\n".join([schema_line(p) for p in patterns] + [f"{t}, label, text" for t in types])


def _items(text: str) -> dict[int, str]:
    """The numbered answers of a reply ("1-…: value" or "1- value"), first of each number."""
    found: dict[int, str] = {}
    text = _INLINE.sub("\n", text)
    for number, value in _ITEM.findall("\n" + text):
        found.setdefault(int(number), value.strip().strip("`\"'").strip())
    return found


def understand(session: LLMSession, question: str) -> Understood:
    reply = session.ask("glow.understand", "glow_understand", question=question).text
    items = _items("1-: " + reply)  # the prompt ends inside item 1
    entity_type, entity, label = items.get(1, ""), items.get(2, ""), items.get(3, "")
    if not entity or not label:
        raise LLMError(f"question understanding named no main entity and prediction label: {reply[:200]!r}")
    return Understood(entity_type, entity, label)


def pick_pattern(session: LLMSession, understood: Understood, patterns: Sequence[Pattern]) -> Pattern:
    """The pattern whose schema line the linking reply chooses for the asked label (item 3)."""
    reply = session.ask("glow.link", "glow_link", schema=schema(patterns), entity=understood.entity,
                        entity_type=understood.entity_type or "entity", label=understood.label).text
    chosen = normalise_label(_items("1- " + reply).get(3, ""))
    lines = {p.name: normalise_label(schema_line(p)) for p in patterns}
    exact = [p for p in patterns if lines[p.name] == chosen]
    if not exact:  # the line with more words around it: the one line whose words it holds, all of them
        words = set(chosen.split())
        exact = [p for p in patterns if words and set(lines[p.name].split()) <= words]
    if len(exact) != 1:
        raise LLMError(f"the linking reply's BGP for {understood.label!r} is not one schema line: {reply[:200]!r}")
    return exact[0]
