"""Candidate reasoning paths for labels (RAPL §4.1, first stage): walks of L(G) from a question
triple to a triple whose tail is a gold answer, of length d … d+2 where d is the shortest such length;
only the shortest ones when there are more than 50 of them or d > 4 (the authors' rule). Paths are
tuples of line-graph node ids; a relation chain is the tuple of their types."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from kgqa.core.answer import set_f1
from kgqa.methods.rapl.line_graph import LineGraph

MAX_SHORTEST = 50  # more shortest paths than this: keep only the shortest
MAX_LONGER_FROM = 4  # d above this: keep only the shortest
SLACK = 2  # lengths d … d + SLACK
MAX_PARTIAL = 20_000  # partial walks kept per step (hubs): enumeration stops growing there


def candidate_paths(lg: LineGraph, answers: Iterable[int]) -> list[tuple[int, ...]]:
    """Walks of L(G) (as triple ids) from a question triple to a gold answer, shortest first."""
    gold = np.zeros(int(max(lg.tail.max(initial=-1), lg.head.max(initial=-1))) + 2, dtype=bool)
    wanted = [a for a in answers if 0 <= a < gold.shape[0]]
    if not wanted or lg.num_triples == 0:
        return []
    gold[wanted] = True
    ends = gold[lg.tail]
    # useful[i]: an answer is reachable from triple i (itself included) along L(G)
    useful = ends.copy()
    src, dst = lg.edges
    for _ in range(int(lg.step.max())):
        grown = useful.copy()
        np.logical_or.at(grown, src, useful[dst])
        if np.array_equal(grown, useful):
            break
        useful = grown
    ptr, idx = lg.successors()
    walks: list[tuple[int, ...]] = [(int(s),) for s in lg.starts if useful[s]]
    found: list[list[tuple[int, ...]]] = []
    d = None
    length = 1
    while walks:
        complete = [w for w in walks if ends[w[-1]] and _simple(lg, w)]
        if complete and d is None:
            d = length
        if d is not None:
            found.append(complete)
            if length == d and (len(complete) > MAX_SHORTEST or d > MAX_LONGER_FROM):
                break
            if length >= d + SLACK:
                break
        grown_walks = []
        for w in walks:
            last = w[-1]
            for j in idx[ptr[last]:ptr[last + 1]].tolist():
                if useful[j]:
                    grown_walks.append((*w, j))
            if len(grown_walks) >= MAX_PARTIAL:
                break
        walks, length = grown_walks, length + 1
    return [w for level in found for w in level]


def _simple(lg: LineGraph, walk: Sequence[int]) -> bool:
    """No entity visited twice (the authors enumerate simple paths)."""
    entities = [int(lg.head[walk[0]])] + [int(lg.tail[i]) for i in walk]
    return len(set(entities)) == len(entities)


def chain(lg: LineGraph, walk: Sequence[int]) -> tuple[int, ...]:
    return tuple(int(lg.relation[i]) for i in walk)


def chains_by_rank(lg: LineGraph, walks: Sequence[tuple[int, ...]], limit: int = 10) -> list[tuple[int, ...]]:
    """Distinct relation chains of `walks`, shorter first, then the more walks the earlier; at most
    `limit` (what the rationaliser is shown)."""
    count: dict[tuple[int, ...], int] = {}
    for w in walks:
        c = chain(lg, w)
        count[c] = count.get(c, 0) + 1
    return sorted(count, key=lambda c: (len(c), -count[c]))[:limit]


def chain_reach(lg: LineGraph, relations: Sequence[int]) -> set[int]:
    """The entities reached from the topics by following `relations` (types) in order, the topics
    themselves left out: a question does not ask for its own topic (kgfr masks them the same way), and
    counting them made "co-writers of X" (wrote, then written by: back to X) read worse than a wrong
    chain that avoids X."""
    current = np.flatnonzero((lg.step == 1) & (lg.relation == relations[0]))
    ptr, idx = lg.successors()
    for r in relations[1:]:
        if current.size == 0:
            break
        nxt = np.concatenate([idx[ptr[i]:ptr[i + 1]] for i in current.tolist()])
        current = np.unique(nxt[lg.relation[nxt] == r])
    return {int(t) for t in lg.tail[current].tolist()} - set(lg.topics.tolist())


def answer_coverage(lg: LineGraph, relations: Sequence[int], answers: Iterable[int]) -> float:
    """F1 between what a chain reaches and the gold answers: a chain that answers the question reaches
    them all and little else; one that meets an answer by coincidence reaches few of them."""
    return set_f1(chain_reach(lg, relations), set(answers))
