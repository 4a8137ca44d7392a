"""GraSP: the question-relevant subgraph (eq. 1), selector targets, the GNN + FFN trained through the
frozen Gemma selector (eq. 9), soft tokens that move its logits, the two-stage rounds (eq. 7–8) and
the incomplete-KG copy. Gemma's weights are the session's shared fixture; answer LLMs are scripted."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from kgqa import retrieve
from kgqa.core.subgraph import Subgraph
from kgqa.llm.local import TransformersLLM
from kgqa.eval.report import evaluate
from kgqa.loaders import load_file
from kgqa.loaders.qa import QAExample
from kgqa.methods.grasp.answer import GraspAnswerer, GraspSettings, parse_decision
from kgqa.methods.grasp.data import Example, focus_input, load_pack, save_pack
from kgqa.methods.grasp.focus import FocusGraph, focus
from kgqa.methods.grasp.gnn import GraphSoftPrompt
from kgqa.methods.grasp.labels import farthest, named, selection_target
from kgqa.methods.grasp.selector import Selector
from kgqa.methods.grasp.train import GraspTrainConfig, save_checkpoint, train
from kgqa.retrieval.entity_vectors import EntityVectors
from kgqa.retrieval.text import TextEncoder
from kgqa.sparql.embedded import EmbeddedWriter
from conftest import store_from_lines
from scripted_llm import ScriptedLLM, ScriptedScorer

TOY = [
    "Film One|starred_actors|Alice", "Film Two|starred_actors|Alice", "Film One|directed_by|Dana",
    "Film Two|directed_by|Eve", "Film Three|written_by|Dana", "Film Three|release_year|1999",
    "Alice|employed_by|Studio", "Studio|employs|Frank",
]


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    path = tmp_path_factory.mktemp("grasp") / "toy.txt"
    path.write_text("\n".join(TOY) + "\n", encoding="utf-8")
    writer = EmbeddedWriter.open(None, "toy")
    load_file(writer, path)
    return writer.reader(), path


@pytest.fixture(scope="module")
def encoder():
    return TextEncoder()


@pytest.fixture(scope="module")
def selector(gemma_weights):
    return Selector(loaded=gemma_weights)


def _toy_input(store, encoder, question="who directed the films Alice starred in", per_hop=(5, 5)):
    [alice] = store.resolve(["Alice"])["Alice"]
    sg = retrieve(store, [alice.entity.iri], hops=len(per_hop), lam=100)
    fg, graph = focus_input(sg, encoder.encode([question])[0], EntityVectors(store, encoder), encoder, list(per_hop))
    return sg, fg, graph


def _hand_subgraph() -> Subgraph:
    # topic 0 —r0→ 1, 2, 3 (hop 1); 1 —r1→ 4, 2 —r1→ 5 (hop 2); relation vectors decide the ranking
    return Subgraph(nodes=[f"e{i}" for i in range(6)], node_labels=[f"E{i}" for i in range(6)], node_hop=np.array([0, 1, 1, 1, 2, 2], np.int8),
                    topics=np.array([0]), relations=["r0", "r1"], relation_labels=["r0", "r1"],
                    edge_index=np.array([[0, 0, 0, 1, 2], [1, 2, 3, 4, 5]]), edge_type=np.array([0, 0, 0, 2, 2]),
                    edge_hop=np.array([1, 1, 1, 2, 2], np.int8), hops=2, lam=100)


def test_focus_keeps_the_top_k_per_hop_by_relevance_to_the_question():
    sg = _hand_subgraph()
    q = np.array([1.0, 0.0])
    nodes = np.array([[1, 0], [0.9, 0.1], [0.1, 0.9], [0.5, 0.5], [0.2, 0.8], [0.95, 0.05]])
    nodes = nodes / np.linalg.norm(nodes, axis=1, keepdims=True)
    relations = np.array([[0, 1], [0, 1], [0, 1], [0, 1]], float)
    fg = focus(sg, q, nodes, relations, [2, 1])
    assert fg.nodes.tolist() == [0, 1, 3, 4]  # hop 1: E1, E3 beat E2; hop 2: only E4 hangs off a kept entity (E5's E2 was cut)
    assert fg.hop.tolist() == [0, 1, 1, 2]
    assert sorted(map(tuple, fg.edge_index.T.tolist())) == [(0, 1), (0, 2), (1, 3)]
    wide = focus(sg, q, nodes, relations, [3, 3])
    assert set(wide.nodes.tolist()) == set(range(6)) and wide.edge_index.shape[1] == 5


def test_targets_are_the_answers_for_one_hop_and_the_shortest_path_entities_before_them_for_more():
    fg = FocusGraph(nodes=np.arange(5), hop=np.array([0, 1, 1, 2, 2]), score=np.array([np.inf, 0.5, 0.4, 0.3, 0.2], np.float32),
                    edge_index=np.array([[0, 0, 1, 2], [1, 2, 3, 4]]), edge_type=np.zeros(4, np.int64))
    assert selection_target(fg, [1]) == [1]
    assert selection_target(fg, [3]) == [1, 3]  # the way (1) first, then the answer
    assert selection_target(fg, [3, 4]) == [1, 2, 3, 4]
    assert selection_target(fg, [7]) is None  # not in the focus graph: nothing to train on
    assert named(["e3", "E1", "nobody"], ["E0", "E1", "E2", "E3"]) == [3, 1]
    assert farthest([1, 3, 0], fg.hop) == [3]


def test_the_gnn_and_ffn_get_gradients_through_frozen_gemma_and_soft_tokens_move_its_logits(toy, encoder, selector):
    store, _ = toy
    sg, fg, graph = _toy_input(store, encoder)
    assert "Dana" in graph.names and "Eve" in graph.names
    torch.manual_seed(0)
    model = GraphSoftPrompt(layers=2, llm_dim=selector.width)
    soft = model(*graph.tensors())
    assert soft.shape == (len(graph.names), selector.width)
    given = selector.inputs("who directed the films Alice starred in", graph.names, soft)
    assert given.soft_tokens == len(graph.names)
    loss = selector.loss(given, "Film One; Film Two; Dana; Eve")
    loss.backward()
    for name, p in model.named_parameters():
        if not name.startswith("probe."):  # the training aid, not on the way to the LLM
            assert p.grad is not None and float(p.grad.abs().sum()) > 0, name
    assert all(p.grad is None for p in selector.lm.parameters())  # the LLM stays frozen
    question = "who directed the films Alice starred in"
    with torch.no_grad():
        base = selector.next_token_logits(given)
        moved = selector.next_token_logits(selector.inputs(question, graph.names, soft + torch.randn_like(soft)))
        without = selector.next_token_logits(selector.inputs(question, graph.names, None, mode="none"))
    assert not torch.allclose(base, moved, atol=1e-3)
    assert not torch.allclose(base, without, atol=1e-3)


def test_a_few_steps_on_one_question_lower_the_selector_loss(toy, encoder, selector, tmp_path):
    store, _ = toy
    _, fg, graph = _toy_input(store, encoder)
    target = [graph.names.index("Dana"), graph.names.index("Eve")]
    ex = Example("q1", "who directed the films Alice starred in", 2, graph, target, ["Dana", "Eve"], False)
    config = GraspTrainConfig(layers=2, lr=1e-2, accumulate=1, epochs=12, save_every=1, max_validation=0)
    result = train([ex], config, tmp_path / "ck", log=lambda line: None, selector=selector)
    losses = [h["loss"] for h in result["history"] if "loss" in h]
    assert len(losses) == 12 and losses[-1] < 0.8 * losses[0], losses
    assert (tmp_path / "ck" / "encoder.safetensors").exists()


def test_a_pack_stores_each_distinct_vector_row_once_and_loads_what_was_packed(toy, encoder, tmp_path):
    store, _ = toy
    graphs = [_toy_input(store, encoder, q)[2] for q in ("who directed the films Alice starred in", "where does Alice work")]
    examples = [Example(f"q{i}", "q", 2, g, [0], ["Dana"], i == 1) for i, g in enumerate(graphs)]
    save_pack(examples, {"kg": "toy"}, tmp_path / "pack.pt")
    saved = torch.load(tmp_path / "pack.pt", weights_only=False)
    assert len(saved["tables"]["entities"]) < sum(len(g.entities) for g in graphs)  # both questions' graphs share Alice's neighbours
    loaded, meta = load_pack(tmp_path / "pack.pt")
    assert meta == {"kg": "toy"} and [e.qid for e in loaded] == ["q0", "q1"] and loaded[1].validation
    for before, after in zip(graphs, (e.graph for e in loaded)):
        assert after.names == before.names and np.array_equal(after.edge_index, before.edge_index)
        for field in ("entities", "relations"):
            assert after.__dict__[field].dtype == np.float16 and np.array_equal(after.__dict__[field], before.__dict__[field].astype(np.float16))
    assert graphs[0].entities.dtype == np.float32  # saving leaves the caller's examples as they were
    torch.save({"format": "grasp-pack/1", "meta": {}, "examples": examples}, tmp_path / "old.pt")
    assert np.array_equal(load_pack(tmp_path / "old.pt")[0][0].graph.entities, graphs[0].entities)
    torch.save({"format": "grasp-ckpt", "examples": []}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="other.pt: not a GraSP pack .*'grasp-ckpt'"):
        load_pack(tmp_path / "other.pt")


def test_training_goes_on_from_its_checkpoint_where_it_stopped(toy, encoder, selector, tmp_path):
    store, _ = toy
    _, fg, graph = _toy_input(store, encoder)
    target = [graph.names.index("Dana"), graph.names.index("Eve")]
    examples = [Example(f"q{i}", "who directed the films Alice starred in", 2, graph, target, ["Dana", "Eve"], False) for i in range(4)]
    config = GraspTrainConfig(layers=2, accumulate=1, epochs=1, save_every=1, max_validation=0)
    first = train(examples, config, tmp_path / "ck", log=lambda line: None, selector=selector, max_steps=3)
    saved = json.loads((tmp_path / "ck" / "config.json").read_text())
    assert saved["progress"] == {"epoch": 0, "position": 3, "questions": 3} and not first["finished"]
    again = train(examples, dataclasses.replace(config, init=str(tmp_path / "ck")), tmp_path / "ck", log=lambda line: None, selector=selector)
    assert again["finished"] and again["questions_seen"] == 4  # one question left of the epoch, not four more
    assert [h["questions"] for h in again["history"] if "loss" in h] == [1, 2, 3, 4]  # the first run's history goes on
    assert "device" not in saved["train"]  # where it trained is not part of the model
    other = train(examples, dataclasses.replace(config, init=str(tmp_path / "ck")), tmp_path / "other", log=lambda line: None,
                  selector=selector, max_steps=2)  # another checkpoint's weights start an epoch of their own
    assert (other["questions_seen"], other["finished"]) == (2, False)
    assert [h["questions"] for h in other["history"] if "loss" in h] == [1, 2]


def _soft_positions(given, soft, selector) -> list[int]:
    rows = torch.nn.functional.normalize(soft, dim=-1) * selector.text_norm
    return [p for p in range(given.embeds.shape[1]) if any(torch.allclose(given.embeds[0, p], r, atol=1e-4) for r in rows)]


def test_interleaved_soft_tokens_follow_each_name_and_a_checkpoint_remembers_its_layout(toy, encoder, selector, tmp_path):
    store, _ = toy
    _, fg, graph = _toy_input(store, encoder)
    question = "who directed the films Alice starred in"
    soft = torch.randn(len(graph.names), selector.width)
    after = selector.inputs(question, graph.names, soft)
    mixed = selector.inputs(question, graph.names, soft, layout="interleaved")
    names_only = selector.inputs(question, graph.names, None, mode="none")
    k = len(graph.names)
    block = _soft_positions(after, soft, selector)
    assert block == list(range(block[0], block[0] + k))  # eq. 6: one block after the names
    spread = _soft_positions(mixed, soft, selector)
    assert len(spread) == k and all(b - a > 1 for a, b in zip(spread, spread[1:]))  # a name's tokens between two soft tokens
    assert mixed.text_tokens == names_only.text_tokens and mixed.soft_tokens == k
    with pytest.raises(ValueError, match="layout must be one of after, interleaved"):
        selector.inputs(question, graph.names, soft, layout="sideways")
    target = [graph.names.index("Dana"), graph.names.index("Eve")]
    ex = Example("q1", question, 2, graph, target, ["Dana", "Eve"], False)
    config = GraspTrainConfig(layers=2, accumulate=1, epochs=2, save_every=1, max_validation=0, layout="interleaved", probe_weight=1.0)
    result = train([ex], config, tmp_path / "ck", log=lambda line: None, selector=selector)
    assert all("probe" in h for h in result["history"] if "loss" in h)  # both losses are logged
    assert json.loads((tmp_path / "ck" / "config.json").read_text())["selector"]["layout"] == "interleaved"
    train([ex], GraspTrainConfig(layers=2, epochs=3, max_validation=0, init=str(tmp_path / "ck")), tmp_path / "ck", log=lambda line: None,
          selector=selector)  # going on without naming a layout keeps the checkpoint's
    assert json.loads((tmp_path / "ck" / "config.json").read_text())["selector"]["layout"] == "interleaved"
    assert GraspAnswerer(store, tmp_path / "ck", encoder=encoder, selector=selector).layout == "interleaved"


def test_the_probe_loss_reaches_the_gnn_and_checkpoints_from_before_the_probe_still_load(toy, encoder, selector, checkpoint, tmp_path):
    from safetensors.torch import load_file, save_file

    from kgqa.methods.grasp.train import load_checkpoint, probe_loss

    store, _ = toy
    _, fg, graph = _toy_input(store, encoder)
    model = GraphSoftPrompt(layers=2, llm_dim=selector.width)
    _, logits = model.encode(*graph.tensors())
    probe_loss(logits, [graph.names.index("Dana")]).backward()
    assert float(model.layers[0].transform.weight.grad.abs().sum()) > 0 and float(model.entity_in.weight.grad.abs().sum()) > 0
    weights = load_file(checkpoint / "encoder.safetensors")
    old = tmp_path / "old"
    old.mkdir()
    saved = json.loads((checkpoint / "config.json").read_text())
    del saved["selector"]["layout"]  # written before the choice
    (old / "config.json").write_text(json.dumps(saved))
    save_file({k: v for k, v in weights.items() if not k.startswith("probe.")}, old / "encoder.safetensors")
    loaded, _, _ = load_checkpoint(old, selector=selector)
    assert torch.equal(loaded.to_llm[0].weight, weights["to_llm.0.weight"])
    assert GraspAnswerer(store, old, encoder=encoder, selector=selector).layout == "after"
    save_file({**weights, "extra.weight": torch.zeros(1)}, old / "encoder.safetensors")
    with pytest.raises(ValueError, match="old: encoder weights do not fit the model .*extra.weight"):
        load_checkpoint(old, selector=selector)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error on a machine without CUDA")
def test_training_on_cuda_without_a_gpu_fails_at_once_naming_the_device(tmp_path):
    with pytest.raises(ValueError, match="'cuda'.*no CUDA device"):
        train([], GraspTrainConfig(device="cuda"), tmp_path / "ck", log=lambda line: None)
    assert not (tmp_path / "ck").exists()


@pytest.fixture(scope="module")
def checkpoint(selector, tmp_path_factory):
    out = tmp_path_factory.mktemp("grasp-ck")
    torch.manual_seed(0)
    save_checkpoint(GraphSoftPrompt(layers=2, llm_dim=selector.width), selector, GraspTrainConfig(layers=2, data={"hops": 2, "lambda": 100}),
                    out, {}, [])
    return out


def test_the_trace_shows_a_select_call_with_soft_tokens_then_a_text_answer_call(toy, encoder, selector, checkpoint):
    store, _ = toy
    llm = ScriptedLLM([" ANSWER: Dana; Eve"])
    answerer = GraspAnswerer(store, checkpoint, encoder, selector=selector).with_options(GraspSettings(hops=2), llm)
    result = answerer.answer("who directed the films Alice starred in")
    calls = result.trace.llm_calls
    assert [c.purpose for c in calls] == ["grasp.select.r1", "grasp.answer.r1"]
    assert calls[0].provider == "transformers" and "(soft)" in calls[0].model
    assert result.trace.subgraph["rounds"][0]["soft_tokens"] == result.trace.subgraph["rounds"][0]["entities"] > 1
    assert calls[0].prompt_tokens > result.trace.subgraph["soft_tokens"]
    assert "Question: who directed the films Alice starred in" in llm.prompts[0] and "Selected:" in llm.prompts[0]
    assert sorted(a.label for a in result.answers) == ["Dana", "Eve"]
    assert result.to_json()["trace"]["llm"]["calls"] == 2


def test_an_entity_decision_retrieves_around_it_and_the_round_bound_holds(toy, encoder, selector, checkpoint):
    store, _ = toy
    moved = ScriptedLLM([" ENTITY: Dana", " ANSWER: Film Three"])
    answerer = GraspAnswerer(store, checkpoint, encoder, selector=selector)
    result = answerer.with_options(GraspSettings(hops=1, rounds=3), moved).answer("what did the director of Film One write", ["Film One"])
    rounds = result.trace.subgraph["rounds"]
    [dana] = store.resolve(["Dana"])["Dana"]
    assert len(rounds) == 2 and rounds[1]["around"] == [dana.entity.iri] and rounds[0]["decision"]["kind"] == "entity"
    assert [a.label for a in result.answers] == ["Film Three"]
    assert "Evidence:\nSelected:" in moved.prompts[1] and moved.prompts[1].count("Selected:") == 2  # both rounds' evidence
    replay = answerer.with_options(GraspSettings(hops=1, rounds=3), ScriptedLLM([" ENTITY: Dana", " ANSWER: Film Three"]))
    [row] = evaluate(replay.answer, store, [QAExample("q1", "what did the director of Film One write", ("Film Three",), ("Film One",), 2)],
                     gold_topics=True)["rows"]
    assert row["hits1"] and [r["decision"]["kind"] for r in row["rounds"]] == ["entity", "answer"]  # the eval row keeps each round

    stubborn = ScriptedLLM(lambda prompt: " ENTITY: Film Two" if "Film Two" not in prompt.split("Evidence:")[-1] else " ENTITY: Eve")
    capped = answerer.with_options(GraspSettings(hops=1, rounds=2), stubborn).answer("who directed Film One", ["Film One"])
    purposes = [c.purpose for c in capped.trace.llm_calls]
    assert purposes == ["grasp.select.r1", "grasp.answer.r1", "grasp.select.r2", "grasp.answer.r2"]
    assert "last round" in stubborn.prompts[-1] and "last round" not in stubborn.prompts[0]


def test_gemma_as_the_answer_llm_scores_the_replies_the_evidence_allows(toy, encoder, selector, checkpoint, gemma_weights):
    store, _ = toy
    gemma = TransformersLLM(loaded=gemma_weights)
    answerer = GraspAnswerer(store, checkpoint, encoder, selector=selector)
    result = answerer.with_options(GraspSettings(hops=2, rounds=1), gemma).answer("who directed the films Alice starred in", ["Alice"])
    decision = result.trace.subgraph["rounds"][0]["decision"]
    assert decision["how"] == "likelihood" and [c.purpose for c in result.trace.llm_calls] == ["grasp.select.r1", "grasp.answer.r1"]
    best = [b["logprob"] for b in decision["best"]]
    assert best == sorted(best, reverse=True) and all(b["reply"].startswith("ANSWER: ") for b in decision["best"])  # last round: no ENTITY
    assert result.answers and result.text == f"ANSWER: {result.answers[0].label}" and result.trace.fallback is None
    assert all(a.label in result.evidence.outline and a.label != "Alice" for a in result.answers)
    written = answerer.with_options(GraspSettings(hops=2, rounds=1, choose="generate"), gemma).answer(
        "who directed the films Alice starred in", ["Alice"])
    assert "how" not in written.trace.subgraph["rounds"][0]["decision"] and written.trace.llm_calls[1].completion_tokens > 0


def test_a_scored_entity_reply_moves_retrieval_and_answers_near_the_best_one_join_it(toy, encoder, selector, checkpoint):
    store, _ = toy

    def score(prompt: str, reply: str) -> float:
        if prompt.count("Selected:") == 1:  # round 1: explore whichever entity may be explored
            return 0.0 if reply.startswith(" ENTITY") else -1.0
        answers = [c for c in scorer.scored[-1][1] if c.startswith(" ANSWER: ")]
        return {answers[0]: -1.0, answers[1]: -2.0}.get(reply, -9.0)  # the second is 2.7× less likely: it joins

    scorer = ScriptedScorer(score)
    answerer = GraspAnswerer(store, checkpoint, encoder, selector=selector).with_options(GraspSettings(hops=1, rounds=2), scorer)
    result = answerer.answer("what did the director of Film One write", ["Film One"])
    rounds = result.trace.subgraph["rounds"]
    assert len(rounds) == 2 and rounds[0]["decision"]["kind"] == "entity"
    [explored] = store.resolve([rounds[0]["decision"]["text"]])[rounds[0]["decision"]["text"]]
    assert rounds[1]["around"] == [explored.entity.iri]
    offered = [c.removeprefix(" ANSWER: ") for c in scorer.scored[1][1] if c.startswith(" ANSWER: ")]
    assert [a.label for a in result.answers] == offered[:2] and "Film One" not in offered
    assert not any(c.startswith(" ENTITY: ") for c in scorer.scored[1][1])  # the last round must answer
    assert [c.purpose for c in result.trace.llm_calls] == ["grasp.select.r1", "grasp.answer.r1", "grasp.select.r2", "grasp.answer.r2"]


def test_the_bare_decision_word_decides_before_the_names_are_ranked(toy, encoder, selector, checkpoint):
    store, _ = toy
    scores = {" ANSWER": -0.5, " ENTITY": -3.0}
    scorer = ScriptedScorer(lambda prompt, reply: scores.get(reply, -0.1 if reply.startswith(" ENTITY: ") else -2.0))
    answerer = GraspAnswerer(store, checkpoint, encoder, selector=selector).with_options(GraspSettings(hops=1, rounds=2), scorer)
    result = answerer.answer("what did the director of Film One write", ["Film One"])
    [decision] = [r["decision"] for r in result.trace.subgraph["rounds"]]
    assert decision["kind"] == "answer" and decision["words"] == {"ANSWER": -0.5, "ENTITY": -3.0}
    assert decision["best"][0]["reply"].startswith("ENTITY: ")  # the likeliest whole reply explores; the decision word answers
    assert result.answers and result.text == f"ANSWER: {decision['text']}" and result.trace.fallback is None
    scores.update({" ANSWER": -3.0, " ENTITY": -0.5})
    moved = answerer.answer("what did the director of Film One write", ["Film One"])
    assert moved.trace.subgraph["rounds"][0]["decision"]["kind"] == "entity" and len(moved.trace.subgraph["rounds"]) == 2


def test_without_an_answer_llm_the_answer_is_the_farthest_selected_entities(toy, encoder, selector, checkpoint):
    store, _ = toy
    result = GraspAnswerer(store, checkpoint, encoder, selector=selector).with_options(GraspSettings(hops=2), None).answer(
        "who directed the films Alice starred in")
    assert [c.purpose for c in result.trace.llm_calls] == ["grasp.select.r1"]
    selected = result.trace.subgraph["rounds"][0]["selected"]
    assert {a.label for a in result.answers} <= set(selected)
    assert (not result.answers) == (result.declined is not None)


def test_decisions_are_read_like_the_authors_parser():
    assert parse_decision(" ENTITY\nEntity: Dana").kind == "entity"
    assert (parse_decision(" ANSWER\nAnswer: Dana; Eve").kind, parse_decision(" ANSWER\nAnswer: Dana; Eve").text) == ("answer", "Dana; Eve")
    assert parse_decision("Dana").text == "Dana"  # no decision word: an answer
    assert parse_decision(" ENTITY but no name").kind == "answer"
    assert parse_decision("Decision: ENTITY\nEntity: Dana").text == "Dana"
    assert parse_decision("Decision: ANSWER\nAnswer: Film Three").text == "Film Three"
    assert parse_decision("Answer:\nAnswer:\nAnswer").text == ""  # a degenerate reply names nothing
    assert (parse_decision(" ENTITY: Michael Mann").kind, parse_decision(" ANSWER: Mandarin; Cantonese").text) == ("entity", "Mandarin; Cantonese")


def test_the_incomplete_copy_drops_the_share_of_each_gold_topics_facts_and_nothing_else(toy, tmp_path):
    from kgqa.eval.incomplete import gold_topic_iris, incomplete_store
    from kgqa.loaders.qa import QAExample
    from kgqa.retrieval.store_url import open_store

    store, path = toy
    questions = [QAExample("1", "who starred in Film One", ("Alice",), ("Film One",)), QAExample("2", "x", ("y",), ("Dana",))]
    topics = gold_topic_iris(store, questions)
    assert len(topics) == 2
    url = incomplete_store([path], "toy", topics, 0.5, 3, tmp_path)
    again = incomplete_store([path], "toy", topics, 0.5, 3, tmp_path)
    assert again == url
    dropped = [line.split("\t") for line in (next(tmp_path.glob("incomplete-*")) / "dropped.tsv").read_text().splitlines()]
    # Film One has 2 facts, Dana 2 (one shared): each loses ⌊0.5 × 2 + u⌋ = 1
    assert 1 <= len(dropped) <= 2 and all("Film One" in (d[2], d[4]) or "Dana" in (d[2], d[4]) for d in dropped)
    copy = open_store(url, "toy")
    assert copy.counts().facts == len(TOY) - len(dropped)
    other = incomplete_store([path], "toy", topics, 0.5, 4, tmp_path)
    assert other != url
    with pytest.raises(ValueError, match="between 0 and 1"):
        incomplete_store([path], "toy", topics, 1.0, 3, tmp_path)


def test_topics_with_few_facts_lose_their_share_on_average_and_a_larger_share_deletes_more_of_the_same(tmp_path):
    from kgqa.core.namespace import KGNamespace
    from kgqa.eval.incomplete import incomplete_store

    path = tmp_path / "few.txt"  # 300 topics of 3 facts each: rounding 0.1 × 3 would delete none of them
    path.write_text("".join(f"Film {i}|{r}|Person {i}-{r}\n" for i in range(300) for r in ("directed_by", "written_by", "starred_actors")))
    ns = KGNamespace("few")
    topics = {ns.entity(f"Film {i}") for i in range(300)}

    def dropped(ratio: float) -> set[str]:
        folder = Path(incomplete_store([path], "few", topics, ratio, 0, tmp_path).removeprefix("oxigraph://")).parent
        return {line.split("\t")[1] for line in (folder / "dropped.tsv").read_text().splitlines()}

    tenth, quarter = dropped(0.1), dropped(0.25)
    assert 60 <= len(tenth) <= 120  # 90 expected of 900
    assert 170 <= len(quarter) <= 280  # 225 expected
    assert tenth < quarter


def test_runs_that_need_the_same_incomplete_copy_at_once_build_it_once(toy, tmp_path):
    import threading

    from kgqa.eval.incomplete import gold_topic_iris, incomplete_store
    from kgqa.loaders.qa import QAExample
    from kgqa.retrieval.store_url import open_store

    store, path = toy
    topics = gold_topic_iris(store, [QAExample("1", "who starred in Film One", ("Alice",), ("Film One",))])
    building, release, waited = threading.Event(), threading.Event(), threading.Event()
    lines: dict[str, list[str]] = {"first": [], "second": []}
    urls: dict[str, str] = {}

    def first_progress(line: str) -> None:  # holds the first build open until the second run waits
        lines["first"].append(line)
        building.set()
        release.wait(30)

    def second_progress(line: str) -> None:
        lines["second"].append(line)
        waited.set()

    def run(name: str, progress) -> None:  # type: ignore[no-untyped-def]
        urls[name] = incomplete_store([path], "toy", topics, 0.5, 3, tmp_path, progress=progress)

    first = threading.Thread(target=run, args=("first", first_progress))
    first.start()
    assert building.wait(30)
    second = threading.Thread(target=run, args=("second", second_progress))
    second.start()
    assert waited.wait(30), "the second run neither waited nor reported it"
    release.set()
    first.join(60)
    second.join(60)
    assert urls["first"] == urls["second"]
    assert any(line.startswith("dropping") for line in lines["first"])
    assert [line.split(" ")[0] for line in lines["second"]] == ["waiting"]  # it reused the copy, not rebuilt it
    dropped = (next(tmp_path.glob("incomplete-*")) / "dropped.tsv").read_text().splitlines()
    assert open_store(urls["first"], "toy").counts().facts == len(TOY) - len(dropped)


def test_kgqa_train_method_grasp_writes_a_checkpoint_that_ask_and_the_sdk_run(tmp_path):
    import json

    from typer.testing import CliRunner

    from kgqa import Engine
    from kgqa.faces.cli import app
    url = store_from_lines(tmp_path, "toy", TOY)
    qa = tmp_path / "qa.txt"
    qa.write_text("\n".join([
        "who directed [Film One]\tDana", "who directed [Film Two]\tEve", "who wrote [Film Three]\tDana",
        "who starred in [Film One]\tAlice", "who directed the films [Alice] starred in\tDana|Eve", "when was [Film Three] released\t1999",
    ]) + "\n", encoding="utf-8")
    out = tmp_path / "model"
    result = CliRunner().invoke(app, ["train", str(qa), "--method", "grasp", "--store", url, "--out", str(out), "--epochs", "1", "--hops", "2",
                                      "--validation", "0.2", "--pack-out", str(tmp_path / "pack.pt"), "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 0, result.output
    config = json.loads((out / "config.json").read_text())
    assert config["format"] == "grasp/1" and config["model"]["layers"] == 2 and config["progress"]["epoch"] == 1
    assert "validation" in config["history"][-1] and (tmp_path / "pack.pt").exists()
    asked = CliRunner().invoke(app, ["ask", "who directed Film One", "--store", url, "--method", "grasp", "--checkpoint", str(out), "--json"])
    assert asked.exit_code == 0, asked.output
    data = json.loads(asked.stdout)
    assert data["method"] == "grasp" and [c["purpose"] for c in data["trace"]["llm_calls"]] == ["grasp.select.r1"]
    assert data["trace"]["subgraph"]["rounds"][0]["soft_tokens"] >= 2
    with Engine(url, "grasp", checkpoint=out, kg="toy", selector_input="triples") as engine:
        answer = engine.ask("who directed Film One")
    assert "(triples)" in answer.trace.llm_calls[0].model and answer.trace.subgraph["soft_tokens"] == 0
    wrong = CliRunner().invoke(app, ["train", "--method", "grasp", "--pack", str(tmp_path / "nothing.pt"), "--out", str(out)])
    assert wrong.exit_code != 0 and "nothing.pt" in wrong.output
