"""An organisation is no place and no value (issue 46, part 2, for KGs without types).

"What company employs X": in a KG without types (the scale KG of `bench/scale_kg.py`), KGFR answered X's
occupation or the city X lives in, where `works for` read below `occupation` ("employer" reads like
`occupation` 0.65) or `lives in`. Where a question asks for an organisation by its noun (a company, a firm,
an employer, a business, …), what the KG shows to be none loses to every other candidate: a value (the
subject of no fact, the object only of relations named by a noun: `value_kind.values`, "dentist") and a
place, the object of a relation whose words say where something is (`born in`, `lives in`, `headquartered
in`, `located in`, or a place's noun: `capital`, `birthplace`). A firm the KG says is based somewhere is
the subject of such a fact, not its object.

Only where the KG shows no kinds (`containment.shows_kinds`): a KG with types reads organisations by them."""

from __future__ import annotations

import numpy as np
import torch

from kgqa.core.subgraph import Subgraph
from kgqa.methods.kgfr.asked_kind import asks_for_organisation, says_where
from kgqa.methods.kgfr.containment import CONTAINMENT, rank_last, shows_kinds
from kgqa.methods.kgfr.literal_kind import fact_ends
from kgqa.methods.kgfr.value_kind import values
from kgqa.retrieval.relation_text import readable_relation


def places(sg: Subgraph) -> np.ndarray:
    """The nodes (a bool per node) that are the object of a fact whose relation's words say where something is."""
    texts = [readable_relation(label) for label in sg.relation_labels]
    where = np.asarray([says_where(text) or CONTAINMENT.match(text) is not None for text in texts], dtype=bool)
    _, obj = fact_ends(sg)
    out = np.zeros(sg.num_nodes, dtype=bool)
    out[obj[where[np.asarray(sg.edge_type) // 2]]] = True
    return out


def demote_non_organisations(scores: torch.Tensor, sg: Subgraph, probe: str, store: object = None) -> tuple[torch.Tensor, int]:
    """Scores where every value and every place ranks below every other candidate where an organisation is asked,
    and how many moved; unchanged where none is asked, the KG shows kinds, or every candidate is one of them."""
    if sg.num_edges == 0 or not asks_for_organisation(probe) or shows_kinds(sg):
        return scores, 0
    finite = torch.isfinite(scores).numpy()
    demoted = (places(sg) | values(sg, scores, store)) & finite
    if not demoted.any() or not (finite & ~demoted).any():
        return scores, 0
    return rank_last(scores, torch.from_numpy(demoted)), int(demoted.sum())
