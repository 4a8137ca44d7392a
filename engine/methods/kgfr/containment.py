"""Places in a KG without types, read from its containment facts (`located in`, `contained by`, `part of`,
`lies in`; issue 46, part 2). In a KG without types (the scale KG of `bench/scale_kg.py`: `born_in` a city,
`located_in` a country), "what country was X born in" reads best as `born in`, one hop, and the city wins:
nothing tells a city from a country, or a place from a person, but the KG's own containment facts.

- The places are the ends of the containment facts: where a place is named ("in which city …", "which nation …",
  "where is X located", "where was X born"), a candidate that is none (a colleague, the firm, an occupation) ranks
  below every other (`demote_non_places`; not for "where does X work": it may ask for the firm).
- A country is where the containment ends: where a country or a nation is asked, a candidate that lies in
  another place ("Rusar located in Chauria") hands its score to that place and ranks below every other, if
  that place lies in nothing itself and is more than a container, an end of some other fact (people are its
  citizens, it has a capital): a continent or a region that only contains places is no country, and in a KG
  whose countries lie in continents a country stays the answer (`climb_to_country`). Never where a topic is
  itself a place of the containment: "which countries border X", "which countries lie in Europe" ask for
  places of the topic's own order, which a climb would leave.

Both only where the KG shows no kinds (no type relation, no Freebase property names: a KG with them is read by
them, kgfr/answer_kind.py). A node at the subgraph's last hop shows only the facts that reached it: what the
subgraph does not show of the best candidates, the store says (`subject_relations_of_best`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import torch

from kgqa.core.store import KnowsSubjectRelations
from kgqa.core.subgraph import Subgraph
from kgqa.methods.kgfr.answer_kind import type_relations
from kgqa.methods.kgfr.asked_kind import asks_for_country, names_a_place
from kgqa.methods.kgfr.literal_kind import fact_ends
from kgqa.retrieval.relation_text import freebase_subject_type, readable_relation

STORE_CHECKED = 50  # the best-scored candidates whose facts beyond the subgraph the store is asked about
# "X located in Y", "X contained by Y", "X part of Y", "X lies in Y": the subject lies inside the object
CONTAINMENT = re.compile(r"^(?:is )?(?:located ?in|contained ?by|containedby|part of|lies in|situated in)$")


def containment_relations(sg: Subgraph) -> list[int]:
    """The subgraph's relations whose subject lies inside their object."""
    return [i for i, label in enumerate(sg.relation_labels) if CONTAINMENT.match(readable_relation(label))]


def shows_kinds(sg: Subgraph) -> bool:
    """Whether the subgraph's relations give its nodes kinds: a type relation, or Freebase property names."""
    return bool(type_relations(sg)) or any(freebase_subject_type(label) for label in sg.relation_labels)


def rank_last(scores: torch.Tensor, demoted: torch.Tensor) -> torch.Tensor:
    """`scores` with every `demoted` candidate below every other finite one, their order kept among themselves."""
    finite = torch.isfinite(scores)
    spread = float(scores[finite].max() - scores[finite].min()) + 1.0
    return torch.where(demoted, scores - spread, scores)


def climb_to_country(scores: torch.Tensor, sg: Subgraph, probe: str, store: object = None) -> tuple[torch.Tensor, int]:
    """Scores where each candidate lying in an outermost place (one that lies in nothing, and is an end of some fact
    other than containment) lifts that place to its own score and then ranks below every other candidate, and how
    many candidates moved down; `scores` unchanged where the question asks for no country, the KG shows kinds
    (`shows_kinds`), a topic is a place of the containment, or no candidate lies in such a place. What the subgraph
    does not show of the best places (facts beyond its last hop, or left out by its fan-out caps) the store says."""
    relations = containment_relations(sg)
    if not relations or sg.num_edges == 0 or not asks_for_country(probe) or shows_kinds(sg):
        return scores, 0
    subject, obj = fact_ends(sg)
    is_containment = np.isin(np.asarray(sg.edge_type) // 2, relations)
    inner, outer = subject[is_containment], obj[is_containment]
    topics = np.asarray(sg.topics, dtype=np.int64)
    if np.isin(topics, inner).any() or np.isin(topics, outer).any():
        return scores, 0
    finite = torch.isfinite(scores).numpy()
    outermost = np.zeros(sg.num_nodes, dtype=bool)
    outermost[outer] = True
    outermost[inner] = False
    more = np.zeros(sg.num_nodes, dtype=bool)  # more than a container
    more[subject[~is_containment]] = True
    more[obj[~is_containment]] = True
    names = {sg.relation_labels[i] for i in relations}
    for node, labels in subject_relations_of_best(store, sg, scores, outermost & finite).items():
        outermost[node] = not names.intersection(labels)
        more[node] = True
    outermost &= more
    lifting = outermost[outer] & finite[inner] & finite[outer]
    if not lifting.any():
        return scores, 0
    lifted = scores.clone()  # each outermost place takes the best score of the candidates lying in it
    lifted.scatter_reduce_(0, torch.from_numpy(outer[lifting]), scores[torch.from_numpy(inner[lifting])], "amax")
    demoted = np.zeros(sg.num_nodes, dtype=bool)
    demoted[inner[lifting]] = True
    return rank_last(lifted, torch.from_numpy(demoted)), int(demoted.sum())


class SubjectRelationsOnce:
    """A store's `subject_relations` that asks for each entity once: one question's place rules (here and
    kgfr/value_kind.py) share it, so the nodes two of them check cost one round trip, not two."""

    def __init__(self, store: KnowsSubjectRelations):
        self.store = store
        self.known: dict[str, list[str]] = {}

    def subject_relations(self, iris: Sequence[str]) -> dict[str, list[str]]:
        missing = [iri for iri in dict.fromkeys(iris) if iri not in self.known]
        if missing:
            found = self.store.subject_relations(missing)
            self.known.update({iri: found.get(iri, []) for iri in missing})
        return {iri: self.known[iri] for iri in iris if self.known[iri]}


def subject_relations_of_best(store: object, sg: Subgraph, scores: torch.Tensor, among: np.ndarray) -> dict[int, list[str]]:
    """Of the STORE_CHECKED best-scored finite candidates `among` (a bool per node), each that is the subject of some fact
    of the store → those facts' relation labels (one round trip; {} where the store cannot say): a node at the subgraph's
    last hop shows only the facts that reached it."""
    if not isinstance(store, KnowsSubjectRelations) or not among.any():
        return {}
    finite = torch.isfinite(scores)
    best = [int(i) for i in torch.argsort(scores, descending=True)[:STORE_CHECKED] if finite[i] and among[int(i)]]
    found = store.subject_relations([sg.nodes[i] for i in best]) if best else {}
    return {i: found[sg.nodes[i]] for i in best if found.get(sg.nodes[i])}


def demote_non_places(scores: torch.Tensor, sg: Subgraph, probe: str, store: object = None) -> tuple[torch.Tensor, int]:
    """Where a place is named (`names_a_place`: "which city …", "where is X located") in a KG without kinds that holds a
    containment of places, the places are the ends of its containment facts: every candidate that is none (in the
    subgraph, nor, for the best, the subject of a containment relation in the store) ranks below every other, and how
    many moved; unchanged where no candidate is a place, or every one is. Not for "where does X work": it may ask for the firm."""
    relations = containment_relations(sg)
    if not relations or sg.num_edges == 0 or not names_a_place(probe) or shows_kinds(sg):
        return scores, 0
    subject, obj = fact_ends(sg)
    is_containment = np.isin(np.asarray(sg.edge_type) // 2, relations)
    place = np.zeros(sg.num_nodes, dtype=bool)
    place[subject[is_containment]] = True
    place[obj[is_containment]] = True
    finite = torch.isfinite(scores).numpy()
    names = {sg.relation_labels[i] for i in relations}
    for node, labels in subject_relations_of_best(store, sg, scores, finite & ~place).items():
        place[node] = bool(names.intersection(labels))
    demoted = finite & ~place
    if not demoted.any() or not (finite & place).any():
        return scores, 0
    return rank_last(scores, torch.from_numpy(demoted)), int(demoted.sum())
