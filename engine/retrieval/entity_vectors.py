"""Sentence vectors of a store's entity labels, for methods whose GNN starts entities from their label
(RAPL's line-graph features, GraSP's entity states)."""

from __future__ import annotations

import threading

import numpy as np

from kgqa.core.store import GraphStore
from kgqa.core.subgraph import Subgraph
from kgqa.retrieval.label_index import index_for
from kgqa.retrieval.text import TextEncoder


class EntityVectors:
    """Sentence vectors of a store's entity labels: from its label index (embedded once per KG and
    cached on disk) where it has one, else encoded per subgraph (and cached by the encoder)."""

    def __init__(self, store: GraphStore, encoder: TextEncoder):
        self.store, self.encoder = store, encoder
        self._rows: dict[str, int] | None = None
        self._vectors: np.ndarray | None = None
        self._lock = threading.Lock()

    def of(self, sg: Subgraph) -> np.ndarray:
        with self._lock:
            if self._rows is None:
                index = index_for(self.store)
                self._rows = {iri: i for i, iri in enumerate(index.iris)} if index is not None else {}
                self._vectors = index.vectors(self.encoder) if index is not None else None
        rows = [self._rows.get(iri, -1) for iri in sg.nodes]
        if self._vectors is not None and min(rows, default=0) >= 0:
            return self._vectors[rows]
        return self.encoder.encode(sg.node_labels)
