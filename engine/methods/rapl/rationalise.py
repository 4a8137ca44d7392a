"""The second labelling stage (RAPL §4.1, eq. 1): a rationaliser picks, among a question's candidate
relation chains, the ones that answer it — and (eq. 8) the relations its question triples should
carry. Pluggable:

- `EncoderRationaliser` (the default; runs here, no LLM): the sentence encoder's cosine between the
  question with its entities masked and each chain read as text ("directed by, then written"), plus
  the chain's answer coverage (`paths.answer_coverage`).
- `LLMRationaliser`: any LLM through the LLM protocol, with the paper's two prompts (Fig. 26–27);
  a reply it cannot read falls back to the encoder's choice and says so.
- `ShortestRationaliser`: every shortest chain (the heuristic the paper improves on; an ablation).

Every chain's score is kept in `Choice.scores` so the labels can be audited.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from kgqa.llm.protocol import LLM, LLMError
from kgqa.llm.session import LLMSession
from kgqa.methods.kgfr.confidence import relation_probe
from kgqa.retrieval.text import TextEncoder


@dataclass
class Choice:
    chosen: list[int]  # indices of the rational chains
    scores: list[float]  # one per chain
    targeted: list[str] = field(default_factory=list)  # relation texts the question triples should carry (eq. 8)
    source: str = ""  # which rationaliser decided ("llm", "encoder", "shortest", "llm→encoder: why")


class Rationaliser(Protocol):
    name: str

    def choose(self, question: str, topic_names: Sequence[str], chains: Sequence[str], examples: Sequence[str],
               start_relations: Sequence[str], coverage: Sequence[float] | None = None,
               support: Sequence[float] | None = None) -> Choice:
        """`chains[i]` reads a relation chain as text, `examples[i]` one of its paths ("Kismet -> directed
        by -> Vincente Minnelli -> …"), `coverage[i]` the F1 of what it reaches against the gold answers,
        `support[i]` its coverage on similar questions (`neighbour_support`); `start_relations` the
        relation texts of the question triples."""
        ...


def chain_text(relations: Sequence[str]) -> str:
    return ", then ".join(relations)


class ShortestRationaliser:
    name = "shortest"

    def choose(self, question: str, topic_names: Sequence[str], chains: Sequence[str], examples: Sequence[str],
               start_relations: Sequence[str], coverage: Sequence[float] | None = None,
               support: Sequence[float] | None = None) -> Choice:
        lengths = [c.count(", then ") + 1 for c in chains]
        shortest = min(lengths, default=0)
        return Choice([i for i, n in enumerate(lengths) if n == shortest], [1.0 if n == shortest else 0.0 for n in lengths], [], self.name)


class EncoderRationaliser:
    """Cosine of the masked question and the chain's text, less `length_cost` per relation beyond the
    shortest chain's (a longer chain must read closer to the question to be chosen), plus its answer
    coverage, plus its support from similar questions where a pack gives it. On 440 MetaQA dev training
    questions the chosen chain had the question's hop count for 0.97 / 1.00 / 0.95 of 1- / 2- / 3-hop
    questions; without coverage 0.87 / 1.00 / 0.94; without the length cost either 0.78 / 1.00 / 0.96;
    coverage alone 0.99 / 1.00 / 0.92; shortest chains only 1.00 / 0.99 / 0.52. Support is what
    separates chains that reach the same answers (see `neighbour_support`)."""

    name = "encoder"

    def __init__(self, encoder: TextEncoder, length_cost: float = 0.03):
        self.encoder = encoder
        self.length_cost = length_cost

    def choose(self, question: str, topic_names: Sequence[str], chains: Sequence[str], examples: Sequence[str],
               start_relations: Sequence[str], coverage: Sequence[float] | None = None,
               support: Sequence[float] | None = None) -> Choice:
        if not chains:
            return Choice([], [], [], self.name)
        probe = relation_probe(question, [{"query": n} for n in topic_names])
        vectors = self.encoder.encode([probe, *chains])
        lengths = np.asarray([c.count(", then ") + 1 for c in chains])
        scores = (vectors[1:] @ vectors[0]).astype(float) - self.length_cost * (lengths - lengths.min())
        if coverage is not None:
            scores = scores + np.asarray(coverage, dtype=float)
        if support is not None:
            scores = scores + np.asarray(support, dtype=float)
        best = float(scores.max())
        # ties (the same text twice) all count; otherwise the single best chain
        return Choice([i for i, s in enumerate(scores) if s >= best - 1e-6], [round(float(s), 4) for s in scores], [], self.name)


class LLMRationaliser:
    """Two calls a question at most: rational paths (Fig. 26), relation targeting (Fig. 27)."""

    name = "llm"
    calls = 2

    def __init__(self, llm: LLM, fallback: EncoderRationaliser, target_relations: bool = True):
        self.llm = llm
        self.fallback = fallback
        self.target_relations = target_relations
        self.last_calls: list = []

    def choose(self, question: str, topic_names: Sequence[str], chains: Sequence[str], examples: Sequence[str],
               start_relations: Sequence[str], coverage: Sequence[float] | None = None,
               support: Sequence[float] | None = None) -> Choice:
        if not chains:
            return Choice([], [], [], self.name)
        session = LLMSession(self.llm, max_calls=self.calls)
        listed = "\n".join(f"{i + 1}. {p}" for i, p in enumerate(examples))
        try:
            reply = session.ask("rapl.rational_paths", "rapl_rational_paths", question=question, paths=listed)
            chosen = sorted({int(n) - 1 for n in re.findall(r"\d+", reply.text) if 1 <= int(n) <= len(chains)})
            why = None if chosen else f"no path number in the reply {reply.text[:60]!r}"
        except LLMError as error:
            chosen, why = [], f"the LLM failed: {error}"
        targeted: list[str] = []
        if self.target_relations and start_relations:
            try:
                reply = session.ask("rapl.relation_targeting", "rapl_relation_targeting", question=question,
                                    relations=", ".join(dict.fromkeys(start_relations)))
                named = {r.strip().strip("'\"").lower() for r in reply.text.split("]")[0].split(",")}
                targeted = [r for r in dict.fromkeys(start_relations) if r.lower() in named]
            except LLMError:
                targeted = []
        self.last_calls = session.calls
        if why is not None:
            choice = self.fallback.choose(question, topic_names, chains, examples, start_relations, coverage, support)
            return Choice(choice.chosen, choice.scores, targeted, f"llm→encoder: {why}")
        return Choice(chosen, [1.0 if i in chosen else 0.0 for i in range(len(chains))], targeted, self.name)


NEIGHBOURS = 30


def neighbour_support(vectors: np.ndarray, chains: Sequence[Sequence[str]], coverage: Sequence[Sequence[float]], pool: Sequence[bool],
                      neighbours: int = NEIGHBOURS, block: int = 2048) -> list[list[float]]:
    """For each question, each of its candidate chains' mean answer coverage over the `neighbours`
    questions of `pool` whose masked text reads nearest (cosine of `vectors`, one row per question),
    itself left out; a chain that is no candidate there counts 0.

    Why: when the director of a film also wrote it, "films whose screenwriters also wrote X" is answered
    as well by the director's chain as by the writer's, and the question's own cosine with two chain
    texts is a weak judge (MiniLM preferred the director's chain here). Questions asked the same way
    about other films mostly separate the two, so their coverage decides. Only gold answers of the pool
    (training questions) are read. On the MetaQA dev pack (6,000 training questions per hop), the
    chosen chain was the one MetaQA's question type names for 0.920 / 0.912 / 0.801 of 1- / 2- / 3-hop
    questions without support and 0.984 / 0.985 / 0.942 with it (`bench/rapl.py labels`): every
    question whose candidates include that chain, but 0.1 % of the 3-hop ones. In a one-off check on
    the same labelling log, 10 or 100 neighbours instead of 30 moved these by under 0.01."""
    members = np.flatnonzero(np.asarray(pool, dtype=bool))
    k = min(neighbours, max(members.shape[0] - 1, 0))
    if k == 0:
        return [[0.0] * len(c) for c in chains]
    unit = np.asarray(vectors, dtype=np.float32)
    unit = unit / np.maximum(np.linalg.norm(unit, axis=1, keepdims=True), 1e-12)
    held = [dict(zip(chains[j], coverage[j])) for j in members.tolist()]
    support: list[list[float]] = []
    for lo in range(0, unit.shape[0], block):
        rows = np.arange(lo, min(lo + block, unit.shape[0]))
        sims = unit[rows] @ unit[members].T
        sims[members[None, :] == rows[:, None]] = -np.inf  # not its own neighbour
        nearest = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        for row, near in zip(rows.tolist(), nearest):
            support.append([float(np.mean([held[j].get(c, 0.0) for j in near.tolist()])) for c in chains[row]])
    return support


def rationaliser(name: str, encoder: TextEncoder, llm: LLM | None = None) -> Rationaliser:
    if name == "encoder":
        return EncoderRationaliser(encoder)
    if name == "shortest":
        return ShortestRationaliser()
    if name == "llm":
        if llm is None:
            raise ValueError("rationaliser 'llm' needs an LLM (--llm)")
        return LLMRationaliser(llm, EncoderRationaliser(encoder))
    raise ValueError(f"unknown rationaliser {name!r}: choose encoder, llm or shortest")


RATIONALISERS = ("encoder", "llm", "shortest")
