"""Questions naming two entities (kgqa.methods.kgfr.conjunction): the candidates that neighbour every
topic rank first, their order kept; nothing moves where that tells no candidate from another."""

from __future__ import annotations

import torch
from conftest import subgraph_from_lines

from kgqa.methods.kgfr.conjunction import favour_neighbours_of_every_topic, neighbours_of_every_topic

LINES = [
    "Random Harvest|starred_actors|Ronald Colman",
    "Random Harvest|starred_actors|Greer Garson",
    "Kismet|starred_actors|Ronald Colman",
    "Mrs. Miniver|starred_actors|Greer Garson",
    "Kismet|directed_by|William Dieterle",
    "Mrs. Miniver|directed_by|William Wyler",
]


def scores_for(sg, by_label: dict[str, float]) -> torch.Tensor:  # type: ignore[no-untyped-def]
    scores = torch.tensor([by_label.get(label, -5.0) for label in sg.node_labels])
    scores[torch.as_tensor(sg.topics, dtype=torch.long)] = float("-inf")  # topics are never answers
    return scores


def ranked(sg, scores: torch.Tensor) -> list[str]:  # type: ignore[no-untyped-def]
    return [sg.node_labels[int(i)] for i in torch.argsort(scores, descending=True) if torch.isfinite(scores[i])]


def test_the_film_of_both_actors_ranks_first_and_the_rest_keep_their_order(tmp_path):
    sg = subgraph_from_lines(tmp_path, "films", LINES, ["Ronald Colman", "Greer Garson"])
    before = scores_for(sg, {"Kismet": 5.0, "Mrs. Miniver": 4.0, "Random Harvest": 3.0, "William Dieterle": 2.0})
    after, moved = favour_neighbours_of_every_topic(before, sg)
    assert moved == 1 and ranked(sg, after)[:4] == ["Random Harvest", "Kismet", "Mrs. Miniver", "William Dieterle"]
    assert ranked(sg, after)[1:] == [label for label in ranked(sg, before) if label != "Random Harvest"]
    assert torch.isinf(after[torch.as_tensor(sg.topics, dtype=torch.long)]).all()  # topics stay out
    # one topic: nothing moves
    (tmp_path / "one").mkdir()
    one = subgraph_from_lines(tmp_path / "one", "films", LINES, "Ronald Colman")
    assert neighbours_of_every_topic(one) is None
    assert torch.equal(favour_neighbours_of_every_topic(scores_for(one, {"Kismet": 1.0}), one)[0], scores_for(one, {"Kismet": 1.0}))


def test_nothing_moves_where_no_candidate_or_every_one_neighbours_both(tmp_path):
    # Ronald Colman's films and William Wyler's share none
    sg = subgraph_from_lines(tmp_path, "films", LINES, ["Ronald Colman", "William Wyler"])
    near = neighbours_of_every_topic(sg)
    assert near is not None and not near.any()
    scores = scores_for(sg, {"Kismet": 2.0, "Mrs. Miniver": 1.0})
    moved, count = favour_neighbours_of_every_topic(scores, sg)
    assert count == 0 and torch.equal(moved, scores)
    (tmp_path / "pair").mkdir()
    pair = subgraph_from_lines(tmp_path / "pair", "films", ["Kismet|starred_actors|Ronald Colman", "Kismet|directed_by|William Dieterle"],
                               ["Ronald Colman", "William Dieterle"])
    only = scores_for(pair, {"Kismet": 1.0})  # the one candidate neighbours both: no order to change
    moved, count = favour_neighbours_of_every_topic(only, pair)
    assert count == 0 and torch.equal(moved, only)
