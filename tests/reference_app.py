"""Pure-Python reference for APP (KGFR eq. 6-7) over an in-memory triple list. Tests only.

Written straight from the paper, independent of any store: the embedded store's subgraph must
equal this one edge for edge, hop for hop.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable


Groups = dict[str, dict[tuple[str, bool], set[str]]]


def index_groups(triples: Iterable[tuple[str, str, str]]) -> Groups:
    """C_{e,r} for every entity and relation, inverse relations included."""
    groups: Groups = defaultdict(lambda: defaultdict(set))
    for s, r, o in triples:
        groups[s][(r, False)].add(o)
        groups[o][(r, True)].add(s)
    return groups


def reference_app(
    triples: Iterable[tuple[str, str, str]] | Groups, topics: Iterable[str], hops: int, lam: int
) -> set[tuple[str, str, bool, str, int]]:
    groups = triples if isinstance(triples, dict) else index_groups(triples)
    topics = list(topics)
    reached = set(topics)
    frontier = set(topics)
    edges: set[tuple[str, str, bool, str, int]] = set()
    for hop in range(1, hops + 1):
        before = frozenset(reached)  # S_{hop-1}
        new: set[str] = set()
        for e in frontier:
            for (r, inverse), candidates in groups.get(e, {}).items():
                kept = candidates if len(candidates) <= lam else candidates & before
                for o in kept:
                    edges.add((e, r, inverse, o, hop))
                    if o not in before:
                        new.add(o)
        reached |= new
        frontier = new
    return edges
