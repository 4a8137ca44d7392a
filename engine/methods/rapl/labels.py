"""Training labels for one question (RAPL §4.1, eq. 1 and 8): candidate paths in L(G) → the
rationaliser's chains → the rational paths (at most 10, the authors' cap) and the positive question
triples: those whose relation starts a rational chain or was targeted (eq. 8)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kgqa.core.subgraph import Subgraph
from kgqa.methods.kgfr.batch import relation_texts
from kgqa.methods.rapl.line_graph import LineGraph
from kgqa.methods.rapl.paths import answer_coverage, candidate_paths, chain, chains_by_rank
from kgqa.methods.rapl.rationalise import Rationaliser, chain_text

MAX_LABEL_PATHS = 10


@dataclass
class Labels:
    paths: list[tuple[int, ...]]  # rational paths as triple ids of L(G)
    positives: list[int]  # question triples to select (eq. 8)
    log: dict = field(default_factory=dict)  # candidates, chains with their scores, the choice


def path_text(sg: Subgraph, lg: LineGraph, walk: Sequence[int], texts: Sequence[str] | None = None) -> str:
    """`e1 -> r1 -> e2 -> r2 -> e3`, relations read in the walked direction."""
    texts = texts if texts is not None else relation_texts(sg)
    parts = [sg.node_labels[int(lg.head[walk[0]])]]
    for i in walk:
        parts += [texts[int(lg.relation[i])], sg.node_labels[int(lg.tail[i])]]
    return " -> ".join(parts)


def make_labels(sg: Subgraph, lg: LineGraph, question: str, topic_names: Sequence[str], answers: Sequence[int],
                rationaliser: Rationaliser) -> Labels:
    walks = candidate_paths(lg, answers)
    if not walks:
        return Labels([], [], {"candidates": 0})
    texts = relation_texts(sg)
    chains = chains_by_rank(lg, walks)
    shown = set(chains)
    example = {c: w for w in reversed(walks) if (c := chain(lg, w)) in shown}  # the first walk of each chain
    starts = lg.starts
    coverage = [round(answer_coverage(lg, c, answers), 4) for c in chains]
    choice = rationaliser.choose(question, topic_names, [chain_text([texts[t] for t in c]) for c in chains],
                                 [path_text(sg, lg, example[c], texts) for c in chains], [texts[int(lg.relation[s])] for s in starts], coverage)
    rational = {chains[i] for i in choice.chosen}
    paths = [w for w in walks if chain(lg, w) in rational][:MAX_LABEL_PATHS]
    first = {c[0] for c in rational}
    targeted = set(choice.targeted)
    positives = sorted({int(s) for s in starts if int(lg.relation[s]) in first or texts[int(lg.relation[s])] in targeted}
                       | {w[0] for w in paths})
    log = {"candidates": len(walks), "chains": [chain_text([texts[t] for t in c]) for c in chains], "scores": choice.scores, "coverage": coverage,
           "chosen": choice.chosen, "targeted": choice.targeted, "source": choice.source}
    return Labels(paths, positives, log)
