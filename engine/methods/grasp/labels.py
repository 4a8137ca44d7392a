"""What the selector is trained to name (GraSP App. A, y of eq. 9): the answers for a one-hop
question; for a multi-hop one, the entities on the shortest paths from the topics to the answers.

Both come from the focus graph (an answer it does not hold cannot be named). The target lists the
path entities nearest the topics first and the answers last, at most `max_path` and `max_answers` of
each (the most relevant to the question first), so a long answer set does not make a long target.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

import numpy as np

from kgqa.core.labels import normalise_label
from kgqa.methods.grasp.focus import FocusGraph


def distances(fg: FocusGraph, sources: Sequence[int]) -> np.ndarray:
    """Hops from `sources` over the focus graph's edges in either direction (-1: unreachable)."""
    neighbours: list[list[int]] = [[] for _ in range(fg.num_nodes)]
    for h, t in fg.edge_index.T.tolist():
        neighbours[h].append(t)
        neighbours[t].append(h)
    dist = np.full(fg.num_nodes, -1, dtype=np.int64)
    queue = deque(sources)
    for s in sources:
        dist[s] = 0
    while queue:
        u = queue.popleft()
        for v in neighbours[u]:
            if dist[v] < 0:
                dist[v] = dist[u] + 1
                queue.append(v)
    return dist


def selection_target(fg: FocusGraph, answers: Sequence[int], max_answers: int = 4, max_path: int = 4) -> list[int] | None:
    """Local ids to name, in order; None when the focus graph holds no reachable answer.
    `answers` are ids into the APP subgraph."""
    local = {int(n): i for i, n in enumerate(fg.nodes.tolist())}
    topics = [i for i in range(fg.num_nodes) if fg.hop[i] == 0]
    from_topics = distances(fg, topics)
    held = [local[a] for a in answers if a in local and local[a] not in topics and from_topics[local[a]] > 0]
    if not held:
        return None
    by_relevance = sorted(held, key=lambda i: (-fg.score[i], i))[:max_answers]
    nearest = min(int(from_topics[a]) for a in by_relevance)
    path: set[int] = set()
    if nearest > 1:
        for a in by_relevance:
            to_answer = distances(fg, [a])
            total = from_topics[a]
            path.update(i for i in range(fg.num_nodes)
                        if i not in topics and i not in held and from_topics[i] > 0 and to_answer[i] > 0 and from_topics[i] + to_answer[i] == total)
    on_path = sorted(path, key=lambda i: (from_topics[i], -fg.score[i], i))[:max_path]
    return on_path + by_relevance


def named(names: Sequence[str], candidates: Sequence[str]) -> list[int]:
    """The candidates (local ids) that the selector's names denote: equal once normalised; in the
    selector's order, each once."""
    by_key: dict[str, list[int]] = {}
    for i, c in enumerate(candidates):
        by_key.setdefault(normalise_label(c), []).append(i)
    out: list[int] = []
    for name in names:
        out += [i for i in by_key.get(normalise_label(name), []) if i not in out]
    return out


def farthest(chosen: Sequence[int], hop: np.ndarray) -> list[int]:
    """Without an answer LLM the answers are the chosen entities farthest from the topics: targets
    list the way first and the answers last, and answers lie a hop further out than the way."""
    outside = [i for i in chosen if hop[i] > 0]
    if not outside:
        return []
    top = max(int(hop[i]) for i in outside)
    return [i for i in outside if hop[i] == top]
