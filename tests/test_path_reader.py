"""KGFR's path reader (kgqa.methods.kgfr.path_reader): relation-path groups from a real store's
subgraph, their text, the fusion with the scorer's scores, and a reader saved and loaded again."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import store_from_lines

from kgqa.core.namespace import KGNamespace
from kgqa.methods.kgfr.path_reader import PathReader, PathReaderModel, ReaderConfig, groups_for, path_groups, verbalise
from kgqa.retrieval.app import retrieve
from kgqa.retrieval.store_url import open_store

NS = KGNamespace("films")
LINES = [
    "Kismet|directed_by|William Dieterle",
    "Dr. Socrates|directed_by|William Dieterle",
    "Juarez|directed_by|William Dieterle",
    "Kismet|release_year|1944",
    "Juarez|release_year|1939",
    "Kismet|starred_actors|Ronald Colman",
    "Random Harvest|starred_actors|Ronald Colman",
]


@pytest.fixture(scope="module")
def subgraph(tmp_path_factory):
    store = open_store(store_from_lines(tmp_path_factory.mktemp("films"), "films", LINES), "films")
    return retrieve(store, [NS.entity("Kismet")], 3, 100)


def labels(sg, nodes) -> set[str]:  # type: ignore[no-untyped-def]
    return {sg.node_labels[int(i)] for i in nodes}


def test_groups_follow_relation_sequences_in_the_direction_walked(subgraph):
    sg = subgraph
    groups = {verbalise(sg, seq): labels(sg, ends) for seq, ends in path_groups(sg).items()}
    assert groups["directed by"] == {"William Dieterle"}
    # back along the same relation: the director's other films, the topic itself left out
    assert groups["directed by → directed"] == {"Dr. Socrates", "Juarez"}
    # a walk may pass through the topic (the director's films include Kismet): only the ends leave it out
    assert groups["directed by → directed → release year"] == {"1939", "1944"}
    assert groups["starred actors → starred actors of"] == {"Random Harvest"}
    assert all(len(seq) <= 3 for seq in path_groups(sg))
    assert "Kismet" not in set().union(*groups.values())


def test_only_groups_reaching_the_given_nodes_are_read_shortest_first(subgraph):
    sg = subgraph
    juarez = sg.node_labels.index("Juarez")
    texts = [verbalise(sg, seq) for seq, _ in groups_for(sg, [juarez])]
    assert texts[0] == "directed by → directed" and all(juarez in ends for _, ends in groups_for(sg, [juarez]))
    assert [len(seq) for seq, _ in groups_for(sg, [juarez])] == sorted(len(seq) for seq, _ in groups_for(sg, [juarez]))
    assert len(groups_for(sg, list(range(sg.num_nodes)), limit=2)) == 2


class FixedReading:
    """A model stand-in: a fixed logit per path text."""

    def __init__(self, logits: dict[str, float]):
        self.logits = logits

    def __call__(self, questions, paths):  # type: ignore[no-untyped-def]
        return torch.tensor([self.logits.get(p, 0.0) for p in paths])


def reader_with(model, weight: float, top: int) -> PathReader:  # type: ignore[no-untyped-def]
    reader = PathReader.__new__(PathReader)
    reader.model, reader.config = model, ReaderConfig(weight, top)
    import threading

    reader._lock = threading.Lock()
    return reader


def test_fusion_lets_the_reading_overturn_the_scorer_within_its_top_nodes(subgraph):
    sg = subgraph
    index = {label: i for i, label in enumerate(sg.node_labels)}
    scores = torch.full((sg.num_nodes,), -5.0)
    scores[index["Kismet"]] = float("-inf")  # topics are never answers
    scores[index["William Dieterle"]] = 3.0  # the scorer prefers the path's middle entity ...
    scores[index["Juarez"]] = 2.0
    scores[index["Dr. Socrates"]] = 1.9
    reading = {"directed by": -1.0, "directed by → directed": 2.0}  # ... the reader the path's end
    fused, read = reader_with(FixedReading(reading), weight=2.0, top=3).fuse(scores, sg, "what else did the director of something make")
    best = int(torch.argmax(fused))
    assert sg.node_labels[best] == "Juarez" and fused[index["Dr. Socrates"]] > fused[index["William Dieterle"]]
    assert ("directed by → directed", 2.0) in read and fused[index["Kismet"]] == float("-inf")
    # a node beyond the top is ranked as the worst reading, so it cannot jump over the ones read
    assert all(fused[i] <= fused[index["William Dieterle"]] for i in range(sg.num_nodes) if sg.node_labels[i] not in ("Juarez", "Dr. Socrates", "William Dieterle"))
    # weight 0: the scorer's order
    unchanged, _ = reader_with(FixedReading(reading), weight=0.0, top=3).fuse(scores, sg, "q")
    assert int(torch.argmax(unchanged)) == index["William Dieterle"]


def test_a_saved_reader_loads_with_the_same_readings(tmp_path):
    torch.manual_seed(0)
    model = PathReaderModel(lora_r=4, lora_alpha=8, layers=2)
    with torch.no_grad():  # untrained LoRA B matrices are zero: make the adapter matter
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.05)
    model.eval()
    questions, paths = ["who directed something"] * 2, ["directed by", "release year"]
    before = model(questions, paths).detach()
    model.save(tmp_path / "reader", ReaderConfig(1.5, 7, lora_r=4, lora_alpha=8, layers=2), {"note": "test"})
    loaded, config = PathReaderModel.load(tmp_path / "reader")
    assert config == ReaderConfig(1.5, 7, 4, 8, 2)
    assert np.allclose(loaded(questions, paths).detach().numpy(), before.numpy(), atol=1e-5)
    fresh = PathReaderModel(lora_r=4, lora_alpha=8, layers=2).eval()
    assert not np.allclose(fresh(questions, paths).detach().numpy(), before.numpy(), atol=1e-3)  # the adapter was read back, not re-made
