"""Answering with GraSP (§4.3, eq. 7–8): link → APP subgraph → focus graph → soft tokens → the
selector names entities → the answer LLM answers, or names an entity to retrieve around next.

Each round retrieves around its topics, and the evidence (the selected entities and their facts)
builds up across rounds. An ENTITY decision moves the topic to the named entity; at most `rounds`
rounds, the last told to answer. An answer LLM that can score text (the in-process Gemma) is not
asked to write its reply: the replies it may give are scored after the prompt (a 270M model writes
them poorly). Without an answer LLM the answer is the selected entities farthest from the topics (one
round). Every selector call (soft tokens counted) and every answer call is in the trace.
"""

from __future__ import annotations

import copy
import math
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from kgqa.core.answer import Answer, AnswerItem, LLMCall
from kgqa.core.control import check
from kgqa.core.events import EvidenceReady, Retrieved, emit
from kgqa.core.labels import normalise_label
from kgqa.core.store import GraphStore
from kgqa.llm.choice import can_score, choose
from kgqa.llm.protocol import LLM, LLMError
from kgqa.llm.session import LLMSession
from kgqa.methods.grasp.data import GraphInput, focus_input
from kgqa.methods.grasp.labels import farthest, named
from kgqa.methods.grasp.selector import INPUTS, Selector
from kgqa.methods.grasp.train import FORMAT, layout_of, load_checkpoint
from kgqa.methods.linking_step import link_into
from kgqa.methods.registry import checkpoint_or_bundled
from kgqa.retrieval.answer_mapping import map_answers
from kgqa.retrieval.app import retrieve
from kgqa.retrieval.entity_vectors import EntityVectors
from kgqa.retrieval.text import TextEncoder

BUNDLED_CHECKPOINT = Path(__file__).resolve().parent / "checkpoints" / "grasp-metaqa"
FACTS_PER_ROUND = 20  # facts of the selected entities shown to the answer LLM per round
FACTS_AS_TEXT = 60  # the "triples as text" input: at most this many facts (the authors' cap)
ANSWER_MARGIN = math.log(10)  # scored answers at most 10× less likely than the best one join it


@dataclass(frozen=True)
class GraspSettings:
    hops: int = 3  # APP hops, and hops of the focus graph
    per_hop: int = 12  # entities kept per hop (eq. 1)
    rounds: int = 3  # selector + answer rounds (eq. 8)
    selector_input: str = "soft"  # soft | none (the "no soft prompt" ablation) | triples (the facts as text)
    choose: str = "likelihood"  # likelihood (an LLM that scores text ranks the replies it may give) | generate


@dataclass
class Decision:
    kind: str  # "answer" | "entity"
    text: str


def parse_decision(reply: str) -> Decision:
    """The answer LLM's reply: "ANSWER: …" or "ENTITY: …" (also the authors' two-line "Decision: …"
    then "Answer: …"/"Entity: …"). No decision word: an answer (the authors' rule); an empty answer
    stays empty (the caller falls back)."""
    head = re.sub(r"^\s*(Reply|Decision):\s*", "", reply.strip(), flags=re.IGNORECASE)
    entity = re.search(r"Entity:[ \t]*(\S[^\n]*)", head, flags=re.IGNORECASE)
    answer = re.search(r"Answer:[ \t]*(\S[^\n]*)", head, flags=re.IGNORECASE)
    if head.upper().startswith("ENTITY") and entity:
        return Decision("entity", entity.group(1).strip())
    if answer:
        return Decision("answer", answer.group(1).strip())
    first = re.sub(r"^(ANSWER|ENTITY)\b:?", "", head, flags=re.IGNORECASE).strip().split("\n")[0].strip()
    return Decision("answer", "" if re.fullmatch(r"(Answer|Entity|Decision):?", first, flags=re.IGNORECASE) else first)


def checkpoint_for(given: str | Path | None) -> Path:
    """The GraSP checkpoint to run: `given` when it is one, else the bundled one."""
    return checkpoint_or_bundled(given, FORMAT, BUNDLED_CHECKPOINT)


class GraspAnswerer:
    def __init__(self, store: GraphStore, checkpoint: str | Path | None = None, encoder: TextEncoder | None = None,
                 settings: GraspSettings | None = None, llm: LLM | None = None, selector: Selector | None = None):
        """`selector`: an already loaded selector LLM to use (it must match the checkpoint's)."""
        self.store = store
        self.checkpoint = Path(checkpoint) if checkpoint else BUNDLED_CHECKPOINT
        self.model, self.selector, self.config = load_checkpoint(self.checkpoint, selector=selector)
        self.model.eval()
        self.layout = layout_of(self.config)
        self.lam = int(self.config.get("data", {}).get("lambda", 100))
        self.encoder = encoder or TextEncoder()
        self.entities = EntityVectors(store, self.encoder)
        self.settings = settings or GraspSettings(hops=int(self.config.get("data", {}).get("hops", 3)))
        self.llm = llm
        self._lock = threading.Lock()

    def with_options(self, settings: GraspSettings, llm: LLM | None) -> "GraspAnswerer":
        """This answerer (model, selector and vectors shared) with other settings or answer LLM."""
        if settings.selector_input not in INPUTS:
            raise ValueError(f"selector_input must be one of {', '.join(INPUTS)}")
        if settings.choose not in ("likelihood", "generate"):
            raise ValueError("choose must be likelihood or generate")
        other = copy.copy(self)
        other.settings, other.llm = settings, llm
        return other

    def answer(self, question: str, topics: list[str] | None = None) -> Answer:
        started = time.perf_counter()
        result = Answer(question, "grasp")
        trace = result.trace
        linking = link_into(result, self.store, topics, self.encoder)
        trace.seconds["link"] = time.perf_counter() - started
        if linking is None:
            return result
        question_vector = self.encoder.encode([question])[0]
        session = LLMSession(self.llm, max_calls=self.settings.rounds) if self.llm is not None else None
        around, rounds, lines = list(linking.iris), [], []
        candidates: dict[str, dict] = {}
        offered: dict[str, AnswerItem] = {}  # what a scored reply may answer: the entities selected in any round (Ê)
        for number in range(1, self.settings.rounds + 1):
            check("retrieval")
            mark = time.perf_counter()
            sg = retrieve(self.store, around, self.settings.hops, self.lam)
            trace.round_trips += sg.trace.round_trips
            result.graph = sg
            emit(Retrieved({"nodes": sg.num_nodes, "edges": sg.num_edges, "hops": sg.hops, "lambda": sg.lam}, sg.trace.round_trips))
            fg, graph = focus_input(sg, question_vector, self.entities, self.encoder, [self.settings.per_hop] * self.settings.hops)
            trace.seconds["retrieve"] = trace.seconds.get("retrieve", 0.0) + time.perf_counter() - mark
            chosen, soft_tokens = self.select(result, graph, number)

            def item(i: int) -> AnswerItem:
                return AnswerItem(graph.names[i], sg.nodes[int(fg.nodes[i])], graph.names[i], "subgraph")
            rounds.append({"round": number, "around": around, "entities": len(graph.names), "facts": len(graph.facts),
                           "soft_tokens": soft_tokens, "selected": [graph.names[i] for i in chosen]})
            for rank, i in enumerate(chosen):  # score: the selector's order (it names no probabilities)
                candidates.setdefault(item(i).iri, {"label": graph.names[i], "iri": item(i).iri, "score": round(1.0 / (rank + 1), 4),
                                                    "round": number, "hop": int(graph.hop[i])})
            picked = set(chosen)
            edges = graph.edge_index.T.tolist()
            shown = [k for k, (h, t) in enumerate(edges) if h in picked or t in picked][:FACTS_PER_ROUND]
            lines += [f"Selected: {'; '.join(graph.names[i] for i in chosen) or '(none)'}", *(graph.facts[k] for k in shown)]
            result.evidence.facts += [graph.facts[k] for k in shown if graph.facts[k] not in result.evidence.facts]
            farthest_out = [item(i) for i in farthest(chosen, graph.hop)]
            if session is None:
                result.answers = farthest_out
                break
            offered.update({graph.names[i]: item(i) for i in chosen if item(i).iri not in linking.iris and graph.names[i] not in offered})
            mark = time.perf_counter()
            last = number == self.settings.rounds
            values = {"question": question, "evidence": "\n".join(lines), "limit": "This is the last round: answer now.\n" if last else ""}
            before = len(session.calls)
            try:
                if self.settings.choose == "likelihood" and can_score(self.llm):
                    explore = [] if last else [graph.names[i] for i in chosen if item(i).iri not in around]
                    decision, scored, words = self.scored_decision(session, number, values, list(offered), explore)
                else:
                    reply = session.ask(f"grasp.answer.r{number}", "grasp_answer", stream=True, **values)
                    decision, scored, words = parse_decision(reply.text), None, {}
            except LLMError as error:
                trace.fallback = f"the answer LLM failed in round {number}: {error}; answering with the selected entities farthest from the topics"
                result.answers = farthest_out
                break
            finally:
                trace.llm_calls.extend(session.calls[before:])
                trace.seconds["answer"] = trace.seconds.get("answer", 0.0) + time.perf_counter() - mark
            rounds[-1]["decision"] = {"kind": decision.kind, "text": decision.text}
            if scored is not None:
                rounds[-1]["decision"].update(how="likelihood", best=[{"reply": r, "logprob": round(v, 3)} for r, v in scored[:5]],
                                              words={w: round(v, 3) for w, v in words.items()})
            if decision.kind == "entity" and not last:
                nxt = self.locate(decision.text, sg)
                if nxt is not None and nxt not in around:
                    around = [nxt]
                    continue
                rounds[-1]["decision"]["unresolved"] = True
            if scored is not None:
                answers = [(text.removeprefix("ANSWER: "), value) for text, value in scored if text.startswith("ANSWER: ")]
                result.text = f"ANSWER: {answers[0][0]}" if answers else ""
                result.answers = [offered[name] for name, value in answers if value >= answers[0][1] - ANSWER_MARGIN]
            else:
                result.text = reply.text
                result.answers = map_answers(decision.text, self.store, sg) if decision.text else []
            if not result.answers:
                trace.fallback = f"the answer LLM's reply in round {number} named no answer; answering with the selected entities farthest from the topics"
                result.answers = farthest_out
            break
        trace.subgraph = {"nodes": result.graph.num_nodes if result.graph is not None else 0,
                          "edges": result.graph.num_edges if result.graph is not None else 0, "rounds": rounds,
                          "soft_tokens": sum(r["soft_tokens"] for r in rounds)}
        result.evidence.candidates = list(candidates.values())
        result.evidence.outline = "\n".join(lines)
        emit(EvidenceReady(result.evidence))
        if not result.answers and not result.declined:
            result.declined = "the selector named no entity of the subgraph"
        trace.seconds["total"] = time.perf_counter() - started
        return result

    def select(self, result: Answer, graph: GraphInput, number: int) -> tuple[list[int], int]:
        """One selector call (eq. 7), recorded in the trace: the candidates it names (local ids) and its soft tokens."""
        mark = time.perf_counter()
        mode = self.settings.selector_input
        with self._lock, torch.inference_mode():
            soft = self.model(*graph.tensors(self.selector.device)) if mode == "soft" else None
            given = self.selector.inputs(result.question, graph.names, soft, mode, "\n".join(graph.facts[:FACTS_AS_TEXT]), self.layout)
            selection = self.selector.select(given)
        result.trace.llm_calls.append(LLMCall(f"grasp.select.r{number}", "transformers",
                                              self.selector.model_name + (" + LoRA" if self.selector.lora else "") + f" ({mode})",
                                              prompt_tokens=selection.prompt_tokens + selection.soft_tokens,
                                              completion_tokens=selection.completion_tokens, seconds=selection.seconds))
        result.trace.seconds["select"] = result.trace.seconds.get("select", 0.0) + time.perf_counter() - mark
        return named(selection.names, graph.names), selection.soft_tokens

    def scored_decision(self, session: LLMSession, number: int, values: dict[str, object], answers: list[str],
                        explore: list[str]) -> tuple[Decision, list[tuple[str, float]], dict[str, float]]:
        """Eq. 8 read by likelihood, for an answer LLM that scores text (a small local model writes
        its reply poorly but ranks given ones better), in the order the authors' reply is written
        ("Decision: …", then the answer or entity): first the bare decision words " ANSWER" and
        " ENTITY" are scored after the prompt, then, of that kind, "ANSWER: name" for every entity
        selected so far but the topics, or "ENTITY: name" for this round's unexplored selected ones.
        Ranking whole replies instead lets the decision follow whichever name is likeliest.
        One call scores all of them; every reply is ranked. Answers are Ê's (eq. 8): the entities of
        the shown facts are left out, or short names (years) win on likelihood alone."""
        replies = [f"ANSWER: {name}" for name in answers] + [f"ENTITY: {name}" for name in explore]
        if not replies:
            return Decision("answer", ""), [], {}
        words = ["ANSWER", "ENTITY"] if answers and explore else []
        choice = choose(self.llm, session, f"grasp.answer.r{number}", "grasp_answer", words + replies, "likelihood", values)
        scores = choice.scores or []
        decided = dict(zip(words, scores[:len(words)]))
        ranked = sorted(zip(replies, scores[len(words):]), key=lambda pair: -pair[1])
        kind = max(decided, key=decided.__getitem__) if decided else ranked[0][0].partition(": ")[0]
        text = next(reply for reply, _ in ranked if reply.startswith(f"{kind}: ")).removeprefix(f"{kind}: ")
        return Decision(kind.lower(), text), ranked, decided

    def locate(self, name: str, sg) -> str | None:  # type: ignore[no-untyped-def]
        """The IRI of the entity an ENTITY decision names: in the subgraph first, else by the store's labels."""
        key = normalise_label(name)
        for iri, label in zip(sg.nodes, sg.node_labels):
            if normalise_label(label) == key:
                return iri
        hits = self.store.resolve([name]).get(name) or []
        return hits[0].entity.iri if hits else None
