"""A retrieved subgraph as compact integer arrays plus the id → label maps."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from torch_geometric.data import Data


@dataclass
class RetrievalTrace:
    round_trips: int = 0
    seconds: float = 0.0
    edges_per_hop: list[int] = field(default_factory=list)
    new_nodes_per_hop: list[int] = field(default_factory=list)


@dataclass
class Subgraph:
    """Nodes are local ids 0..N-1 (`nodes[i]` is the IRI); relation type `t` is relation `t // 2`,
    read backwards (r⁻¹) when `t` is odd. Each edge remembers the hop that reached it, each node the
    hop that first reached it (topic entities: 0)."""

    nodes: list[str]
    node_labels: list[str]
    node_hop: np.ndarray  # int8 [N]
    topics: np.ndarray  # int64 [T], local ids of the topic entities
    relations: list[str]  # relation IRIs, forward direction
    relation_labels: list[str]
    edge_index: np.ndarray  # int64 [2, E]: head, tail
    edge_type: np.ndarray  # int64 [E]: 2 * relation + inverse
    edge_hop: np.ndarray  # int8 [E]
    hops: int
    lam: int
    trace: RetrievalTrace = field(default_factory=RetrievalTrace)

    @property
    def num_nodes(self) -> int:
        return len(self.nodes)

    @property
    def num_edges(self) -> int:
        return int(self.edge_index.shape[1])

    @property
    def num_relation_types(self) -> int:
        return 2 * len(self.relations)

    def relation_name(self, edge_type: int) -> str:
        label = self.relation_labels[edge_type // 2]
        return f"{label}⁻¹" if edge_type % 2 else label

    def edge_set(self) -> set[tuple[str, str, bool, str, int]]:
        """(head IRI, relation IRI, inverse, tail IRI, hop) for every edge: for comparing stores."""
        heads, tails = self.edge_index
        return {
            (self.nodes[h], self.relations[t // 2], bool(t % 2), self.nodes[o], int(k))
            for h, t, o, k in zip(heads.tolist(), self.edge_type.tolist(), tails.tolist(), self.edge_hop.tolist())
        }

    def to_pyg(self) -> "Data":
        """A torch_geometric `Data` sharing these arrays' memory (no per-edge Python work)."""
        import torch
        from torch_geometric.data import Data

        topic_mask = torch.zeros(self.num_nodes, dtype=torch.bool)
        topic_mask[torch.from_numpy(self.topics)] = True
        return Data(
            edge_index=torch.from_numpy(self.edge_index),
            edge_type=torch.from_numpy(self.edge_type),
            edge_hop=torch.from_numpy(self.edge_hop),
            node_hop=torch.from_numpy(self.node_hop),
            topic_mask=topic_mask,
            num_nodes=self.num_nodes,
        )

    def to_json(self) -> dict[str, Any]:
        heads, tails = self.edge_index.tolist()
        return {
            "hops": self.hops,
            "lambda": self.lam,
            "topics": [self.nodes[i] for i in self.topics.tolist()],
            "nodes": [
                {"id": i, "iri": iri, "label": label, "hop": hop}
                for i, (iri, label, hop) in enumerate(zip(self.nodes, self.node_labels, self.node_hop.tolist()))
            ],
            "edges": [
                {"head": h, "relation": self.relation_name(t), "tail": o, "hop": k}
                for h, t, o, k in zip(heads, self.edge_type.tolist(), tails, self.edge_hop.tolist())
            ],
            "trace": {
                "round_trips": self.trace.round_trips,
                "seconds": self.trace.seconds,
                "edges_per_hop": self.trace.edges_per_hop,
                "new_nodes_per_hop": self.trace.new_nodes_per_hop,
            },
        }
