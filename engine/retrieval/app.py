"""Asymmetric Progressive Propagation (KGFR §IV-C, eq. 6–7): the capped k-hop subgraph."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from kgqa.core.store import ExpandsAllHops, GraphStore
from kgqa.core.subgraph import RetrievalTrace, Subgraph
from kgqa.core.types import Edge

DEFAULT_HOPS = 3
DEFAULT_LAMBDA = 100


def retrieve(store: GraphStore, topics: Sequence[str], hops: int = DEFAULT_HOPS, lam: int = DEFAULT_LAMBDA) -> Subgraph:
    """Expand from the topic entities (IRIs) one hop at a time, one store round trip per hop and one
    for the labels — or as the store does it itself (`ExpandsAllHops`; Neo4j and Virtuoso: one in all).

    Hop h expands the entities first reached at hop h-1 (eq. 6). A (subject, relation) group — and
    likewise an (object, relation⁻¹) group — with at most λ edges is kept whole; a larger one keeps
    only edges to entities reached before hop h, i.e. S_{h-1} (eq. 7). Results are sorted before ids
    are given out, so the same inputs always give the same subgraph.
    """
    if hops < 0:
        raise ValueError(f"hops must be >= 0, got {hops}")
    if lam < 0:
        raise ValueError(f"lam (λ) must be >= 0, got {lam}")
    if not topics:
        raise ValueError("retrieval needs at least one topic entity")
    started, trips_before = time.perf_counter(), store.round_trips
    node_id: dict[str, int] = {}
    node_hop: list[int] = []
    for iri in topics:
        if iri not in node_id:
            node_id[iri] = len(node_id)
            node_hop.append(0)
    relation_id: dict[str, int] = {}
    heads: list[int] = []
    tails: list[int] = []
    types: list[int] = []
    edge_hops: list[int] = []
    trace = RetrievalTrace()
    frontier = list(node_id)
    whole = store.expand_hops(frontier, hops, lam) if isinstance(store, ExpandsAllHops) else None
    by_hop: dict[int, list[Edge]] = {}
    for edge, hop in whole.edges if whole is not None else ():
        by_hop.setdefault(hop, []).append(edge)
    for hop in range(1, hops + 1):
        if not frontier:
            break
        edges = by_hop.get(hop, []) if whole is not None else store.expand(frontier, node_id.keys(), lam)
        edges.sort(key=lambda e: (e.head, e.relation, e.inverse, e.tail))
        new: list[str] = []
        for edge in edges:
            tail = node_id.get(edge.tail)
            if tail is None:
                tail = node_id[edge.tail] = len(node_id)
                node_hop.append(hop)
                new.append(edge.tail)
            rel = relation_id.setdefault(edge.relation, len(relation_id))
            heads.append(node_id[edge.head])
            tails.append(tail)
            types.append(2 * rel + int(edge.inverse))
            edge_hops.append(hop)
        trace.edges_per_hop.append(len(edges))
        trace.new_nodes_per_hop.append(len(new))
        frontier = new
    nodes = list(node_id)
    relations = list(relation_id)
    if whole is not None:
        labels = whole.labels
    else:
        labels = store.labels(nodes + relations)  # one round trip for every label the subgraph shows
    trace.round_trips = store.round_trips - trips_before
    trace.seconds = time.perf_counter() - started
    return Subgraph(
        nodes=nodes,
        node_labels=[labels.get(iri, iri) for iri in nodes],
        node_hop=np.asarray(node_hop, dtype=np.int8),
        topics=np.asarray([node_id[t] for t in dict.fromkeys(topics)], dtype=np.int64),
        relations=relations,
        relation_labels=[labels.get(iri, iri) for iri in relations],
        edge_index=np.asarray([heads, tails], dtype=np.int64).reshape(2, -1),
        edge_type=np.asarray(types, dtype=np.int64),
        edge_hop=np.asarray(edge_hops, dtype=np.int8),
        hops=hops,
        lam=lam,
        trace=trace,
    )
