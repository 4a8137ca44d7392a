"""Relation descriptions and verbalisation templates, generated once per KG by the LLM (KGFR §IV-A
Fig. 2 and §V-B) and cached in a JSON file, so later questions pay nothing for them.

Descriptions become the texts u_r the KGFR encoder embeds (eq. 1); templates turn retrieved facts
into sentences. A reply that is empty, too long, or (for a template) lacks `{head}`/`{tail}` is not
used: that relation keeps the default (its readable name; "{head} <readable name> {tail}") and the
file records which source each text came from. No example triples are shown to the LLM: the store
protocol has no call for them yet (the prompt says "(not given)").
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kgqa.core.answer import LLMCall
from kgqa.core.cache import cache_root
from kgqa.llm.protocol import LLM, LLMError
from kgqa.llm.session import LLMSession
from kgqa.core.store import GraphStore
from kgqa.retrieval.relation_text import readable_relation

INVERSE = "⁻¹"
_FIELD = re.compile(r"\{(\w*)\}")


@dataclass
class RelationLanguage:
    descriptions: dict[str, str] = field(default_factory=dict)  # relation label → description
    templates: dict[str, str] = field(default_factory=dict)  # relation label → "{head} … {tail}"
    sources: dict[str, str] = field(default_factory=dict)  # "label/description" → llm | default
    calls: list[LLMCall] = field(default_factory=list)  # what generating it cost (once per KG)

    def verbalise(self, head: str, relation: str, tail: str) -> str:
        """A fact as a sentence; an inverse fact (h, r⁻¹, t) is said as (t, r, h)."""
        if relation.endswith(INVERSE):
            relation, head, tail = relation[: -len(INVERSE)], tail, head
        template = self.templates.get(relation) or "{head} " + readable_relation(relation) + " {tail}"
        return template.replace("{head}", head).replace("{tail}", tail)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "RelationLanguage":
        calls = [LLMCall(**c) for c in data.get("calls", [])]
        return cls(data.get("descriptions", {}), data.get("templates", {}), data.get("sources", {}), calls)


def _usable_description(text: str) -> str | None:
    text = text.strip().splitlines()[0].strip() if text.strip() else ""
    return text if 3 <= len(text) <= 200 and "$" not in text else None


def _usable_template(text: str) -> str | None:
    text = text.strip().splitlines()[0].strip() if text.strip() else ""
    fields = _FIELD.findall(text)
    return text if sorted(fields) == ["head", "tail"] and len(text) <= 200 else None


def generate(store: GraphStore, llm: LLM, progress: Callable[[int, int], None] | None = None) -> RelationLanguage:
    """Two calls per relation (description, template). An LLM error keeps the defaults for that
    relation and is recorded; it does not stop the others."""
    relations = sorted({r.label for r in store.relations()})
    session = LLMSession(llm, max_calls=2 * len(relations))
    language = RelationLanguage()
    for i, label in enumerate(relations):
        for kind, prompt, usable, target in (
            ("description", "kgfr_relation_description", _usable_description, language.descriptions),
            ("template", "kgfr_verbalisation", _usable_template, language.templates),
        ):
            try:
                reply = session.ask(f"kgfr.relation_{kind}", prompt, relation=label, examples="(not given)")
                text = usable(reply.text)
            except LLMError:
                text = None
            if text:
                target[label] = text
            language.sources[f"{label}/{kind}"] = "llm" if text else "default"
        if progress:
            progress(i + 1, len(relations))
    language.calls = session.calls
    return language


def cache_path(store: GraphStore, llm: LLM, directory: Path | None = None) -> Path:
    base = directory or cache_root() / "relation-language"
    labels = sorted({r.label for r in store.relations()})
    digest = hashlib.sha256(json.dumps([llm.provider, llm.model, labels]).encode()).hexdigest()[:16]
    return base / f"{store.kg}-{digest}.json"


def load_or_generate(store: GraphStore, llm: LLM, path: Path | None = None,
                     progress: Callable[[int, int], None] | None = None) -> RelationLanguage:
    """The KG's relation language from `path` (default: a cache file named by KG, model and the
    KG's relation labels), generating and writing it the first time."""
    path = path or cache_path(store, llm)
    if path.exists():
        try:
            return RelationLanguage.from_json(json.loads(path.read_text(encoding="utf-8")))
        except (ValueError, TypeError) as error:
            raise LLMError(f"{path}: not a relation-language file ({error}); delete it to regenerate") from None
    language = generate(store, llm, progress)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(language.to_json(), ensure_ascii=False, indent=1), encoding="utf-8")
    os.replace(tmp, path)
    return language
