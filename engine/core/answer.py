"""What every method returns: answers mapped back to the KG, the evidence, and what it cost.

`Answer.to_json()` is the stable JSON form (the service and `kgqa ask --json` print it):

    {"question", "method", "text",                      # text: the LLM's raw final reply ("" without one)
     "confidence": float|null, "declined": str|null,     # declined: why no answer is given (answers then empty)
     "answers": [{"text", "iri", "label", "match", "score"}],   # match: subgraph|exact|normalised|linked|none|ranked
     "topics": [{"query", "iri", "label", "match", "score"}],   # match: exact|normalised|fuzzy|embedding
     "evidence": {"candidates": [...], "facts": [str], "paths": [str],
                  "path_edges": [[{"head", "relation", "tail"}]], "outline": str|null},
     "trace": {"round_trips", "subgraph": {...}, "seconds": {stage: s}, "fallback": str|null,
               "linking_candidates": {span: [iri]}, "confidence_signals": {name: float}, "answerability": float|null,
               "llm": {"calls", "prompt_tokens", "completion_tokens", "seconds", "retries"},
               "llm_calls": [{"purpose", "provider", "model", "prompt_tokens", "completion_tokens",
                              "seconds", "retries", "temperature", "cached", "ok", "error", "tokens_estimated"}]}}
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import asdict, dataclass, field
from typing import Any


def set_f1(predicted: Set, gold: Set) -> float:
    """F1 of a predicted answer set against the gold one (0 when either is empty)."""
    hit = len(predicted & gold)
    return 0.0 if not hit else 2 * hit / (len(predicted) + len(gold))


@dataclass
class AnswerItem:
    text: str  # as the method produced it
    iri: str | None = None  # the KG entity it maps to, if any
    label: str | None = None
    match: str = "none"  # how it was mapped: subgraph | exact | normalised | linked | none | ranked | verdict (a yes or no)
    score: float | None = None


@dataclass
class LLMCall:
    purpose: str  # e.g. "lmp.transform.l2", "kgfr.reflect.s1"
    provider: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    retries: int = 0
    temperature: float = 0.0
    cached: bool = False
    ok: bool = True
    error: str | None = None
    tokens_estimated: bool = False  # no usage reported (a stream): tokens estimated at ~4 characters each


@dataclass
class Trace:
    round_trips: int = 0
    subgraph: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    llm_calls: list[LLMCall] = field(default_factory=list)
    fallback: str | None = None  # why the method fell back (e.g. to answering without the KG)
    linking_candidates: dict[str, list[str]] = field(default_factory=dict)  # every question span that named entities → their IRIs
    confidence_signals: dict[str, float] = field(default_factory=dict)  # what `Answer.confidence` was computed from
    answerability: float | None = None  # calibrated probability that the KG holds an answer (below the threshold: declined)

    def llm_totals(self) -> dict[str, float]:
        return {
            "calls": len(self.llm_calls),
            "prompt_tokens": sum(c.prompt_tokens for c in self.llm_calls),
            "completion_tokens": sum(c.completion_tokens for c in self.llm_calls),
            "seconds": sum(c.seconds for c in self.llm_calls),
            "retries": sum(c.retries for c in self.llm_calls),
        }


@dataclass
class Evidence:
    candidates: list[dict[str, Any]] = field(default_factory=list)  # KGFR eq. 10 (label, iri, score)
    facts: list[str] = field(default_factory=list)  # verbalised facts
    paths: list[str] = field(default_factory=list)
    path_edges: list[list[dict[str, str]]] = field(default_factory=list)  # the paths as {head, relation, tail} hops
    outline: str | None = None  # LMP's topological readout
    reading: list[dict[str, Any]] = field(default_factory=list)  # KGFR's path reader: each relation path read, with its score, best first
    queries: list[dict[str, Any]] = field(default_factory=list)  # text2query: each written query, its verdict (ran/refused/failed/no rows) and rows


@dataclass
class Answer:
    question: str
    method: str
    answers: list[AnswerItem] = field(default_factory=list)
    text: str = ""
    topics: list[dict[str, str]] = field(default_factory=list)
    evidence: Evidence = field(default_factory=Evidence)
    trace: Trace = field(default_factory=Trace)
    graph: Any = field(default=None, repr=False, compare=False)  # the retrieved Subgraph (not serialised)
    confidence: float | None = None  # calibrated probability that the top answer is right (None: the method gives none)
    declined: str | None = None  # why no answer is given: the KG holds none the method trusts (the evidence keeps the closest)

    def to_json(self) -> dict[str, Any]:
        graph, self.graph = self.graph, None
        try:
            data = asdict(self)
        finally:
            self.graph = graph
        del data["graph"]
        data["trace"]["llm"] = self.trace.llm_totals()
        return data
