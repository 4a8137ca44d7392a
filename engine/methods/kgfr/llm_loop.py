"""LLM–KGFR (KGFR §V, Algorithm 1): KGFR retrieves, the LLM answers and reflects.

Stage 1 (no LLM): link → APP retrieval → KGFR scores → node-level candidates (eq. 10), edge-level
facts (eq. 11) and paths to the topic entities (eq. 12), facts verbalised with the KG's relation
templates. Stage 2, for step = 1..max_steps: the LLM answers (line 8), then reflects (line 9): is the
evidence sufficient and consistent? If not, its sub-questions re-rank the subgraph with KGFR (line
12) and its key entities, found in the subgraph or the KG, get a KGFR retrieval of their own whose
top facts join the evidence (line 14). The loop stops when the answer is confirmed, when the
reflection cannot be read, when a follow-up brings no new evidence, or at max_steps. So a question
takes 2 calls when the first answer is confirmed and at most 2·max_steps.

If the LLM fails, the answer is KGFR's own ranking (the LLM-free mode) and the trace says why.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

from kgqa.core.answer import Answer, AnswerItem, Evidence, Trace
from kgqa.retrieval.answer_mapping import map_answers
from kgqa.core.events import EvidenceReady, Linked, Retrieved, emit
from kgqa.methods.kgfr.answer import Candidate, Fact, KGFRAnswerer, path_edges
from kgqa.methods.kgfr.confidence import relation_probe
from kgqa.core.labels import normalise_label
from kgqa.retrieval.linking import link_or_resolve
from kgqa.llm.protocol import LLM, LLMError
from kgqa.llm.session import LLMSession
from kgqa.llm.relation_language import RelationLanguage
from kgqa.retrieval.app import retrieve

SHOW_CANDIDATES = 10
FACTS_PER_CANDIDATE = 3
SHOW_FACTS = 30
SHOW_PATHS = 8
MAX_SUBQUESTIONS = 2
MAX_KEY_ENTITIES = 3


@dataclass
class Reflection:
    readable: bool
    sufficient: bool = True
    subquestions: list[str] = field(default_factory=list)
    key_entities: list[str] = field(default_factory=list)


def parse_reflection(text: str) -> Reflection:
    """`sufficient: yes|no`, `sub-questions: a; b`, `key entities: x; y` (the prompt ends with
    "sufficient:", so the reply may start with the verdict alone)."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return Reflection(False)
    fields: dict[str, str] = {"sufficient": lines[0]}
    for line in lines[1:]:
        key, sep, value = line.partition(":")
        if sep:
            fields[normalise_label(key).replace(" ", "")] = value.strip()
    verdict = normalise_label(fields["sufficient"].split(":")[-1]).split()
    if not verdict or verdict[0] not in ("yes", "no"):
        return Reflection(False)

    def listed(key: str, limit: int) -> list[str]:
        items = [i.strip() for i in re.split(r";|\|", fields.get(key, "")) if i.strip()]
        return [i for i in items if normalise_label(i) not in ("none", "n a", "")][:limit]

    return Reflection(True, verdict[0] == "yes", listed("subquestions", MAX_SUBQUESTIONS), listed("keyentities", MAX_KEY_ENTITIES))


class LLMKGFR:
    def __init__(self, retriever: KGFRAnswerer, llm: LLM, language: RelationLanguage | None = None, max_steps: int = 3):
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        self.retriever, self.llm, self.max_steps = retriever, llm, max_steps
        self.language = language or RelationLanguage()
        self.store = retriever.store

    def call_bound(self) -> int:
        return 2 * self.max_steps

    def answer(self, question: str, topics: list[str] | None = None) -> Answer:
        started = time.perf_counter()
        trace = Trace()
        session = LLMSession(self.llm, self.call_bound())
        mark = time.perf_counter()
        linking = link_or_resolve(self.store, question, topics, self.retriever.encoder)
        trace.seconds["link"] = time.perf_counter() - mark
        result = Answer(question, "kgfr", topics=linking.topics_json(), trace=trace)
        trace.linking_candidates = linking.candidates_json()
        emit(Linked(result.topics))
        if not linking.topics:
            trace.fallback = "no topic entity was linked"
            trace.seconds["total"] = time.perf_counter() - started
            return result
        mark = time.perf_counter()
        sg = retrieve(self.store, linking.iris, self.retriever.hops, self.retriever.lam)
        trace.seconds["retrieve"] = time.perf_counter() - mark
        trace.round_trips = sg.trace.round_trips
        trace.subgraph = {"nodes": sg.num_nodes, "edges": sg.num_edges, "hops": sg.hops, "lambda": sg.lam}
        result.graph = sg
        emit(Retrieved(dict(trace.subgraph), trace.round_trips))
        mark = time.perf_counter()
        candidates = self.retriever.score(sg, question, relation_probe(question, result.topics))
        trace.seconds["score"] = time.perf_counter() - mark
        evidence = _EvidenceSet(self.language)
        evidence.add(candidates)
        ranking = [AnswerItem(c.label, c.iri, c.label, "ranked", c.score) for c in candidates]
        result.evidence = Evidence(candidates=[{"label": c.label, "iri": c.iri, "score": c.score} for c in candidates],
                                   facts=list(evidence.facts), paths=list(evidence.paths), path_edges=path_edges(candidates))
        emit(EvidenceReady(result.evidence))
        llm_seconds = 0.0
        try:
            for step in range(1, self.max_steps + 1):
                mark = time.perf_counter()
                reply = session.ask(f"kgfr.answer.s{step}", "kgfr_answer", stream=True, question=question, **evidence.prompt_values())
                result.text = reply.text
                result.answers = map_answers(reply.text, self.store, sg)
                reflection = parse_reflection(session.ask(
                    f"kgfr.reflect.s{step}", "kgfr_reflect", question=question,
                    answers="; ".join(a.label or a.text for a in result.answers) or "(none)",
                    facts=evidence.prompt_values()["facts"]).text)
                llm_seconds += time.perf_counter() - mark
                if not reflection.readable or reflection.sufficient or step == self.max_steps:
                    break
                mark = time.perf_counter()
                added = self._follow_up(reflection, sg, linking.iris, evidence)
                trace.seconds["follow_up"] = trace.seconds.get("follow_up", 0.0) + time.perf_counter() - mark
                if not added:
                    break
        except LLMError as error:
            trace.fallback = f"LLM failed: {error}; answered with the KGFR ranking"
            result.answers = ranking[: max(1, len(self.retriever.margin_answers(candidates)))]
        trace.seconds["llm"] = llm_seconds
        result.evidence.facts, result.evidence.paths = evidence.facts, evidence.paths
        trace.llm_calls = session.calls
        trace.seconds["total"] = time.perf_counter() - started
        return result

    def _follow_up(self, reflection: Reflection, sg, topic_iris: list[str], evidence: "_EvidenceSet") -> int:  # type: ignore[no-untyped-def]
        """Algorithm 1 lines 11–14; returns how many new facts or paths joined the evidence."""
        before = evidence.size()
        for subquestion in reflection.subquestions:
            evidence.add(self.retriever.score(sg, subquestion)[:SHOW_CANDIDATES])
        if reflection.key_entities:
            by_label = {normalise_label(label): iri for iri, label in zip(sg.nodes, sg.node_labels)}
            iris = [by_label[normalise_label(e)] for e in reflection.key_entities if normalise_label(e) in by_label]
            missing = [e for e in reflection.key_entities if normalise_label(e) not in by_label]
            if missing:
                iris += [hits[0].entity.iri for hits in self.store.resolve(missing).values() if hits]
            iris = [i for i in dict.fromkeys(iris) if i not in topic_iris]
            if iris:
                focus = retrieve(self.store, iris, min(2, self.retriever.hops), self.retriever.lam)
                question = "; ".join(reflection.subquestions) or "facts about " + ", ".join(reflection.key_entities)
                evidence.add(self.retriever.score(focus, question)[:SHOW_CANDIDATES])
        return evidence.size() - before


class _EvidenceSet:
    """Candidates, verbalised facts and paths in the order they were found, without repeats."""

    def __init__(self, language: RelationLanguage):
        self.language = language
        self.candidates: list[str] = []
        self.facts: list[str] = []
        self.paths: list[str] = []

    def size(self) -> int:
        return len(self.facts) + len(self.paths) + len(self.candidates)

    def _say(self, fact: Fact) -> str:
        return self.language.verbalise(fact.head, fact.relation, fact.tail)

    def add(self, candidates: list[Candidate]) -> None:
        for c in candidates[:SHOW_CANDIDATES]:
            if c.label not in self.candidates:
                self.candidates.append(c.label)
            for fact in c.facts[:FACTS_PER_CANDIDATE]:
                text = self._say(fact)
                if text not in self.facts:
                    self.facts.append(text)
            for path in c.paths[:1]:
                text = " ; ".join(self._say(f) for f in path)  # from the topic to the candidate
                if text and text not in self.paths:
                    self.paths.append(text)

    def prompt_values(self) -> dict[str, str]:
        return {
            "candidates": "; ".join(self.candidates[: 2 * SHOW_CANDIDATES]) or "(none)",
            "facts": "\n".join(f"- {f}" for f in self.facts[:SHOW_FACTS]) or "- (none)",
            "paths": "\n".join(f"- {p}" for p in self.paths[:SHOW_PATHS]) or "- (none)",
        }
