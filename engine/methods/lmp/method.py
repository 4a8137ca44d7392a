"""LMP — Language Message Passing (LMP paper §3, Appendix A.1–A.7).

Per topic entity and per layer l = 1..L: sample the top-K l-hop relations (eq. 1; by the LLM, A.3,
or by embedding similarity, the paper's cheaper option), aggregate each selected relation's
neighbours into one sentence (eq. 2, A.4, no LLM), transform the K aggregates into K summarised
facts with one LLM call (eq. 3, A.5), pool each relation's neighbours into a hyper-entity carrying
that fact (eq. 4). Then the topological readout (Algorithm 2: DFS, `1.`, `1.1.`, …) and the QA
prompt (eq. 5, A.6). With LLM sampling that is 2L + 1 calls per single-topic question.

Constraint enforcement (A.7): a sampling reply with too few valid relations or a transformation
reply with the wrong number of facts is retried, at most 5 times, temperature +0.2 each time
(sampling keeps the valid relations of earlier attempts); when retries run out, the question is
answered without the KG (the IO prompt) and the trace says why.

The neighbourhood comes from one APP retrieval (L round trips, per-(s, r) cap λ); message passing
then walks that subgraph in memory. Unnamed entities (no label, or an opaque id for one) are shown
by their named neighbours in the subgraph (paper C.3), so every store describes them the same way.
kgqa bounds what the paper leaves open: at most `max_tails` entities are listed per aggregate and
`max_options` relations offered per sampling prompt.
"""

from __future__ import annotations

import difflib
import re
import time
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from kgqa.core.answer import Answer, Evidence, Trace
from kgqa.retrieval.answer_mapping import map_answers, numbered_items
from kgqa.core.events import EvidenceReady, Linked, Retrieved, emit
from kgqa.core.labels import normalise_label
from kgqa.retrieval.linking import link_or_resolve
from kgqa.llm.protocol import LLM, LLMError
from kgqa.methods.llm_only.method import answer_without_kg
from kgqa.llm.session import LLMSession
from kgqa.llm.prompt import load_prompt
from kgqa.retrieval.app import retrieve
from kgqa.core.store import GraphStore
from kgqa.core.subgraph import Subgraph
from kgqa.retrieval.relation_text import readable_relation
from kgqa.retrieval.text import TextEncoder

from kgqa.methods.lmp import MAX_RETRIES  # A.7
TEMPERATURE_STEP = 0.2  # A.7
_OPAQUE_ID = re.compile(r"^(?:/?m[./][0-9a-z_]+|/?g[./][0-9a-z_]+|Q\d+|_:\S+|[0-9a-f\-]{20,}|\d+)$", re.IGNORECASE)


class ConstraintFailed(Exception):
    """The LLM did not meet an A.7 constraint within the retry limit."""


def relation_text(sg: Subgraph, edge_type: int) -> str:
    """How a relation is offered to the LLM: readable, with the reverse direction said in words."""
    base = readable_relation(sg.relation_labels[edge_type // 2])
    return f"{base} (reverse)" if edge_type % 2 else base


@dataclass
class HyperEntity:
    """A pooled set of entities (eq. 4) and the summarised fact that describes it."""

    members: list[int]
    fact: str
    relation: str = ""
    children: list["HyperEntity"] = field(default_factory=list)


class _Neighbourhood:
    """Both directions of every subgraph edge: node → {edge type → [neighbour]}."""

    def __init__(self, sg: Subgraph):
        self.sg = sg
        self.out: dict[int, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
        heads, tails = sg.edge_index
        for h, t, k in zip(heads.tolist(), tails.tolist(), sg.edge_type.tolist()):
            self.out[h][k].append(t)
            self.out[t][k ^ 1].append(h)

    def name(self, node: int) -> str:
        label = self.sg.node_labels[node]
        if label and label != self.sg.nodes[node] and not _OPAQUE_ID.match(label):
            return label
        named = sorted({self.sg.node_labels[n] for ns in self.out[node].values() for n in ns
                        if not _OPAQUE_ID.match(self.sg.node_labels[n] or "")})[:3]
        return f"an unnamed entity linked to {', '.join(named)}" if named else "an unnamed entity"

    def names(self, nodes: list[int], limit: int) -> str:
        shown = [self.name(n) for n in nodes[:limit]]
        more = len(nodes) - len(shown)
        return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


class LMP:
    def __init__(self, store: GraphStore, llm: LLM, k: int = 3, depth: int = 2, lam: int = 100,
                 sampler: str = "llm", encoder: TextEncoder | None = None, max_tails: int = 30,
                 max_options: int = 40):
        if sampler not in ("llm", "embedding"):
            raise ValueError(f"sampler must be 'llm' or 'embedding', not {sampler!r}")
        if k < 1 or depth < 1:
            raise ValueError(f"LMP needs width K >= 1 and depth L >= 1 (got K={k}, L={depth})")
        self.store, self.llm, self.k, self.depth, self.lam = store, llm, k, depth, lam
        self.sampler = sampler
        self.encoder = encoder if encoder is not None or sampler == "llm" else TextEncoder()
        self.max_tails, self.max_options = max_tails, max_options

    def call_bound(self, topics: int) -> int:
        """Most LLM calls one question can take (the registry's bound for these options)."""
        from kgqa.methods.lmp import LMPOptions, call_bound

        return call_bound(LMPOptions(self.k, self.depth, self.sampler, self.lam), topics, True)

    def answer(self, question: str, topics: list[str] | None = None) -> Answer:
        """`topics`: topic labels (else they are linked from the question)."""
        started = time.perf_counter()
        trace = Trace()
        linking = link_or_resolve(self.store, question, topics, self.encoder)
        trace.seconds["link"] = time.perf_counter() - started
        session = LLMSession(self.llm, self.call_bound(len(linking.topics)))
        result = Answer(question, "lmp", topics=linking.topics_json(), trace=trace)
        trace.linking_candidates = linking.candidates_json()
        emit(Linked(result.topics))
        if not linking.topics:
            return self._fallback(result, session, "no topic entity was linked", started)
        mark = time.perf_counter()
        sg = retrieve(self.store, linking.iris, self.depth, self.lam)
        trace.seconds["retrieve"] = time.perf_counter() - mark
        trace.round_trips = sg.trace.round_trips
        trace.subgraph = {"nodes": sg.num_nodes, "edges": sg.num_edges, "hops": sg.hops, "lambda": sg.lam}
        result.graph = sg
        emit(Retrieved(dict(trace.subgraph), trace.round_trips))
        graph = _Neighbourhood(sg)
        mark = time.perf_counter()
        roots = []
        try:
            for topic in sg.topics.tolist():
                roots.append(self._pass_messages(question, graph, int(topic), session))
        except ConstraintFailed as failure:
            trace.seconds["message_passing"] = time.perf_counter() - mark
            return self._fallback(result, session, str(failure), started)
        except LLMError as error:
            trace.seconds["message_passing"] = time.perf_counter() - mark
            return self._fallback(result, session, f"LLM failed during message passing: {error}", started)
        trace.seconds["message_passing"] = time.perf_counter() - mark
        outline = readout(roots, [graph.name(int(t)) for t in sg.topics.tolist()])
        result.evidence = Evidence(outline=outline)
        emit(EvidenceReady(result.evidence))
        mark = time.perf_counter()
        try:
            reply = session.ask("lmp.answer", "lmp_answer", stream=True, outline=outline or "(none)", question=question)
        except LLMError as error:
            trace.llm_calls = session.calls
            trace.fallback = f"LLM failed on the final answer: {error}"
            trace.seconds["answer"] = time.perf_counter() - mark
            trace.seconds["total"] = time.perf_counter() - started
            return result
        trace.seconds["answer"] = time.perf_counter() - mark
        result.text = reply.text
        mark = time.perf_counter()
        result.answers = map_answers(reply.text, self.store, sg)
        trace.seconds["map_answers"] = time.perf_counter() - mark
        trace.llm_calls = session.calls
        trace.seconds["total"] = time.perf_counter() - started
        return result

    def _fallback(self, result: Answer, session: LLMSession, reason: str, started: float) -> Answer:
        """A.7: answer without knowledge augmentation, saying why."""
        mark = time.perf_counter()
        result.trace.fallback = reason
        try:
            reply = answer_without_kg(session, result.question, "lmp.fallback")
            result.text = reply.text
            result.answers = map_answers(reply.text, self.store)
        except LLMError as error:
            result.trace.fallback = f"{reason}; the no-KG answer failed too: {error}"
        result.trace.llm_calls = session.calls
        result.trace.seconds["fallback"] = time.perf_counter() - mark
        result.trace.seconds["total"] = time.perf_counter() - started
        return result

    def _pass_messages(self, question: str, graph: _Neighbourhood, topic: int, session: LLMSession) -> HyperEntity:
        root = HyperEntity([topic], fact="")
        topic_name = graph.name(topic)
        visited = {topic}
        layer = [root]
        for l in range(1, self.depth + 1):
            options = self._options(graph, layer, visited)
            if not options:
                break  # nothing further out: the graph ends before depth L
            chosen = self._sample(question, topic_name, graph, layer, options, l, session)
            aggregates, pools = [], []
            for parent, edge_type in chosen:
                tails = sorted({n for m in parent.members for n in graph.out[m].get(edge_type, []) if n not in visited})
                head = graph.names(parent.members, 5)
                aggregates.append(load_prompt("lmp_aggregate").render(False, head=head, relation=relation_text(graph.sg, edge_type),
                                                                      tails=graph.names(tails, self.max_tails)).strip())
                pools.append((parent, edge_type, tails))
            facts = self._transform(question, topic_name, aggregates, layer if l > 1 else [], l, session)
            next_layer = []
            for (parent, edge_type, tails), fact in zip(pools, facts):
                node = HyperEntity(tails, fact, relation_text(graph.sg, edge_type))
                parent.children.append(node)
                next_layer.append(node)
            for _, _, tails in pools:
                visited.update(tails)
            layer = next_layer
        return root

    def _options(self, graph: _Neighbourhood, layer: list[HyperEntity], visited: set[int]) -> list[tuple[HyperEntity, int]]:
        """(hyper-entity, relation type) pairs that lead to entities not reached yet: R^(l)."""
        options = []
        for parent in layer:
            types = sorted({k for m in parent.members for k, ns in graph.out[m].items() if any(n not in visited for n in ns)})
            options += [(parent, k) for k in types]
        return options[: self.max_options]

    def _sample(self, question: str, topic: str, graph: _Neighbourhood, layer: list[HyperEntity],
                options: list[tuple[HyperEntity, int]], l: int, session: LLMSession) -> list[tuple[HyperEntity, int]]:
        want = min(self.k, len(options))
        if self.sampler == "embedding":
            texts = [relation_text(graph.sg, k) for _, k in options]
            assert self.encoder is not None
            vectors = self.encoder.encode([question, *texts])
            order = np.argsort(-(vectors[1:] @ vectors[0]), kind="stable")
            return [options[i] for i in order[:want]]
        if l == 1:
            names = list(dict.fromkeys(relation_text(graph.sg, k) for _, k in options))
            values = {"relations": "\n".join(f"{i}. {n}" for i, n in enumerate(names, 1))}
        else:
            lines = []
            for i, parent in enumerate(layer, 1):
                offered = [relation_text(graph.sg, k) for p, k in options if p is parent]
                if offered:
                    lines.append(f"{i}. fact: {parent.fact} options: {', '.join(offered)}")
            values = {"facts": "\n".join(lines)}
        by_name: dict[str, list[tuple[HyperEntity, int]]] = defaultdict(list)
        for option in options:
            by_name[normalise_label(relation_text(graph.sg, option[1]))].append(option)
        prompt = "lmp_sample_l1" if l == 1 else "lmp_sample_deeper"
        chosen: list[tuple[HyperEntity, int]] = []
        for attempt in range(MAX_RETRIES + 1):
            reply = session.ask(f"lmp.sample.l{l}" + (f".retry{attempt}" if attempt else ""), prompt,
                                temperature=attempt * TEMPERATURE_STEP, stop_also=f"\n{want + 1}.",
                                question=question, topic=topic, k=want, **values)
            for item in numbered_items(reply.text):
                for option in by_name.get(_closest(item.split(" options:")[0], by_name), []):
                    if option not in chosen and len(chosen) < want:
                        chosen.append(option)
            if len(chosen) >= want:
                return chosen
        raise ConstraintFailed(f"sampling at layer {l}: {len(chosen)} of {want} relations after {MAX_RETRIES} retries")

    def _transform(self, question: str, topic: str, aggregates: list[str], previous: list[HyperEntity], l: int,
                   session: LLMSession) -> list[str]:
        facts = "\n".join(f"{i}. {a}" for i, a in enumerate(aggregates, 1))
        prompt = "lmp_transform_l1" if l == 1 else "lmp_transform_deeper"
        background = " ".join(p.fact for p in previous if p.fact)
        for attempt in range(MAX_RETRIES + 1):
            reply = session.ask(f"lmp.transform.l{l}" + (f".retry{attempt}" if attempt else ""), prompt,
                                temperature=attempt * TEMPERATURE_STEP, stop_also=f"\n{len(aggregates) + 1}.",
                                question=question, topic=topic,
                                k=len(aggregates), facts=facts, background=background)
            summaries = _numbered_exactly(reply.text, len(aggregates))
            if summaries is not None:
                return summaries
        raise ConstraintFailed(f"transformation at layer {l}: no reply with exactly {len(aggregates)} facts after {MAX_RETRIES} retries")


def _closest(name: str, options: dict[str, list]) -> str:
    """The option a reply meant: its normalised name, or failing that the one close spelling
    ("released year" → "release year"); an unclear reply matches nothing."""
    key = normalise_label(name)
    if key in options:
        return key
    close = difflib.get_close_matches(key, list(options), n=2, cutoff=0.85)
    return close[0] if len(close) == 1 else ""


def _numbered_exactly(text: str, count: int) -> list[str] | None:
    items = numbered_items(text, unique=False)
    return items if len(items) == count else None


def readout(roots: list[HyperEntity], topic_names: list[str]) -> str:
    """Topological readout (Algorithm 2): depth-first from each topic, numbered `1.`, `1.1.`, …"""
    lines: list[str] = []

    def walk(node: HyperEntity, prefix: str) -> None:
        for i, child in enumerate(node.children, 1):
            number = f"{prefix}{i}."
            lines.append(f"{number} {child.fact}")
            walk(child, number)

    for root, name in zip(roots, topic_names):
        if len(roots) > 1:
            lines.append(f"about {name}:")
        walk(root, "")
    return "\n".join(lines)
