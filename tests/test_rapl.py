"""RAPL: the directed line graph (Def. 1, Prop. 1), labels (two stages), the model's look-ahead and
STOP, and training on real MetaQA subgraphs (the full KB fixture shared with test_app_metaqa)."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from kgqa import retrieve
from kgqa.loaders import load_file
from kgqa.methods.kgfr.batch import relation_texts
from kgqa.methods.rapl.data import one_question_batch
from kgqa.methods.rapl.decode import Walk, decode, tail_mass
from kgqa.methods.rapl.labels import make_labels
from kgqa.methods.rapl.line_graph import LineGraph, line_graph
from kgqa.methods.rapl.model import RAPL
from kgqa.methods.rapl.paths import answer_coverage, candidate_paths
from kgqa.methods.rapl.rationalise import EncoderRationaliser, LLMRationaliser, ShortestRationaliser, neighbour_support
from kgqa.retrieval.text import TextEncoder
from kgqa.sparql.embedded import EmbeddedWriter
from conftest import store_from_lines
from scripted_llm import ScriptedLLM

TOY = [
    # Alice starred in two films; the director of one also wrote the other
    "Film One|starred_actors|Alice", "Film Two|starred_actors|Alice", "Film One|directed_by|Dana",
    "Film Two|directed_by|Eve", "Film Three|written_by|Dana", "Film Three|release_year|1999",
    # a same-length shortcut to Dana that does not answer "who directed the films Alice starred in"
    "Alice|employed_by|Studio", "Studio|employs|Dana", "Studio|employs|Frank",
]


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    path = tmp_path_factory.mktemp("rapl") / "toy.txt"
    path.write_text("\n".join(TOY) + "\n", encoding="utf-8")
    writer = EmbeddedWriter.open(None, "toy")
    load_file(writer, path)
    store = writer.reader()
    [alice] = store.resolve(["Alice"])["Alice"]
    return store, retrieve(store, [alice.entity.iri], hops=3, lam=100)


@pytest.fixture(scope="module")
def encoder():
    return TextEncoder()


def _kg_paths(sg, length):
    """Every path of `length` facts from a topic in the KG that leaves it one APP hop per step, found
    by brute force over the facts (both directions), as (head, type, tail) label triples."""
    facts = []
    for (h, t), kind, hop in zip(sg.edge_index.T.tolist(), sg.edge_type.tolist(), sg.edge_hop.tolist()):
        facts += [(h, kind, t, hop), (t, kind ^ 1, h, hop)]
    paths = [[f] for f in facts if f[0] in set(sg.topics.tolist()) and f[3] == 1 and sg.node_hop[f[0]] == 0]
    for step in range(2, length + 1):
        paths = [p + [f] for p in paths for f in facts if f[0] == p[-1][2] and f[3] == step and sg.node_hop[f[0]] == step - 1]
    return {tuple((sg.node_labels[h], k, sg.node_labels[t]) for h, k, t, _ in p) for p in paths}


def test_line_graph_has_a_node_per_fact_and_walks_are_kg_paths(toy):
    _, sg = toy
    lg = line_graph(sg)
    assert lg.num_triples == sg.num_edges  # each fact walked in the one direction that leaves the topic
    assert sorted(lg.fact.tolist()) == list(range(sg.num_edges))
    ptr, idx = lg.successors()
    for length in (1, 2, 3):
        walks = [[int(s)] for s in lg.starts]
        for _ in range(length - 1):
            walks = [w + [int(j)] for w in walks for j in idx[ptr[w[-1]]:ptr[w[-1] + 1]]]
        as_labels = {tuple((sg.node_labels[lg.head[i]], int(lg.relation[i]), sg.node_labels[lg.tail[i]]) for i in w) for w in walks}
        assert len(as_labels) == len(walks)  # distinct walks are distinct KG paths (injective)
        assert as_labels == _kg_paths(sg, length)  # and every KG path is a walk (Prop. 1)
    heads, tails = lg.edges
    assert np.array_equal(lg.tail[heads], lg.head[tails]) and np.all(lg.step[tails] == lg.step[heads] + 1)


def test_the_rationalised_label_skips_a_same_length_shortcut(toy, encoder):
    _, sg = toy
    lg = line_graph(sg)
    dana = sg.node_labels.index("Dana")
    walks = candidate_paths(lg, [dana])
    chains = {tuple(sg.relation_name(int(lg.relation[i])) for i in w) for w in walks}
    assert ("starred_actors⁻¹", "directed_by") in chains and ("employed_by", "employs") in chains  # both length 2
    question = "who directed the films Alice starred in"
    labels = make_labels(sg, lg, question, ["Alice"], [dana], EncoderRationaliser(encoder))
    assert labels.paths and all([sg.relation_name(int(lg.relation[i])) for i in p] == ["starred_actors⁻¹", "directed_by"] for p in labels.paths)
    assert len(labels.log["scores"]) == len(labels.log["chains"]) == 2  # every candidate chain's score is logged
    assert {sg.relation_name(int(lg.relation[s])) for s in labels.positives} == {"starred_actors⁻¹"}  # eq. 8
    shortest = make_labels(sg, lg, question, ["Alice"], [dana], ShortestRationaliser())
    assert len(shortest.paths) == 2  # the heuristic keeps the shortcut too


def test_similar_training_questions_decide_between_chains_that_reach_the_same_answers(encoder):
    # question 0: the director of its film also wrote it, so both chains reach exactly its answers;
    # questions 1-3 are asked the same way about other films, where only the writer's chain answers;
    # question 4 reads the same but is a validation question (its answers are not read); 5 is unrelated
    asked = "which films did the screenwriter of something also write"
    probes = [asked, "which films did the screenwriter of something else also write", "what films did the screenwriter of something also write",
              "which movies did the screenwriter of something also write", asked, "when was something released"]
    chains = [["directed by, then wrote", "written by, then wrote"]] * 5 + [["release year"]]
    coverage = [[1.0, 1.0], [0.2, 1.0], [0.0, 1.0], [0.5, 1.0], [1.0, 0.0], [1.0]]
    pool = [True, True, True, True, False, True]
    vectors = encoder.encode(probes)
    support = neighbour_support(vectors, chains, coverage, pool, neighbours=3)
    assert support[0] == pytest.approx([0.7 / 3, 1.0])  # from 1-3: neither itself nor the validation question
    assert len(support) == 6 and len(support[4]) == 2  # a validation question gets support too (it is only not read)
    flipped = neighbour_support(vectors, chains, coverage[:4] + [[0.0, 1.0], [1.0]], pool, neighbours=3)
    assert flipped[0] == support[0]
    chooser = EncoderRationaliser(encoder)
    choice = chooser.choose(asked, [], chains[0], chains[0], [], coverage[0], support[0])
    assert choice.chosen == [1]
    assert chooser.choose(asked, [], chains[0], chains[0], [], coverage[0], [1.0, 0.0]).chosen == [0]  # support is what decides


def test_a_model_trained_on_masked_questions_is_asked_with_its_topics_masked():
    from kgqa.methods.rapl.data import question_text

    topics = [{"query": "Kismet", "iri": "urn:x"}]
    assert question_text("who directed Kismet", topics, {"question_text": "masked"}) == "who directed something"
    assert question_text("who directed Kismet", topics, {}) == "who directed Kismet"  # checkpoints from before


def test_a_walk_back_to_the_topic_neither_answers_nor_counts_against_a_chain():
    # "who co-wrote films with Xavier": Xavier (0, topic) wrote Film A (1); Film A is written by Yara (2)
    # and, read back (the MetaQA KB stores both directions), by Xavier; Film A is directed by Zed (3).
    lg = LineGraph(head=np.array([0, 1, 1, 1]), relation=np.array([1, 0, 0, 2]), tail=np.array([1, 2, 0, 3]),
                   step=np.array([1, 2, 2, 2]), fact=np.arange(4), edges=np.array([[0, 0, 0], [1, 2, 3]]))
    assert lg.topics.tolist() == [0]
    assert answer_coverage(lg, (1, 0), [2]) == 1.0  # wrote, then written by: reaches Yara (and Xavier, not counted)
    assert answer_coverage(lg, (1, 2), [2]) == 0.0
    walks = [Walk((0, 2), 0.6), Walk((0, 1), 0.3), Walk((0, 3), 0.1)]  # the likeliest walk ends back at Xavier
    assert list(tail_mass(walks, lg.tail, lg.topics).items()) == [(2, 0.3), (3, 0.1)]


def test_an_llm_rationaliser_is_asked_and_an_unreadable_reply_falls_back(toy, encoder):
    _, sg = toy
    lg = line_graph(sg)
    dana = sg.node_labels.index("Dana")
    question = "who directed the films Alice starred in"
    shortcut_first = lambda prompt: "2" if "rational" in prompt else "starred actors of]"  # noqa: E731
    llm = ScriptedLLM(shortcut_first)
    labels = make_labels(sg, lg, question, ["Alice"], [dana], LLMRationaliser(llm, EncoderRationaliser(encoder)))
    listed = llm.prompts[0].split("The paths are:")[-1]
    assert "Alice -> " in listed and labels.log["source"] == "llm"
    chosen = labels.log["chains"][labels.log["chosen"][0]]
    assert len(labels.log["chosen"]) == 1 and listed.split("\n2. ")[1].split(" -> ")[1] in chosen  # the LLM's pick, whatever it is
    assert labels.log["targeted"] == ["starred actors of"]
    confused = make_labels(sg, lg, question, ["Alice"], [dana], LLMRationaliser(ScriptedLLM(["no idea", "[]"]), EncoderRationaliser(encoder)))
    assert confused.log["source"].startswith("llm→encoder") and confused.paths


def _toy_batch(sg, encoder, question="who directed the films Alice starred in"):
    lg = line_graph(sg)
    return lg, one_question_batch(lg, encoder.encode(sg.node_labels), encoder.encode(relation_texts(sg)), encoder.encode([question])[0])


def test_look_ahead_lets_later_triples_change_a_question_triples_score(toy, encoder):
    _, sg = toy
    lg, batch = _toy_batch(sg, encoder)
    changed = batch.x.clone()
    later = torch.from_numpy(lg.step == 2)
    changed[later] = torch.randn_like(changed[later])
    starts = batch.starts
    for lookahead in (True, False):
        torch.manual_seed(0)
        model = RAPL(lookahead=lookahead).eval()
        with torch.no_grad():
            before = model.start_scores(batch, *model.encode(batch))[starts]
            batch.x, original = changed, batch.x
            after = model.start_scores(batch, *model.encode(batch))[starts]
            batch.x = original
        moved = float((before - after).abs().max())
        assert (moved > 1e-4) if lookahead else (moved < 1e-6), (lookahead, moved)


def test_masking_stop_makes_decoded_paths_longer(toy, encoder):
    _, sg = toy
    _, batch = _toy_batch(sg, encoder)
    torch.manual_seed(0)
    model = RAPL()
    free = decode(model, batch, starts=10, rollouts=5, keep=100)
    forced = decode(model, batch, starts=10, rollouts=5, keep=100, allow_stop=False)
    mean = lambda walks: float(np.mean([len(w.triples) for w in walks]))  # noqa: E731
    assert mean(forced) > mean(free) and max(len(w.triples) for w in forced) == 3
    assert decode(model, batch, starts=10, rollouts=5, keep=100) == free  # seeded: the same paths again
    probabilities = [w.probability for w in free]
    assert probabilities == sorted(probabilities, reverse=True) and 0 < sum(probabilities) <= 1 + 1e-6


def test_a_model_grown_with_step_relation_decodes_as_before_and_then_learns_it(toy, encoder):
    from kgqa.methods.rapl.train import losses

    _, sg = toy
    lg, batch = _toy_batch(sg, encoder)
    torch.manual_seed(0)
    base = RAPL(dropout=0.0).eval()
    grown = base.with_step_relation()
    assert grown.config()["step_relation"] and not base.config()["step_relation"]
    assert decode(grown, batch, starts=10, keep=100) == decode(base, batch, starts=10, keep=100)
    labels = make_labels(sg, lg, "who directed the films Alice starred in", ["Alice"], [sg.node_labels.index("Dana")], EncoderRationaliser(encoder))
    start, path = losses(grown.train(), batch, [list(labels.paths[0])], [labels.positives], random.Random(0))
    (start + path).backward()
    assert float(grown.successor_mlp[2].weight.grad.abs().sum()) > 0  # the relation term gets a gradient from the path loss


def test_a_few_training_steps_lower_the_loss_on_real_metaqa_subgraphs(metaqa_full, encoder):
    from kgqa.loaders.qa import read_qa
    from kgqa.methods.kgfr.data import prepare
    from kgqa.methods.rapl.data import build_pack
    from kgqa.methods.rapl.train import losses
    from conftest import shared_data

    store, _ = metaqa_full
    examples = []
    for hop in (1, 2):
        examples += random.Random(hop).sample(read_qa(shared_data("metaqa", f"{hop}-hop", "qa_dev.txt")), 6)
    prepared = prepare(store, examples, 2, 100)
    data = build_pack(prepared, encoder, EncoderRationaliser(encoder), [False] * len(prepared), {"kg": "metaqa"})
    chosen = data.trainable().tolist()
    assert len(chosen) >= 8
    batch, paths, positives = data.batch(chosen)
    torch.manual_seed(0)
    model = RAPL(dim=64, dropout=0.0)
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)

    def loss() -> torch.Tensor:
        start, path = losses(model, batch, paths, positives, random.Random(0))
        return start + path

    first = float(loss())
    for _ in range(15):
        optimiser.zero_grad()
        value = loss()
        value.backward()
        optimiser.step()
    assert float(loss()) < 0.8 * first


def test_the_bundled_checkpoint_answers_through_the_sdk_cli_and_a_scripted_reasoner(demo_kg, tmp_path):
    import json

    from typer.testing import CliRunner

    from kgqa import Engine
    from kgqa.faces.cli import app

    store, _ = demo_kg
    with Engine(store, "rapl") as engine:
        answer = engine.ask("who directed Kismet")
        assert answer.method == "rapl" and [t["label"] for t in answer.topics] == ["Kismet"] and answer.trace.llm_calls == []
        assert answer.answers and answer.evidence.paths and answer.evidence.paths[0].startswith("Kismet -> ")
        # LLM-free: the answers are the tails of the paths, the best first
        assert answer.answers[0].label == answer.evidence.candidates[0]["label"]
        assert answer.trace.subgraph["path_triples"] >= 1 and {"line_graph", "decode"} <= set(answer.trace.seconds)
        assert engine.ask("who directed Kismet").evidence.paths == answer.evidence.paths  # seeded decoding
    reasoner = ScriptedLLM(lambda prompt: "1. " + prompt.rsplit("Reasoning paths:\n", 1)[1].split("\n")[0].split(" -> ")[-1])
    with Engine(store, "rapl", reasoner) as engine:
        reasoned = engine.ask("who directed Kismet")
    assert len(reasoner.prompts) == 1 and "Kismet -> " in reasoner.prompts[0] and "(p=" not in reasoner.prompts[0]
    assert [c.purpose for c in reasoned.trace.llm_calls] == ["rapl.answer"] and reasoned.answers[0].iri
    url = f"oxigraph://{tmp_path / 'store'}"
    from kgqa.retrieval.store_url import open_writer
    from conftest import DEMO_KG

    writer = open_writer(url, "demo")
    load_file(writer, DEMO_KG)
    writer.close()
    result = CliRunner().invoke(app, ["ask", "who directed Kismet", "--store", url, "--method", "rapl", "--paths", "5", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["method"] == "rapl" and 1 <= len(data["evidence"]["paths"]) <= 5


def test_kgqa_train_method_rapl_writes_a_checkpoint_that_ask_runs(tmp_path):
    import json

    from typer.testing import CliRunner

    from kgqa.faces.cli import app
    url = store_from_lines(tmp_path, "toy", TOY)
    qa = tmp_path / "qa.txt"
    qa.write_text("\n".join([
        "who directed [Film One]\tDana", "who directed [Film Two]\tEve", "who wrote [Film Three]\tDana",
        "who starred in [Film One]\tAlice", "who directed the films [Alice] starred in\tDana|Eve", "when was [Film Three] released\t1999",
        "which films did [Dana] direct\tFilm One", "which films did [Eve] direct\tFilm Two",
    ]) + "\n", encoding="utf-8")
    out = tmp_path / "model"
    result = CliRunner().invoke(app, ["train", str(qa), "--method", "rapl", "--store", url, "--out", str(out), "--epochs", "2",
                                      "--validation", "0.25", "--pack-out", str(tmp_path / "pack.npz"), "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 0, result.output
    config = json.loads((out / "config.json").read_text())
    assert config["format"] == "rapl/1" and len(config["history"]) == 2 and "answer_share" in config
    logged = [json.loads(line) for line in (tmp_path / "pack.labels.jsonl").read_text().splitlines()]
    assert len(logged) == 8  # one labelling record per question
    assert all(len(r["support"]) == len(r["chains"]) for r in logged if r.get("chains"))  # similar questions were asked
    assert config["train"]["split"]["neighbours"] == 30 and config["data"]["question_text"] == "masked"
    asked = CliRunner().invoke(app, ["ask", "who directed Film One", "--store", url, "--method", "rapl", "--checkpoint", str(out), "--json"])
    assert asked.exit_code == 0, asked.output
    assert json.loads(asked.stdout)["evidence"]["paths"]
    assert config["model"]["step_relation"]  # the default for new training
    narrower = CliRunner().invoke(app, ["train", "--method", "rapl", "--pack", str(tmp_path / "pack.npz"), "--init", str(out), "--no-step-relation",
                                        "--out", str(tmp_path / "narrower")])
    assert narrower.exit_code == 2 and "step_relation" in narrower.output and not (tmp_path / "narrower" / "model.safetensors").exists()
    alone = CliRunner().invoke(app, ["train", str(qa), "--method", "rapl", "--store", url, "--validation", "0.25", "--label-neighbours", "0",
                                     "--pack-out", str(tmp_path / "alone.npz"), "--cache-dir", str(tmp_path / "cache")])
    assert alone.exit_code == 0, alone.output
    assert not any("support" in json.loads(line) for line in (tmp_path / "alone.labels.jsonl").read_text().splitlines())
    wrong = CliRunner().invoke(app, ["train", "--method", "rapl", "--pack", str(tmp_path / "nothing.npz"), "--out", str(out)])
    assert wrong.exit_code != 0 and "nothing.npz" in wrong.output
