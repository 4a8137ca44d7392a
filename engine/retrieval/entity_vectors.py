"""Sentence vectors of entity labels, for methods whose GNN starts entities from their label
(RAPL's line-graph features, GraSP's entity states)."""

from __future__ import annotations

import numpy as np

from kgqa.core.store import GraphStore
from kgqa.core.subgraph import Subgraph
from kgqa.retrieval.text import TextEncoder


class EntityVectors:
    """Sentence vectors of the labels of a subgraph's nodes: only the nodes at hand are encoded, each
    label once per machine (the encoder caches every text it encodes), never the whole KG."""

    def __init__(self, store: GraphStore, encoder: TextEncoder):
        self.store, self.encoder = store, encoder

    def of(self, sg: Subgraph) -> np.ndarray:
        return self.encoder.encode(sg.node_labels)
