"""Questions that read as a path the KG holds for others but not from their topic (issue 46, knowing
what the KG lacks): "which films did the director of Kismet also write" — directors write films in
the MetaQA KB, Kismet's director wrote none — was answered with his films: the path reader is shown
only the paths the subgraph holds from the topic, and "directed by → directed" was the closest.

Beside those groups, the reader also reads the sequences the topic's subgraph could hold and does
not: a start of one of the best-read groups (nothing, its first step, …) followed by a step (a relation,
in a direction) that the nodes reached by the start's last step take elsewhere in the subgraph but the
start's own ends do not take (for a first step: the nodes reached by a step that reaches the topic, the
topic's kind), where at least `COMMON` of those nodes take it. Where the best of them reads the question
better than every held group by the reader's `absent_margin` (its config.json; the bundled reader's 2.0
was chosen on the sets in the README; a reader without one does not decline so), the KG lacks what is
asked for this topic, and the answer is declined naming that path (kgfr/answer.py). With a cross reader
(kgfr/cross_reader.py) the held groups' scores are its re-read ones, which only lower the groups it
does not favour: the margin was chosen without one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from kgqa.core.subgraph import Subgraph
from kgqa.methods.kgfr.path_reader import MAX_PATH, Reading, hop_texts, verbalise
from kgqa.methods.kgfr.scorer import edge_arrays

COMMON = 0.4  # the share of the nodes of a kind that must take a step for it to be asked of one of them
PREFIXES = 8  # best-read groups followed by an absent step
MAX_ABSENT = 96  # absent sequences read per question: those whose last step reads most like the question


class ScoresTexts(Protocol):
    def score_texts(self, texts: list[list[str]], probe: str, encoder, states: np.ndarray | None = None,  # type: ignore[no-untyped-def]
                    ) -> tuple[list[float], float | None]: ...


@dataclass(frozen=True)
class Absent:
    path: str  # the absent sequence that read best, verbalised ("directed by → wrote")
    margin: float  # its score minus the best held group's


def absent_sequences(sg: Subgraph, reading: Reading, prefixes: int = PREFIXES) -> list[tuple[int, ...]]:
    """The sequences (edge types as in `Subgraph`: 2r + inverse) that a start of one of the reader's
    `prefixes` best groups (nothing, a first step, …, the whole group where it is shorter than the
    subgraph's hops) would hold with one more step, where the subgraph takes that step elsewhere after
    the same last step but not from the start's own ends (an edge back to a topic alone does not count)."""
    heads, tails, types = (np.asarray(a, dtype=np.int64) for a in edge_arrays(sg))
    topics = np.asarray(sg.topics, dtype=np.int64)
    is_topic = np.zeros(sg.num_nodes, dtype=bool)
    is_topic[topics] = True
    onward = ~is_topic[tails]
    kinds = 2 * len(sg.relation_labels)
    scores = np.array([score for _, score in reading.groups])
    longest = min(MAX_PATH, max(1, sg.hops))
    starts: dict[tuple[int, ...], None] = {}
    for i in np.argsort(-scores, kind="stable")[:prefixes]:
        group = reading.sequences[i][0]
        for length in range(min(len(group), longest - 1) + 1):
            starts[tuple(group[:length])] = None
    out: dict[tuple[int, ...], None] = {}
    for start in starts:
        ends = is_topic
        for step in start:
            ends = _marked(tails[ends[heads] & (types == step)], sg.num_nodes)
        last = _marked(np.array([start[-1]]) if start else types[is_topic[tails]], kinds)
        alike = _marked(tails[last[types]], sg.num_nodes)  # reached the way its ends were: of their kind
        taking = alike[heads] & onward
        steps, takers = np.unique(np.unique(types[taking] * sg.num_nodes + heads[taking]) // sg.num_nodes, return_counts=True)
        elsewhere = steps[takers >= COMMON * alike.sum()]  # most nodes of the kind take it: a KG's odd facts do not count
        here = np.unique(types[ends[heads] & onward])
        for step in np.setdiff1d(elsewhere, here).tolist():
            out[start + (int(step),)] = None
    return list(out)


def _marked(indices: np.ndarray, size: int) -> np.ndarray:
    mask = np.zeros(size, dtype=bool)
    mask[indices] = True
    return mask


def absent_reading(reader: ScoresTexts, sg: Subgraph, reading: Reading, probe: str, encoder,  # type: ignore[no-untyped-def]
                   states: np.ndarray | None = None) -> Absent | None:
    """The absent sequence that reads the question best, and by how much it beats the best held group;
    None where nothing was read or nothing is absent."""
    if not reading.groups or not reading.sequences:
        return None
    sequences = absent_sequences(sg, reading)
    if not sequences:
        return None
    texts = [hop_texts(sg, sequence) for sequence in sequences]
    if len(texts) > MAX_ABSENT:
        last = sorted({hops[-1] for hops in texts})
        closeness = dict(zip(last, (encoder.encode(last) @ encoder.encode([probe])[0]).tolist()))
        keep = sorted(range(len(texts)), key=lambda i: -closeness[texts[i][-1]])[:MAX_ABSENT]
        sequences, texts = [sequences[i] for i in keep], [texts[i] for i in keep]
    scores, _ = reader.score_texts(texts, probe, encoder, states)
    best = int(np.argmax(scores))
    return Absent(verbalise(sg, sequences[best]), float(scores[best] - max(score for _, score in reading.groups)))
