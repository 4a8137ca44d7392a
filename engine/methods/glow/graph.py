"""A KG's facts as the tensors an RGCN reads: entity and relation indexes, and every fact as two
typed edges, (s → o, r) and (o → s, r⁻¹) with r⁻¹ = r + |R|, so a node hears both its objects and
its subjects."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kgqa.methods.glow.patterns import Fact


@dataclass(frozen=True)
class KGGraph:
    entities: list[str]
    relations: list[str]
    edge_index: np.ndarray  # (2, 2|facts|): source row, target row
    edge_type: np.ndarray  # (2|facts|,)

    @property
    def num_nodes(self) -> int:
        return len(self.entities)

    @property
    def num_edge_types(self) -> int:
        return 2 * len(self.relations)

    def rows(self) -> dict[str, int]:
        return {e: i for i, e in enumerate(self.entities)}


def kg_graph(facts: Sequence[Fact]) -> KGGraph:
    entities = sorted({e for s, _, o in facts for e in (s, o)})
    relations = sorted({r for _, r, _ in facts})
    row = {e: i for i, e in enumerate(entities)}
    rel = {r: i for i, r in enumerate(relations)}
    s = np.fromiter((row[f[0]] for f in facts), np.int64, len(facts))
    o = np.fromiter((row[f[2]] for f in facts), np.int64, len(facts))
    r = np.fromiter((rel[f[1]] for f in facts), np.int64, len(facts))
    edge_index = np.stack([np.concatenate([s, o]), np.concatenate([o, s])])
    edge_type = np.concatenate([r, r + len(relations)])
    return KGGraph(entities, relations, edge_index, edge_type)
