"""Answering with a trained KGFR scorer and no LLM (KGFR §V-A): the ranking is the answer.

Evidence per question: node-level top-k candidates (eq. 10), edge-level top-n facts into each
candidate by the maximum attention over layers (eq. 11), and path-level: where the checkpoint's
path reader read a group that reaches the candidate, first one walk from a topic along the best-read
such group (the path that won the candidate its reading; its last fact leads the facts), then
directed shortest paths in the subgraph from each topic entity to the candidate (eq. 12, which
goes from the candidate: read here from the topic, as the question is). Each answer carries a confidence
(kgfr/confidence.py); below the checkpoint's calibrated threshold the answer is declined and the
candidates stay as the closest evidence. A question asked yes or no is answered "yes" where a fact links the two
entities it names by the relation it names (kgfr/polar.py), and declined otherwise ("was X nominated for an
oscar"), unless it names its best candidate (MetaQA's "is X considered good": the tag "good"). In a KG without types,
a question that asks for someone and whose scorer reads no one best (a place, a common noun) is declined (kgfr/no_one.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from functools import cached_property, partial
from pathlib import Path

import numpy as np
import torch

from kgqa.core.answer import Answer, AnswerItem, Evidence, Trace
from kgqa.core.events import EvidenceReady, Linked, Retrieved, emit
from kgqa.core.control import check
from kgqa.retrieval.linking import link_or_resolve
from kgqa.retrieval.app import retrieve
from kgqa.core.store import GraphStore, KnowsSubjectRelations
from kgqa.core.subgraph import Subgraph
from kgqa.retrieval.text import TextEncoder
from kgqa.methods.kgfr.absent_path import absent_reading
from kgqa.methods.kgfr.confidence import no_signal, relation_probe, signals
from kgqa.methods.kgfr.answer_kind import demote_wrong_kind
from kgqa.methods.kgfr.asked_kind import asks_yes_or_no, names
from kgqa.methods.kgfr.conjunction import favour_neighbours_of_every_topic
from kgqa.methods.kgfr.containment import SubjectRelationsOnce, climb_to_country, demote_non_places
from kgqa.methods.kgfr.literal_kind import missing_number
from kgqa.methods.kgfr.no_one import reads_no_one
from kgqa.methods.kgfr.evidence_paths import Walker, path_in, shortest_tree
from kgqa.methods.kgfr.organisation_kind import demote_non_organisations
from kgqa.methods.kgfr.path_reader import Reading
from kgqa.methods.kgfr.polar import link_reading, says_yes
from kgqa.methods.kgfr.scorer import KGFRScorer, Scored, edge_arrays
from kgqa.methods.kgfr.value_kind import demote_values


@dataclass
class Fact:
    head: str
    relation: str
    tail: str
    attention: float


@dataclass
class Candidate:
    iri: str
    label: str
    score: float
    facts: list[Fact] = field(default_factory=list)  # eq. 11
    paths: list[list[Fact]] = field(default_factory=list)  # from the topics: the walk read, then eq. 12's (one per topic reached)


@dataclass
class KGFRResult:
    question: str
    answers: list[Candidate]  # the candidates within `margin` of the best score
    candidates: list[Candidate]  # eq. 10: top-k
    topics: list[dict]
    linking_candidates: dict[str, list[str]]
    subgraph: dict
    seconds: dict[str, float]
    graph: Subgraph | None = field(default=None, repr=False)
    confidence: float | None = 0.0  # None: the checkpoint has no calibration
    declined: str | None = None  # why no answer is given, if none is
    signals: dict[str, float] = field(default_factory=dict)  # what the confidence was computed from
    answerability: float | None = 0.0
    reading: list[dict[str, float | str]] = field(default_factory=list)  # the path reader's groups (path, score), best first
    verdict: list[Fact] | None = None  # asked yes or no: the facts that say yes (kgfr/polar.py); None: not said

    def to_answer(self) -> Answer:
        """The common `Answer` form (method "kgfr" without an LLM: the ranking is the answer)."""
        say = lambda f: f"{f.head} —{f.relation}→ {f.tail}"  # noqa: E731
        best = self.answers[0] if self.answers else None
        paths = [self.verdict] if self.verdict is not None else best.paths if best else []
        return Answer(
            self.question, "kgfr",
            answers=[AnswerItem("yes", match="verdict")] if self.verdict is not None else [AnswerItem(c.label, c.iri, c.label, "ranked", c.score) for c in self.answers],
            topics=[dict(t) for t in self.topics],
            evidence=Evidence(
                candidates=[{"label": c.label, "iri": c.iri, "score": c.score} for c in self.candidates],
                facts=[say(f) for f in self.verdict] if self.verdict is not None else [say(f) for c in self.answers for f in c.facts[:3]],
                paths=[" ; ".join(say(f) for f in p) for p in paths],
                path_edges=path_edges(self.answers),
                reading=list(self.reading),
            ),
            trace=Trace(round_trips=self.subgraph.get("round_trips", 0), subgraph=dict(self.subgraph), seconds=dict(self.seconds),
                        fallback=None if self.topics else "no topic entity was linked", linking_candidates=self.linking_candidates,
                        confidence_signals={k: round(v, 4) for k, v in self.signals.items()}, answerability=_rounded(self.answerability)),
            graph=self.graph, confidence=_rounded(self.confidence), declined=self.declined,
        )


class KGFRAnswerer:
    """Link → retrieve → score (through the shared, batching `KGFRScorer`) → evidence, for one question."""

    def __init__(self, store: GraphStore, checkpoint: str | Path | None = None, encoder: TextEncoder | None = None,
                 k: int = 20, n: int = 20, device: str = "auto", descriptions: dict[str, str] | None = None,
                 scorer: KGFRScorer | None = None, decline_below: float | None = None, answer_kind: bool = True):
        self.store = store
        self.answer_kind = answer_kind  # candidates of the kind the question does not ask for rank last (kgfr/answer_kind.py)
        self.scorer = scorer or KGFRScorer(checkpoint, device, encoder, window_ms=0)
        self.model, self.meta, self.encoder = self.scorer.model, self.scorer.meta, self.scorer.encoder
        self.hops, self.lam, self.margin = self.scorer.hops, self.scorer.lam, self.scorer.margin
        self.k, self.n = k, n
        self.descriptions = descriptions  # relation texts u_r overriding the readable names (KGFR Fig. 2)
        self.calibration = self.scorer.calibration
        # below this answerability the answer is declined: by default the checkpoint's calibrated threshold (none: never)
        if decline_below is not None and decline_below > 0 and self.calibration is None:
            raise ValueError(f"decline_below {decline_below}: the checkpoint {self.scorer.checkpoint} has no calibration "
                             "(calibration.json for its weights) to decline by; run kgqa calibrate first")
        self.decline_below = decline_below if decline_below is not None else (self.calibration.threshold if self.calibration else 0.0)

    def answer(self, question: str, topics: list[str] | None = None) -> KGFRResult:
        seconds: dict[str, float] = {}
        started = time.perf_counter()
        check("linking")
        linking = link_or_resolve(self.store, question, topics, self.encoder)
        seconds["link"] = time.perf_counter() - started
        topic_info = linking.topics_json()
        emit(Linked(topic_info))
        linking_candidates = linking.candidates_json()
        if not linking.topics:
            return KGFRResult(question, [], [], topic_info, linking_candidates, {}, seconds,
                              declined="no entity of the KG was found in the question", signals=no_signal(topic_info))
        check("retrieval")
        mark = time.perf_counter()
        sg = retrieve(self.store, linking.iris, self.hops, self.lam)
        seconds["retrieve"] = time.perf_counter() - mark
        emit(Retrieved({"nodes": sg.num_nodes, "edges": sg.num_edges, "hops": sg.hops, "lambda": sg.lam}, sg.trace.round_trips))
        mark = time.perf_counter()
        probe = relation_probe(question, topic_info)
        scored = self.scorer.score(sg, question, self.descriptions, probe)
        seconds["score"] = time.perf_counter() - mark
        moved: dict[str, int] = {}
        ranked, read = self.read(sg, scored, probe, seconds, moved)
        reading = [{"path": text, "score": round(score, 4)} for text, score in sorted(read.groups, key=lambda r: -r[1])] if read else []
        lacking = read.lacking if read else None
        mark = time.perf_counter()
        margin = self.scorer.reader.config.absent_margin if self.scorer.reader is not None else None
        absent = absent_reading(self.scorer.reader, sg, read, probe, self.encoder, scored.probe_states) if read and margin is not None else None
        polar = asks_yes_or_no(question)
        link = link_reading(sg, question, topic_info, self.encoder, self.relation_labels) if polar else None
        seconds["read"] += time.perf_counter() - mark  # reading what the subgraph could hold is reading too
        mark = time.perf_counter()
        candidates = self.evidence(sg, ranked, read)
        seconds["evidence"] = time.perf_counter() - mark
        emit(EvidenceReady(Evidence(candidates=[{"label": c.label, "iri": c.iri, "score": c.score} for c in candidates])))
        answers = self.margin_answers(candidates)
        found = signals(scored.scores, self.margin, scored.relation_match, topic_info, sg.num_nodes, lacking)
        if margin is not None:  # not (yet) a feature of the calibration: it declines alone, below (-20: nothing absent)
            found["path_absent"] = max(-20.0, min(20.0, absent.margin)) if absent is not None else -20.0
        confidence, answerability = self.confidence(found)
        declined, verdict = None, None
        if says_yes(link):
            arrays, alpha = edge_arrays(sg), scored.alpha_max.numpy()
            verdict, answers, confidence = [edge_fact(sg, arrays, alpha, link.edge)], [], None  # type: ignore[union-attr]
        elif not candidates:
            declined = "the subgraph around the topic entities holds nothing else to answer with"
        elif self.answer_kind and self.decline_below > 0 and missing_number(sg, probe):
            declined = f"the question asks for a number and the subgraph around the topic entities holds none (closest: {candidates[0].label})"
            answers = []
        elif self.answer_kind and self.decline_below > 0 and (read_as := reads_no_one(sg, scored.scores, probe)) is not None:
            closest = f"; closest: {candidates[0].label}" if candidates[0].label != read_as else ""
            declined = f"the question asks for someone, and the KG's facts read it best as no one (“{read_as}”{closest})"
            answers = []
        elif self.decline_below > 0 and polar and not names(question, candidates[0].label):  # "is X considered good": "good"
            said = f"; the KG links them by “{link.relation}”, which the question does not read like" if link is not None else ""
            declined = f"the question asks yes or no, and no fact of the KG says yes{said} (closest: {candidates[0].label})"
            answers = []
        elif self.decline_below > 0 and absent is not None and absent.margin >= margin:  # absent: only where a margin is set
            named = " and ".join(str(t["label"]) for t in topic_info)
            declined = (f"the question reads as “{absent.path}” from {named}, which the KG holds for others but not for {named}"
                        f" (closest: {candidates[0].label})")
            answers = []
        elif answerability is not None and answerability < self.decline_below:
            declined = (f"the KG holds no answer I trust: answerability {answerability:.2f} is below the threshold {self.decline_below:.2f}"
                        f" (closest: {candidates[0].label})")
            answers = []
        seconds["total"] = time.perf_counter() - started
        stats = {"nodes": sg.num_nodes, "edges": sg.num_edges, "round_trips": sg.trace.round_trips, "hops": sg.hops, "lambda": sg.lam,
                 "scoring_batch": scored.batch_size, "moved": moved}
        return KGFRResult(question, answers, candidates, topic_info, linking_candidates, stats, seconds, sg, confidence, declined, found,
                          answerability, reading, verdict)

    @cached_property
    def relation_labels(self) -> list[str]:
        """The KG's relations' labels (one store call, on the first question asked yes or no)."""
        return sorted({r.label for r in self.store.relations()})

    def read(self, sg: Subgraph, scored: Scored, probe: str, seconds: dict[str, float] | None = None,
             moved: dict[str, int] | None = None) -> tuple[Scored, Reading | None]:
        """The scores the answer is ranked by: the model's, fused with the checkpoint's path reader where
        it has one (kgfr/path_reader.py), the neighbours of every topic of a question that names several
        moved first (kgfr/conjunction.py), then candidates of a kind the question does not ask for moved
        last (kgfr/answer_kind.py), and, in a KG without kinds, where a place is asked, values and what is
        no end of a containment fact moved last (kgfr/value_kind.py, kgfr/containment.py), and where a
        country is asked, a candidate lying in one handing its score to it (kgfr/containment.py), and where
        an organisation is asked, values and places moved last (kgfr/organisation_kind.py); and what
        the reader read (its groups, and how far its "no path reads it" beats the best group; None without
        a reader). Confidence and declining keep reading the model's own scores, which their calibration
        was fitted on, and that last number. `moved` gains how many candidates each rule moved
        ("neighbours_of_every_topic" up; "wrong_kind", "value_for_a_place", "no_place", "lies_in_the_country",
        "no_organisation" down)."""
        mark = time.perf_counter()
        fused, read = scored.scores, None
        if self.scorer.reader is not None:
            check("reading")
            fused, read = self.scorer.reader.fuse(scored.scores, sg, probe, self.encoder, states=scored.probe_states)
        fused, favoured = favour_neighbours_of_every_topic(fused, sg)
        demoted = valued = unplaced = contained = unorganised = 0
        if self.answer_kind:
            fused, demoted = demote_wrong_kind(fused, sg, probe, self.encoder, self.store)
            asked_once = SubjectRelationsOnce(self.store) if isinstance(self.store, KnowsSubjectRelations) else None
            fused, valued = demote_values(fused, sg, probe, asked_once)
            fused, unplaced = demote_non_places(fused, sg, probe, asked_once)
            fused, contained = climb_to_country(fused, sg, probe, asked_once)
            fused, unorganised = demote_non_organisations(fused, sg, probe, asked_once)
        if moved is not None:
            moved.update(neighbours_of_every_topic=favoured, wrong_kind=demoted, value_for_a_place=valued,
                         no_place=unplaced, lies_in_the_country=contained, no_organisation=unorganised)
        if seconds is not None:
            seconds["read"] = time.perf_counter() - mark
        return replace(scored, scores=fused), read

    def confidence(self, found: dict[str, float]) -> tuple[float | None, float | None]:
        """(confidence, answerability): the calibrated probabilities that the top answer is right and
        that the KG holds an answer; (None, None) without a calibration."""
        if self.calibration is None:
            return None, None
        return self.calibration.confidence(found), self.calibration.answerability(found)

    def margin_answers(self, candidates: list[Candidate]) -> list[Candidate]:
        """The answer set without an LLM: candidates within the validated margin of the best score."""
        best = candidates[0].score if candidates else 0.0
        return [c for c in candidates if c.score >= best - self.margin]

    def score(self, sg: Subgraph, question: str, probe: str | None = None) -> list[Candidate]:
        """The top-k candidates of one subgraph, with their facts and paths (eq. 10–12). `probe`: the
        question with its topics masked, for the text prior (default: the question)."""
        scored = self.scorer.score(sg, question, self.descriptions, probe)
        return self.evidence(sg, *self.read(sg, scored, probe or question))

    def evidence(self, sg: Subgraph, scored: Scored, read: Reading | None = None) -> list[Candidate]:
        scores, alpha_max = scored.scores, scored.alpha_max
        src, dst, types = edge_arrays(sg)
        top = [int(i) for i in torch.argsort(scores, descending=True)[: self.k] if torch.isfinite(scores[i])]
        alpha = alpha_max.numpy()

        fact = partial(edge_fact, sg, (src, dst, types), alpha)

        walker = Walker(sg, (src, dst, types)) if read is not None and read.sequences else None
        trees = [shortest_tree(src, dst, sg.num_nodes, int(topic)) for topic in sg.topics.tolist()] if top else []
        out = []
        for node in top:
            sequence = read.sequence_to(node) if walker is not None and read is not None else None
            walked = walker.walk(sequence, node) if walker is not None and sequence else []  # the path read to it
            facts: dict[tuple[str, str, str], Fact] = {}
            into = np.flatnonzero(dst == node)  # ascending edge ids, then by attention (a stable sort keeps ties in order)
            for e in walked[-1:] + into[np.argsort(-alpha[into], kind="stable")].tolist():
                # a fact reached from both ends is two edges of the subgraph: list it once
                f = fact(e)
                facts.setdefault((f.head, f.relation, f.tail), f)
                if len(facts) == self.n:
                    break
            shortest = [path for tree in trees if (path := path_in(tree, src, node)) and path != walked]
            paths = [[fact(e) for e in path] for path in ([walked] if walked else []) + shortest]
            out.append(Candidate(sg.nodes[node], sg.node_labels[node], float(scores[node]), list(facts.values()), paths))
        return out


def edge_fact(sg: Subgraph, edges: tuple[np.ndarray, np.ndarray, np.ndarray], alpha: np.ndarray, e: int) -> Fact:
    """Edge `e` of `edge_arrays(sg)` (`edges`) as a fact, with its attention."""
    src, dst, types = edges
    return Fact(sg.node_labels[int(src[e])], sg.relation_name(int(types[e])), sg.node_labels[int(dst[e])], float(alpha[e]))


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def path_edges(candidates: list[Candidate], limit: int = 5) -> list[list[dict[str, str]]]:
    """The first path of each of the top candidates, hop by hop, for drawing."""
    return [[{"head": f.head, "relation": f.relation, "tail": f.tail} for f in c.paths[0]] for c in candidates[:limit] if c.paths]
