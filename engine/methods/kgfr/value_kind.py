"""A value is no place (issue 46, part 2, for KGs without types).

In a KG without types, a node that is the subject of no fact and the object only of relations named by a
noun ("occupation", "industry", "genre") is a value of that noun: "dentist" is an occupation, "mining" an
industry. Asked where something is ("which nation is X's employer headquartered in", "in which city is X's
employer based", "where is the employer of X's husband headquartered"), KGFR answered such values when the
employee's occupation scored above the employer's city; no value is a place, so where a place is asked,
values lose to every other candidate. A node the subgraph shows only as an object may be the subject of
facts beyond its hops: the store is asked (one round trip) for the best candidates among them. Where the KG
holds a containment of places, `containment.demote_non_places` says more (what is no end of it is no place);
this rule holds in a KG without one too.

Only where the KG shows no kinds (`containment.shows_kinds`): a KG with types reads places by them."""

from __future__ import annotations

import numpy as np
import torch

from kgqa.core.subgraph import Subgraph
from kgqa.methods.kgfr.asked_kind import asks_for_place
from kgqa.methods.kgfr.containment import rank_last, shows_kinds, subject_relations_of_best
from kgqa.methods.kgfr.literal_kind import fact_ends
from kgqa.retrieval.relation_text import relation_words


def values(sg: Subgraph, scores: torch.Tensor, store: object = None) -> np.ndarray:
    """The nodes (a bool per node) that are the subject of no fact and the object only of facts of relations named
    by a noun; of the best-scored, those the store says are the subject of some fact are none (`subject_relations_of_best`)."""
    subject, obj = fact_ends(sg)
    by_noun = np.asarray([relation_words(label)[0] == "noun" for label in sg.relation_labels], dtype=bool)
    noun_fact = by_noun[np.asarray(sg.edge_type) // 2]
    out = np.zeros(sg.num_nodes, dtype=bool)
    out[obj[noun_fact]] = True
    out[obj[~noun_fact]] = False
    out[subject] = False
    out[np.asarray(sg.topics, dtype=np.int64)] = False
    out[list(subject_relations_of_best(store, sg, scores, out))] = False
    return out


def demote_values(scores: torch.Tensor, sg: Subgraph, probe: str, store: object = None) -> tuple[torch.Tensor, int]:
    """Scores where every value (`values`) ranks below every other candidate where a place is asked, and how many
    moved; unchanged where no place is asked, the KG shows kinds, or every candidate is a value."""
    if sg.num_edges == 0 or not asks_for_place(probe) or shows_kinds(sg):
        return scores, 0
    finite = torch.isfinite(scores)
    demoted = torch.from_numpy(values(sg, scores, store)) & finite
    if not demoted.any() or bool((finite & ~demoted).sum() == 0):
        return scores, 0
    return rank_last(scores, demoted), int(demoted.sum())
