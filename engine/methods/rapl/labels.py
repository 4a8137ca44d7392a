"""Training labels for one question (RAPL §4.1, eq. 1 and 8): candidate paths in L(G) → the
rationaliser's chains → the rational paths (at most 10, the authors' cap) and the positive question
triples: those whose relation starts a rational chain or was targeted (eq. 8).

In two parts so that a pack can look across its questions between them (`rationalise.neighbour_support`):
`label_candidates` (the first stage) and `choose_labels` (the second)."""

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


@dataclass
class Candidates:
    """The first stage's output for one question: what the rationaliser is shown."""

    walks: list[tuple[int, ...]]  # candidate paths, shortest first
    chains: list[tuple[int, ...]]  # their distinct relation chains (types), at most 10
    texts: list[str]  # each chain read as text ("directed by, then written")
    examples: list[str]  # one path of each chain, as text
    coverage: list[float]  # each chain's answer F1 (`paths.answer_coverage`)
    start_relations: list[str]  # the relation texts of the question triples


def path_text(sg: Subgraph, lg: LineGraph, walk: Sequence[int], texts: Sequence[str] | None = None) -> str:
    """`e1 -> r1 -> e2 -> r2 -> e3`, relations read in the walked direction."""
    texts = texts if texts is not None else relation_texts(sg)
    parts = [sg.node_labels[int(lg.head[walk[0]])]]
    for i in walk:
        parts += [texts[int(lg.relation[i])], sg.node_labels[int(lg.tail[i])]]
    return " -> ".join(parts)


def label_candidates(sg: Subgraph, lg: LineGraph, answers: Sequence[int]) -> Candidates:
    walks = candidate_paths(lg, answers)
    if not walks:
        return Candidates([], [], [], [], [], [])
    texts = relation_texts(sg)
    chains = chains_by_rank(lg, walks)
    shown = set(chains)
    example = {c: w for w in reversed(walks) if (c := chain(lg, w)) in shown}  # the first walk of each chain
    return Candidates(walks, chains, [chain_text([texts[t] for t in c]) for c in chains], [path_text(sg, lg, example[c], texts) for c in chains],
                      [round(answer_coverage(lg, c, answers), 4) for c in chains], [texts[int(lg.relation[s])] for s in lg.starts])


def choose_labels(lg: LineGraph, found: Candidates, question: str, topic_names: Sequence[str], rationaliser: Rationaliser,
                  support: Sequence[float] | None = None) -> Labels:
    """The second stage; `support[i]` is chain i's agreement with similar questions, where known."""
    if not found.walks:
        return Labels([], [], {"candidates": 0})
    choice = rationaliser.choose(question, topic_names, found.texts, found.examples, found.start_relations, found.coverage, support)
    rational = {found.chains[i] for i in choice.chosen}
    paths = [w for w in found.walks if chain(lg, w) in rational][:MAX_LABEL_PATHS]
    first = {c[0] for c in rational}
    targeted = set(choice.targeted)
    starts = lg.starts
    positives = sorted({int(s) for s, text in zip(starts, found.start_relations) if int(lg.relation[s]) in first or text in targeted}
                       | {w[0] for w in paths})
    log = {"candidates": len(found.walks), "chains": found.texts, "scores": choice.scores, "coverage": found.coverage,
           "chosen": choice.chosen, "targeted": choice.targeted, "source": choice.source}
    if support is not None:
        log["support"] = [round(float(s), 4) for s in support]
    return Labels(paths, positives, log)


def make_labels(sg: Subgraph, lg: LineGraph, question: str, topic_names: Sequence[str], answers: Sequence[int],
                rationaliser: Rationaliser) -> Labels:
    """Both stages for a question on its own (no neighbours to agree with)."""
    return choose_labels(lg, label_candidates(sg, lg, answers), question, topic_names, rationaliser)
