"""Answering an open-world question with GLOW (Alg. 1): link the entity v_t and the pattern (its
target relation e_t and class set L) → the entity's context RC from the store → the GNN's top-k
classes → the variant's prompt (eq. 1) → the class the LLM picks. Without an LLM the answer is the
GNN's top class. Where the store already holds the asked fact, that is the answer (closed world),
unless `use_stored` is off."""

from __future__ import annotations

import copy
import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kgqa.core.answer import Answer, AnswerItem, Evidence
from kgqa.core.control import check
from kgqa.core.events import EvidenceReady, emit
from kgqa.core.namespace import KGNamespace
from kgqa.core.store import GraphStore
from kgqa.llm.protocol import LLM, LLMError
from kgqa.llm.session import LLMSession
from kgqa.llm.choice import Choice, choose
from kgqa.methods.glow.context import Fact, context_facts, stored_answers
from kgqa.methods.glow.llm_link import CALLS as LINK_CALLS, Understood, pick_pattern, understand
from kgqa.methods.glow.patterns import Pattern
from kgqa.methods.glow.train import FORMAT
from kgqa.methods.linking_step import link_into
from kgqa.methods.registry import checkpoint_format
from kgqa.retrieval.relation_text import TOPIC_MASK
from kgqa.retrieval.text import TextEncoder

CHECKPOINTS = Path(__file__).resolve().parent / "checkpoints"
VARIANTS = ("gn", "g", "n", "l", "llm-only")
CONTENT = ("question", "entity", "triples", "gnn")  # a question's own prompt fields; the rest is the pattern's
PROMPTS = {"gn": "glow_gn", "g": "glow_g", "n": "glow_n", "l": "glow_l", "llm-only": "glow_llm_only"}


@dataclass(frozen=True)
class GLOWSettings:
    variant: str = "gn"
    top: int = 3  # GNN answers in the N and GN prompts (§5.4: k = 3 is best)
    choose: str = "likelihood"
    facts_per_relation: int = 3
    use_stored: bool = True
    link: str = "phrasings"  # how the pattern is found: phrasings (encoder) | llm (App. A.1's two prompts, where an LLM is given)
    calibrate: bool = True  # scored labels: less their content-free likelihood, plus their log prior (kgqa.llm.choice; GLOWAnswerer.prior)


def _checkpoint_kg(folder: Path) -> str | None:
    try:
        meta = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError):
        return None
    return str(meta.get("kg")) if meta.get("format") == FORMAT else None


def checkpoint_for(given: str | Path | None, kg: str) -> Path:
    """`given` when it is a GLOW checkpoint, else (another method's) the bundled one trained on this KG."""
    if given and checkpoint_format(given) == FORMAT:
        return Path(given)
    bundled = {_checkpoint_kg(p): p for p in sorted(CHECKPOINTS.glob("*")) if p.is_dir()}
    if kg in bundled:
        return bundled[kg]
    have = ", ".join(sorted(k for k in bundled if k)) or "none"
    raise ValueError(f"glow has no checkpoint for KG {kg!r} (bundled: {have}); train one with "
                     f"`kgqa train --method glow --openworld DIR` and pass --checkpoint")


class GLOWCheckpoint:
    """A trained checkpoint: the patterns with their class sets, and every entity's top classes."""

    def __init__(self, folder: Path):
        self.folder = folder
        if not (folder / "config.json").is_file():
            raise ValueError(f"{folder}: no GLOW checkpoint here ({'config.json missing' if folder.is_dir() else 'no such folder'})")
        self.meta = json.loads((folder / "config.json").read_text())
        self.kg, self.description = str(self.meta["kg"]), str(self.meta.get("description", ""))
        self.patterns = [Pattern.from_json(p, f"{folder}/config.json") for p in self.meta["patterns"]]
        self.label_texts = {p["name"]: list(p.get("label_texts") or p["labels"]) for p in self.meta["patterns"]}
        with np.load(folder / "predictions.npz") as data:
            self.entities = [str(e) for e in data["entities"]]
            self.classes = {p.name: data[f"{p.name}/classes"] for p in self.patterns}
            self.scores = {p.name: data[f"{p.name}/scores"].astype(np.float32) for p in self.patterns}
        self.class_prior = {p.name: self._shares(p) for p in self.patterns}
        self._rows: dict[str, dict[str, int]] = {}

    def rows(self, kg: str) -> dict[str, int]:
        """Store IRI → row, for a store that names this KG `kg`."""
        if kg not in self._rows:
            ns = KGNamespace(kg)
            self._rows[kg] = {ns.entity(e): i for i, e in enumerate(self.entities)}
        return self._rows[kg]

    def _shares(self, pattern: Pattern) -> list[float]:
        """Each class's share in the KG, estimated as the RGCN's top-k probabilities summed over every
        entity the checkpoint holds (a class outside an entity's top k counts 0 there)."""
        mass = np.bincount(self.classes[pattern.name].ravel().astype(np.int64), weights=self.scores[pattern.name].ravel().astype(np.float64),
                           minlength=len(pattern.labels))
        return (mass / mass.sum()).tolist() if mass.sum() > 0 else [1.0 / len(pattern.labels)] * len(pattern.labels)

    def distribution(self, pattern: str, row: int) -> list[float]:
        """The RGCN's class probabilities for one entity: its stored top classes as predicted; the rest
        of the mass spread over the other classes by their KG shares, each at most the smallest stored
        probability (they ranked below it). Not normalised where that cap binds."""
        top = [(c, s) for c, s in zip(self.classes[pattern][row].tolist(), self.scores[pattern][row].tolist()) if c >= 0]
        rest = np.asarray(self.class_prior[pattern], dtype=np.float64)
        rest[[c for c, _ in top]] = 0.0
        if rest.sum() > 0 and top:
            rest = np.minimum(rest / rest.sum() * max(0.0, 1.0 - sum(s for _, s in top)), min(s for _, s in top))
        for c, s in top:
            rest[c] = s
        return rest.tolist()

    def top(self, pattern: str, row: int, k: int) -> list[tuple[int, float]]:
        return [(int(c), float(s)) for c, s in zip(self.classes[pattern][row, :k], self.scores[pattern][row, :k])]


class GLOWAnswerer:
    def __init__(self, store: GraphStore, checkpoint: Path, encoder: TextEncoder | None = None):
        self.store = store
        self.checkpoint = GLOWCheckpoint(checkpoint)
        self.encoder = encoder or TextEncoder()
        self.settings, self.llm = GLOWSettings(), None
        self._content_free: dict[tuple, list[float]] = {}  # kgqa.llm.choice's memo, shared by with_options copies
        phrasings = [(i, p.replace("{entity}", TOPIC_MASK)) for i, pattern in enumerate(self.checkpoint.patterns) for p in pattern.phrasings]
        self._phrasing_owner = [i for i, _ in phrasings]
        self._phrasing_vectors = self.encoder.encode([text for _, text in phrasings])

    def with_options(self, settings: GLOWSettings, llm: LLM | None) -> "GLOWAnswerer":
        other = copy.copy(self)
        other.settings, other.llm = settings, llm
        return other

    def pick_pattern(self, question: str, topic_label: str) -> tuple[Pattern, float]:
        """The pattern whose phrasings read most like the question with its entity masked."""
        masked = question.replace(topic_label, TOPIC_MASK) if topic_label else question
        vector = self.encoder.encode([masked])[0]
        similarity = self._phrasing_vectors @ vector
        best = int(np.argmax(similarity))
        return self.checkpoint.patterns[self._phrasing_owner[best]], float(similarity[best])

    def answer(self, question: str, topics: list[str] | None = None) -> Answer:
        started = time.perf_counter()
        result = Answer(question, "glow")
        trace = result.trace
        by_llm = self.llm_link(result) if self.settings.link == "llm" and self.llm is not None else None
        linking = None
        if by_llm is not None and not topics:  # the extracted mention, resolved by label; else the question's own linking
            linking = link_into(result, self.store, [by_llm[0].entity], self.encoder)
            if linking is None:  # the mention names nothing in the KG
                result.declined = result.trace.fallback = None
        linking = linking or link_into(result, self.store, topics, self.encoder)
        if linking is None:
            return result
        topic = linking.topics[0]
        if by_llm is not None:
            pattern, similarity = by_llm[1], None
        else:
            pattern, similarity = self.pick_pattern(question, topic.query)
        trace.seconds["link"] = time.perf_counter() - started
        labels = self.checkpoint.label_texts[pattern.name]
        ns = KGNamespace(self.store.kg)
        check("retrieval")
        mark = time.perf_counter()
        before = self.store.round_trips
        facts, along_first = context_facts(self.store, topic.entity.iri, pattern, self.settings.facts_per_relation)
        stored = stored_answers(self.store, pattern, along_first) if self.settings.use_stored else []
        classes = {ns.entity(c) for c in pattern.labels}
        stored = [i for i in stored if i in classes]  # "which region": not the subregion
        trace.round_trips = self.store.round_trips - before
        trace.seconds["retrieve"] = time.perf_counter() - mark
        row = self.checkpoint.rows(self.store.kg).get(topic.entity.iri)
        gnn = self.checkpoint.top(pattern.name, row, max(self.settings.top, 1)) if row is not None else []
        trace.subgraph = {"pattern": pattern.name, "pattern_linked_by": "llm" if by_llm else "phrasings",
                          "pattern_similarity": None if similarity is None else round(similarity, 4), "target_relation": pattern.target.relation,
                          "hops": pattern.hops, "classes": len(labels), "context_facts": len(facts), "stored_answers": len(stored)}
        result.evidence = Evidence(
            candidates=[{"label": labels[c], "iri": ns.entity(pattern.labels[c]), "score": round(s, 4)} for c, s in gnn],
            facts=[f"{f.subject} —{f.relation}→ {f.object}" for f in facts])
        emit(EvidenceReady(result.evidence))
        if stored:
            names = self.store.labels(stored)
            result.answers = [AnswerItem(names.get(i, i), i, names.get(i, i), "subgraph") for i in stored]
            trace.fallback = "the KG holds the asked fact: answered from it, not predicted"
        elif self.llm is None:
            if not gnn:
                result.declined = f"the GNN has no prediction for {topic.entity.label!r} (not in the graph it was trained on)"
            else:
                c, s = gnn[0]
                result.answers = [AnswerItem(labels[c], ns.entity(pattern.labels[c]), labels[c], "predicted", round(s, 4))]
        else:
            self.reason(result, pattern, topic.entity.label, facts, gnn, row)
        trace.seconds["total"] = time.perf_counter() - started
        return result

    def llm_link(self, result: Answer) -> tuple[Understood, Pattern] | None:
        """App. A.1's linking by the LLM: (what it extracted, the pattern it chose), or None (the reason
        in the trace) when a reply cannot be read; its calls go into the trace either way."""
        session = LLMSession(self.llm, max_calls=LINK_CALLS)  # type: ignore[arg-type]
        try:
            understood = understand(session, result.question)
            return understood, pick_pattern(session, understood, self.checkpoint.patterns)
        except LLMError as error:
            result.trace.fallback = f"LLM linking failed ({error}); linked by the entity linker and the patterns' phrasings"
            return None
        finally:
            result.trace.llm_calls.extend(session.calls)

    def prompt_values(self, pattern: Pattern, entity: str, facts: list[Fact], gnn: list[tuple[int, float]], question: str) -> dict:
        labels = self.checkpoint.label_texts[pattern.name]
        return {"question": question, "label_name": pattern.label_name, "entity_type": pattern.entity_type, "entity": entity,
                "kg": self.checkpoint.kg, "kg_description": self.checkpoint.description or "a",
                "labels": ", ".join(labels), "triples": ", ".join(f.as_tuple_text() for f in facts),
                "gnn": ", ".join(labels[c] for c, _ in gnn[: self.settings.top])}

    def prior(self, pattern: Pattern, variant: str, row: int | None) -> list[float]:
        """What calibrated scores add back as each label's log prior: where the prompt shows the GNN's
        answers (GN, N), the GNN's distribution for this entity, so that the LLM's evidence (what the
        prompt's content adds to a label) updates the graph's prediction rather than replacing it;
        otherwise, and for an entity the GNN never saw, the label's share in the KG. The content-free
        prompt blanks the GNN's answers too, so that evidence includes what seeing them does to the
        LLM: the GNN weighs twice, a lean towards it that a 270M LLM's weak evidence calls for."""
        if variant in ("gn", "n") and row is not None:
            return self.checkpoint.distribution(pattern.name, row)
        return self.checkpoint.class_prior[pattern.name]

    def reason(self, result: Answer, pattern: Pattern, entity: str, facts: list[Fact], gnn: list[tuple[int, float]], row: int | None) -> None:
        assert self.llm is not None
        variant = self.settings.variant
        if not gnn and variant in ("gn", "n"):
            result.trace.fallback = f"the GNN has no prediction for {entity!r}: variant {'g' if variant == 'gn' else 'l'} instead of {variant}"
            variant = "g" if variant == "gn" else "l"
        labels = self.checkpoint.label_texts[pattern.name]
        session = LLMSession(self.llm, max_calls=1)
        mark = time.perf_counter()
        ns = KGNamespace(self.store.kg)
        try:
            picked: Choice = choose(self.llm, session, f"glow.{variant}", PROMPTS[variant], labels, self.settings.choose,
                                    self.prompt_values(pattern, entity, facts, gnn, result.question), CONTENT, self.settings.calibrate,
                                    self.prior(pattern, variant, row), self._content_free)
            result.text = picked.text
            if picked.index is None:
                result.declined = f"the LLM's reply {picked.text!r} names none of the {len(labels)} {pattern.label_name} classes"
            else:
                score = round(picked.scores[picked.index], 4) if picked.scores else None
                c = picked.index
                result.answers = [AnswerItem(picked.text or labels[c], ns.entity(pattern.labels[c]), labels[c], f"label:{picked.how}", score)]
        except LLMError as error:
            result.trace.fallback = f"LLM failed: {error}; answering with the GNN's top class"
            if gnn:
                c, s = gnn[0]
                result.answers = [AnswerItem(labels[c], ns.entity(pattern.labels[c]), labels[c], "predicted", round(s, 4))]
        result.trace.llm_calls.extend(session.calls)
        result.trace.seconds["answer"] = time.perf_counter() - mark

