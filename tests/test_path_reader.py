"""KGFR's path reader (kgqa.methods.kgfr.path_reader): relation-path groups from a real store's
subgraph, their text, the fusion with the scorer's scores, and a reader saved and loaded again."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import subgraph_from_lines

from kgqa.methods.kgfr.path_reader import PathReader, PathReaderModel, Reading, ReaderConfig, groups_for, groups_read, path_groups, path_inputs, verbalise

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
    return subgraph_from_lines(tmp_path_factory.mktemp("films"), "films", LINES, "Kismet")


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


def test_the_reader_reads_every_group_of_a_small_subgraph_and_the_top_nodes_groups_of_a_large_one(subgraph, monkeypatch):
    from kgqa.methods.kgfr import path_reader

    sg = subgraph
    juarez = sg.node_labels.index("Juarez")
    every = [seq for seq, _ in groups_read(sg, [juarez])]
    assert every == [seq for seq, _ in groups_for(sg, None, path_reader.MAX_GROUPS_ALL)] and len(every) > len(groups_for(sg, [juarez]))
    monkeypatch.setattr(path_reader, "FULL_READ_EDGES", sg.num_edges - 1)
    assert [seq for seq, _ in groups_read(sg, [juarez])] == [seq for seq, _ in groups_for(sg, [juarez])]


def reader_with(reading: dict[str, float], weight: float, top: int) -> PathReader:
    """A PathReader whose groups read as `reading` says (text → score) instead of through a model."""
    reader = PathReader.__new__(PathReader)
    reader.config = ReaderConfig(weight, top)

    def read(sg, probe, top, encoder, states=None):  # type: ignore[no-untyped-def]
        best: dict[int, float] = {}
        read = []
        for seq, ends in groups_read(sg, top):
            score = reading.get(verbalise(sg, seq), -1.0)
            read.append((verbalise(sg, seq), score))
            for node in ends.tolist():
                best[node] = max(best.get(node, -1e9), score)
        return Reading(best, read)

    reader.read = read  # type: ignore[method-assign]
    return reader


def test_fusion_lets_the_reading_overturn_the_scorer(subgraph):
    sg = subgraph
    index = {label: i for i, label in enumerate(sg.node_labels)}
    scores = torch.full((sg.num_nodes,), -5.0)
    scores[index["Kismet"]] = float("-inf")  # topics are never answers
    scores[index["William Dieterle"]] = 3.0  # the scorer prefers the path's middle entity ...
    scores[index["Juarez"]] = 2.0
    scores[index["Dr. Socrates"]] = 1.9
    reading = {"directed by": -1.0, "directed by → directed": 2.0}  # ... the reader the path's end
    fused, read = reader_with(reading, weight=2.0, top=3).fuse(scores, sg, "what else did the director of something make", None)
    best = int(torch.argmax(fused))
    assert sg.node_labels[best] == "Juarez" and fused[index["Dr. Socrates"]] > fused[index["William Dieterle"]]
    assert ("directed by → directed", 2.0) in read.groups and fused[index["Kismet"]] == float("-inf")
    # a node the scorer put far below, on a path the question does not read, stays below
    assert all(fused[i] <= fused[index["William Dieterle"]] for i in range(sg.num_nodes) if sg.node_labels[i] not in ("Juarez", "Dr. Socrates", "William Dieterle"))
    # and one it put low, on the path the question reads, comes up with the rest of that path's ends
    scores[index["Juarez"]] = -0.5  # below Dieterle and Dr. Socrates
    fused, _ = reader_with(reading, weight=2.0, top=1).fuse(scores, sg, "q", None)
    assert fused[index["Juarez"]] > fused[index["William Dieterle"]]
    # weight 0: the scorer's order
    unchanged, _ = reader_with(reading, weight=0.0, top=3).fuse(scores, sg, "q", None)
    assert int(torch.argmax(unchanged)) == index["William Dieterle"]


def inputs_for(lengths: list[int], seed: int = 0) -> tuple[torch.Tensor, ...]:
    rng = np.random.default_rng(seed)
    unit = lambda *shape: (lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True))(rng.normal(size=shape).astype(np.float32))  # noqa: E731
    questions = [unit(7, 384), unit(5, 384)]
    paths = [[unit(384) for _ in range(n)] for n in lengths]
    return path_inputs(questions, paths, [0] * (len(lengths) - 1) + [1])


def test_paths_read_the_question_by_hop_in_order_and_a_saved_reader_scores_the_same(tmp_path):
    torch.manual_seed(0)
    model = PathReaderModel()
    with torch.no_grad():
        model.match.weight.add_(torch.randn_like(model.match.weight) * 0.05)
    model.eval()
    tokens, mask, relations, lengths, owner = inputs_for([1, 2, 3, 2])
    assert tokens.shape == (2, 7, 384) and mask[1].sum() == 5 and relations.shape == (4, 3, 384) and lengths.tolist() == [1, 2, 3, 2]
    assert owner.tolist() == [0, 0, 0, 1] and torch.all(relations[0, 1:] == 0)  # padding past a path's hops
    scores = model(tokens, mask, relations, lengths, owner)
    # order matters: the same two relations swapped read differently (each hop has its own instruction)
    swapped = relations.clone()
    swapped[1, [0, 1]] = relations[1, [1, 0]]
    assert not torch.isclose(model(tokens, mask, swapped, lengths, owner)[1], scores[1])
    # padding tokens are not read
    padded = tokens.clone()
    padded[1, 5:] = 100.0
    assert torch.isclose(model(padded, mask, relations, lengths, owner)[3], scores[3])
    # a path scores the same read alone or beside others of other questions
    assert torch.isclose(model(tokens[1:], mask[1:], relations[3:], lengths[3:], torch.zeros(1, dtype=torch.long))[0], scores[3], atol=1e-5)
    model.save(tmp_path / "reader", ReaderConfig(1.5, 7), {"note": "test"})
    loaded, config = PathReaderModel.load(tmp_path / "reader")
    assert config == ReaderConfig(1.5, 7)
    assert torch.allclose(loaded(tokens, mask, relations, lengths, owner), scores, atol=1e-6)


def test_coverage_prefers_the_path_that_explains_every_word_the_question_weighs(tmp_path):
    """A one-hop path that matches one of a question's two weighted words scores below the two-hop
    path that matches both, by coverage alone (instructions and length reads zeroed); and a reader
    saved before coverage existed loads with coverage off, scoring as it did."""
    from safetensors.torch import load_file, save_file

    rng = np.random.default_rng(3)
    unit = lambda *shape: (lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True))(rng.normal(size=shape).astype(np.float32))  # noqa: E731
    wrote, filmed, rest = unit(384), unit(384), unit(3, 384)
    question = np.stack([rest[0], wrote, rest[1], filmed, rest[2]])  # "who | wrote | what | filmed | ?"
    model = PathReaderModel().eval()
    inputs = path_inputs([question], [[wrote], [wrote, filmed], [rest[0]]], [0, 0, 0])

    def scores_weighing(word: np.ndarray) -> list[float]:
        with torch.no_grad():
            model.scale.zero_()
            model.length.weight.zero_()
            model.length.bias.zero_()
            model.cover_scale.fill_(1.0)
            model.importance.weight.copy_(torch.from_numpy(20 * word).unsqueeze(0))
            model.importance.bias.zero_()
        return model(*inputs).tolist()

    one_hop, two_hop, other = scores_weighing(wrote + filmed)
    assert two_hop > one_hop + 0.3 and one_hop > other + 0.3
    # the learned importance decides which words count: weigh "who" and the path of its relation wins
    one_hop, two_hop, other = scores_weighing(rest[0])
    assert other > max(one_hop, two_hop) + 0.3
    model.save(tmp_path / "new", ReaderConfig(1.0, 5), {})
    state = {k: v for k, v in load_file(str(tmp_path / "new" / "model.safetensors")).items() if k not in {"importance.weight", "importance.bias", "cover.weight", "cover_scale"}}
    (tmp_path / "old").mkdir()
    save_file(state, str(tmp_path / "old" / "model.safetensors"))
    (tmp_path / "old" / "config.json").write_text((tmp_path / "new" / "config.json").read_text())
    old, _ = PathReaderModel.load(tmp_path / "old")
    assert old.cover_scale.item() == 0.0


class RandomEncoder:
    """Stands in for MiniLM: a fixed random unit vector per text, random token states."""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.vectors: dict[str, np.ndarray] = {}

    def encode(self, texts):  # type: ignore[no-untyped-def]
        for t in texts:
            if t not in self.vectors:
                v = self.rng.normal(size=384).astype(np.float32)
                self.vectors[t] = v / np.linalg.norm(v)
        return np.stack([self.vectors[t] for t in texts])

    def token_states(self, texts):  # type: ignore[no-untyped-def]
        return [self.rng.normal(size=(6, 384)).astype(np.float32) for _ in texts]


def test_the_no_path_option_is_read_only_from_a_reader_trained_for_it(tmp_path, subgraph):
    from safetensors.torch import save_file

    model = PathReaderModel()
    with torch.no_grad():
        model.lacks.weight.zero_()
        model.lacks.bias.fill_(3.0)
    model.save(tmp_path / "trained", ReaderConfig(1.0, 5, reads_lacking=True), {})
    reader = PathReader(tmp_path / "trained")
    assert reader.config.reads_lacking
    reading = reader.read(subgraph, "what else did the director of something make", [], RandomEncoder())
    assert reading.groups and reading.lacking == pytest.approx(3.0 - max(score for _, score in reading.groups), abs=1e-4)
    # the same weights saved as a reader not trained with unanswerable questions: no signal
    model.save(tmp_path / "untrained", ReaderConfig(1.0, 5), {})
    assert PathReader(tmp_path / "untrained").read(subgraph, "q", [], RandomEncoder()).lacking is None
    # a reader saved before the option existed loads, and reads no signal even if its config says so
    old = {k: v for k, v in model.state_dict().items() if not k.startswith("lacks.")}
    save_file(old, str(tmp_path / "trained" / "model.safetensors"))
    assert not PathReader(tmp_path / "trained").config.reads_lacking
    # a file of other weights is refused by name
    save_file({"queries": torch.zeros(6, 384)}, str(tmp_path / "trained" / "model.safetensors"))
    with pytest.raises(ValueError, match="trained/model.safetensors: not a path reader"):
        PathReader(tmp_path / "trained")


def test_a_walk_straight_back_to_the_topic_alone_ends(tmp_path):
    sg = subgraph_from_lines(tmp_path, "couples", ["Ann|spouse_of|Bob", "Ann|born_in|Zenda", "Bob|born_in|Strelsau",
                                                   "Kismet|directed_by|Bob", "Juarez|directed_by|Bob"], "Ann")
    groups = {verbalise(sg, seq): labels(sg, ends) for seq, ends in path_groups(sg).items()}
    assert groups["spouse of → born in"] == {"Strelsau"}  # the husband's birthplace
    assert not any(text.startswith("spouse of → has spouse") for text in groups)  # Ann → Bob → Ann: no walk on from there
    assert groups["spouse of → directed"] == {"Kismet", "Juarez"}
    (tmp_path / "films").mkdir()
    films = ["Random Harvest|directed_by|Mervyn LeRoy", "Random Harvest|starred_actors|Ronald Colman", "Kismet|starred_actors|Ronald Colman",
             "Juarez|starred_actors|Ronald Colman", "Kismet|directed_by|William Dieterle", "Juarez|directed_by|William Dieterle"]
    sg = subgraph_from_lines(tmp_path / "films", "films", films, "Random Harvest")
    groups = {verbalise(sg, seq): labels(sg, ends) for seq, ends in path_groups(sg).items()}
    # LeRoy directed Random Harvest alone, but directed_by is no one-to-one relation (Dieterle directed two):
    # the way back to the topic is walked on, as "the cast of the films of X's director" means
    assert groups["directed by → directed → starred actors"] == {"Ronald Colman"}


def test_a_walk_straight_back_along_a_one_to_one_relation_ends_wherever_it_returns(tmp_path):
    """Zenda → Ruritania → its capital Strelsau → back to Ruritania: "located in → capital → capital of" is where Zenda
    lies, under the words of "the capital of Zenda's nation", and is not read; Ruritania's other cities are (located_in is
    no one-to-one relation)."""
    lines = ["Zenda|located_in|Ruritania", "Strelsau|located_in|Ruritania", "Ruritania|capital|Strelsau", "Graustark|capital|Tarlenheim"]
    sg = subgraph_from_lines(tmp_path, "capitals", lines, "Zenda")
    groups = {verbalise(sg, seq): labels(sg, ends) for seq, ends in path_groups(sg).items()}
    assert groups["located in → capital"] == {"Strelsau"}
    assert not any(text.startswith("located in → capital → capital of") for text in groups)
    assert groups["located in → is what something is located in"] == {"Strelsau"}  # the country's other cities
    assert groups["located in → is what something is located in → located in"] == {"Ruritania"}


def test_edges_sorted_by_head_by_radix_match_a_stable_sort():
    from kgqa.methods.kgfr.path_reader import _stable_order

    rng = np.random.default_rng(7)
    for bound in (1, 5, 1 << 16, (1 << 16) + 3, 1 << 40):  # one 16-bit pass, and two or three
        heads = rng.integers(0, bound, 5000)
        assert np.array_equal(_stable_order(heads, bound), np.argsort(heads, kind="stable")), bound


def walked(sg, walker, sequence, node) -> list[str]:  # type: ignore[no-untyped-def]
    return [f"{sg.node_labels[int(walker.heads[e])]} {sg.relation_name(int(walker.types[e]))} {sg.node_labels[int(walker.tails[e])]}"
            for e in walker.walk(sequence, node)]


def test_a_groups_walk_leads_from_the_topic_to_the_node_along_its_relations(tmp_path):
    from kgqa.methods.kgfr.evidence_paths import Walker
    from kgqa.methods.kgfr.scorer import edge_arrays

    lines = ["Ann|spouse_of|Bob", "Ann|born_in|Zenda", "Bob|born_in|Strelsau", "Zenda|located_in|Ruritania",
             "Strelsau|located_in|Ruritania", "Ann|citizen_of|Ruritania", "Dan|born_in|Zenda", "Dan|citizen_of|Ruritania"]
    sg = subgraph_from_lines(tmp_path, "couples", lines, "Ann")
    walker, at = Walker(sg, edge_arrays(sg)), {label: i for i, label in enumerate(sg.node_labels)}
    seq = {verbalise(sg, s): s for s in path_groups(sg)}
    assert walked(sg, walker, seq["spouse of → born in → located in"], at["Ruritania"]) == [
        "Ann spouse_of Bob", "Bob born_in Strelsau", "Strelsau located_in Ruritania"]
    # the people born where Ann was include Ann: the walk goes through Dan, not back through the topic
    assert walked(sg, walker, seq["born in → is what something born in → citizen of"], at["Ruritania"]) == [
        "Ann born_in Zenda", "Zenda born_in⁻¹ Dan", "Dan citizen_of Ruritania"]
    assert walker.walk(seq["spouse of → born in"], at["Zenda"]) == []  # no such walk ends there
    assert walker.walk((), at["Bob"]) == []


def test_the_best_read_group_reaching_a_node_names_its_path(subgraph):
    sg = subgraph
    groups = [(seq, ends) for seq, ends in path_groups(sg).items()]
    scores = {"directed by → directed": 2.0, "directed by → directed → release year": 0.5, "release year": 1.0}
    reading = Reading({}, [(verbalise(sg, seq), scores.get(verbalise(sg, seq), -1.0)) for seq, _ in groups], None, groups)
    at = {label: i for i, label in enumerate(sg.node_labels)}
    assert verbalise(sg, reading.sequence_to(at["Juarez"])) == "directed by → directed"
    assert verbalise(sg, reading.sequence_to(at["1944"])) == "release year"  # 1.0 over the three-hop 0.5
    assert verbalise(sg, reading.sequence_to(at["1939"])) == "directed by → directed → release year"
    assert reading.sequence_to(at["Kismet"]) is None and Reading({}, []).sequence_to(at["Juarez"]) is None
