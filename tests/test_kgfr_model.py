"""The KGFR scorer: each equation's shapes, one hand-computed α and score, eq. 9, and a few real
training steps on MetaQA subgraphs from the demo store in which the loss falls."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from kgqa import retrieve
from kgqa.methods.kgfr.model import KGFR, KGFRBatch, kgfr_loss, segment_logsumexp
from kgqa.methods.kgfr.batch import make_batch
from kgqa.methods.kgfr.data import locate_answers
from kgqa.retrieval.text import TextEncoder


def _tiny_batch() -> KGFRBatch:
    """Two nodes, topic 0, one fact (0, r, 1) reached at hop 1, and its reverse (1, r⁻¹, 0)."""
    return KGFRBatch(
        edge_index=torch.tensor([[0, 1], [1, 0]]),
        edge_type=torch.tensor([0, 1]),
        edge_hop=torch.tensor([1, 1]),
        relation_text=torch.tensor([[0.5, -1.0], [0.2, 0.3]]),
        relation_graph=torch.tensor([0, 0]),
        node_graph=torch.tensor([0, 0]),
        topic_mask=torch.tensor([True, False]),
        question=torch.tensor([[1.0, 2.0]]),
        answer_mask=torch.tensor([False, True]),
    )


def test_alpha_and_score_match_a_hand_computation():
    model = KGFR(text_dim=2, layers=1, attn_dim=1)
    layer = model.layers[0]
    a, b, c, d, e, f, w, u, v = 0.3, -0.2, 0.7, 0.1, 0.05, 0.4, 1.5, 2.0, -1.0
    with torch.no_grad():
        layer.w1.weight.copy_(torch.tensor([[1.0, 0, 0, 0], [0, 1.0, 0, 0]]))  # r' = r
        layer.w2.weight.copy_(torch.eye(2))
        layer.w3.weight.fill_(w)
        layer.w4.weight.copy_(torch.tensor([[a, b]]))
        layer.w5.weight.copy_(torch.tensor([[c, d]]))
        layer.w6.weight.copy_(torch.tensor([[e, f]]))
        model.w7.weight.copy_(torch.tensor([[u, v]]))
    scores, attention = model(_tiny_batch(), keep_attention=True)
    sigmoid = lambda x: 1 / (1 + math.exp(-x))  # noqa: E731
    q = e * 1 + f * 2
    alpha_fwd = sigmoid(w * max(0.0, (a + b) + (0.5 * c - 1.0 * d) + q))  # s = 1_d, r = (0.5, -1)
    alpha_rev = sigmoid(w * max(0.0, 0.0 + (0.2 * c + 0.3 * d) + q))  # s = 0_d, r⁻¹ = (0.2, 0.3)
    assert attention[0].tolist() == pytest.approx([alpha_fwd, alpha_rev], rel=1e-5)
    # node 1: α (s + r) = α (1.5, 0); node 0: α' (0 + r⁻¹); c = W7 e (eq. 8)
    assert scores.tolist() == pytest.approx([alpha_rev * (0.2 * u + 0.3 * v), alpha_fwd * 1.5 * u], rel=1e-5)


def test_product_message_and_leaky_gate_match_a_hand_computation():
    """The deviations the bundled checkpoint uses (message α(s ⊙ r)) or may use (leaky ReLU in eq. 5)."""
    model = KGFR(text_dim=2, layers=1, attn_dim=1, message="product", attn_act="leaky_relu")
    layer = model.layers[0]
    with torch.no_grad():
        layer.w1.weight.copy_(torch.tensor([[1.0, 0, 0, 0], [0, 1.0, 0, 0]]))  # r' = r
        layer.w2.weight.copy_(torch.eye(2))
        layer.w3.weight.fill_(1.0)
        layer.w4.weight.copy_(torch.tensor([[-1.0, -1.0]]))  # a negative gate input: leaky, not zero
        layer.w5.weight.zero_()
        layer.w6.weight.zero_()
        model.w7.weight.copy_(torch.tensor([[2.0, -1.0]]))
    scores, attention = model(_tiny_batch(), keep_attention=True)
    sigmoid = lambda x: 1 / (1 + math.exp(-x))  # noqa: E731
    alpha_fwd, alpha_rev = sigmoid(0.2 * -2.0), sigmoid(0.0)  # leaky_relu(-2) = -0.4; s = 0 for the reverse edge
    assert attention[0].tolist() == pytest.approx([alpha_fwd, alpha_rev], rel=1e-5)
    # node 1 gets α (1_d ⊙ r) = α (0.5, -1); node 0 gets α' (0_d ⊙ r⁻¹) = 0: an unreached node sends nothing
    assert scores.tolist() == pytest.approx([0.0, alpha_fwd * (2.0 * 0.5 + 1.0)], rel=1e-5)
    with pytest.raises(ValueError, match="message"):
        KGFR(text_dim=2, message="concat")


def test_progressive_propagation_uses_only_facts_within_i_hops():
    batch = _tiny_batch()
    batch.edge_hop = torch.tensor([2, 2])  # reached at hop 2: layer 1 must not see it
    model = KGFR(text_dim=2, layers=2, attn_dim=1)
    _, attention = model(batch, keep_attention=True)
    assert [a.numel() for a in attention] == [0, 2]


def test_loss_is_equation_9():
    batch = _tiny_batch()
    scores = torch.tensor([1.0, 3.0])
    expected = math.log(math.exp(1) + math.exp(3)) - 3.0
    assert float(kgfr_loss(scores, batch)) == pytest.approx(expected)
    seg = segment_logsumexp(torch.tensor([1.0, 2.0, 5.0]), torch.tensor([0, 0, 2]), 3)
    assert seg[0] == pytest.approx(math.log(math.exp(1) + math.exp(2))) and seg[2] == pytest.approx(5.0) and seg[1] == float("-inf")


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    return TextEncoder(cache_dir=tmp_path_factory.mktemp("text-cache"))


def test_shapes_on_real_subgraphs_and_loss_falls(demo_kg, encoder):
    store, _ = demo_kg
    questions = [("who directed Kismet", "Kismet", ["William Dieterle"]), ("what language is Kismet in", "Kismet", ["English"])]
    subgraphs, answers = [], []
    for _, topic, gold in questions:
        sg = retrieve(store, [store.resolve([topic])[topic][0].entity.iri], hops=2, lam=100)
        subgraphs.append(sg)
        answers.append(locate_answers(sg, gold))
    assert all(answers)
    qv = encoder.encode([q for q, _, _ in questions])
    batch = make_batch(subgraphs, qv, encoder, answers)
    n = sum(sg.num_nodes for sg in subgraphs)
    assert batch.edge_index.shape == (2, 2 * sum(sg.num_edges for sg in subgraphs))
    assert batch.relation_text.shape == (sum(sg.num_relation_types for sg in subgraphs), 384)
    torch.manual_seed(0)
    model = KGFR(layers=3)
    scores, attention = model(batch, keep_attention=True)
    assert scores.shape == (n,) and len(attention) == 3
    assert [a.numel() for a in attention] == [int((batch.edge_hop <= i + 1).sum()) for i in range(3)]
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    for _ in range(40):
        scores, _ = model(batch)
        loss = kgfr_loss(scores, batch)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0], losses
    assert np.isfinite(losses).all()


@pytest.mark.parametrize("message", ["product", "sum"])
def test_scoring_sums_messages_per_source_relation_pair_as_training_sums_them_per_edge(demo_kg, encoder, message):
    """Without gradients (scoring, on CPU) a layer sums α·MSG through a (nodes × (source, relation)
    pairs) sparse product instead of a message per edge: the same scores and α, two subgraphs in
    one batch (node ids of the second shifted, as the service batches them)."""
    store, _ = demo_kg
    subgraphs = [retrieve(store, [store.resolve([t])[t][0].entity.iri], hops=3, lam=100) for t in ("Kismet", "William Dieterle")]
    batch = make_batch(subgraphs, encoder.encode(["who directed Kismet", "which films did William Dieterle write"]), encoder)
    torch.manual_seed(0)
    model = KGFR(layers=3, residual=True, norm=True, message=message).eval()
    with torch.no_grad():
        by_pairs, alpha_pairs = model(batch, keep_attention=True)
    with torch.enable_grad():
        per_edge, alpha_edges = model(batch, keep_attention=True)
    assert torch.allclose(by_pairs, per_edge.detach(), atol=1e-4, rtol=1e-5)
    assert all(torch.allclose(a, b.detach(), atol=1e-6) for a, b in zip(alpha_pairs, alpha_edges))
    assert by_pairs.std() > 0  # not a trivial all-equal score


def test_a_pack_gives_the_same_batches_as_the_subgraphs(demo_kg, encoder, tmp_path):
    """`kgqa train --pack-out` / `--pack`: a pack saved to disk and loaded back yields, for any
    selection of questions, the batch that `make_batch` builds from the subgraphs themselves."""
    from kgqa.methods.kgfr.data import Prepared
    from kgqa.methods.kgfr.pack import PackedQA, pack
    from kgqa.loaders.qa import QAExample

    store, _ = demo_kg
    rows = [("who directed Kismet", "Kismet", ["William Dieterle"]), ("what language is Kismet in", "Kismet", ["English"]),
            ("which films did William Dieterle direct", "William Dieterle", ["Kismet"]), ("no topic here", None, ["x"])]
    prepared = []
    for k, (q, topic, gold) in enumerate(rows):
        example = QAExample(f"q{k}", q, tuple(gold), (topic,) if topic else (), hop=1 + k % 2)
        sg = retrieve(store, [store.resolve([topic])[topic][0].entity.iri], hops=2, lam=100) if topic else None
        prepared.append(Prepared(example, sg, locate_answers(sg, gold) if sg else [], True))
    packed = pack(prepared, encoder, validation=[False, True, False, False], meta='{"seed": 7}')
    packed.save(tmp_path / "p.npz")
    loaded = PackedQA.load(tmp_path / "p.npz")
    assert len(loaded) == 4 and not loaded.has_subgraph(3)
    assert json.loads(loaded.meta) == {"seed": 7, "relation_text": "v2", "hops": 2}  # the meta given, and what the pack records itself
    assert loaded.relation_text == "v2" and loaded.hops == 2
    for picked in ([0], [2, 0], [0, 1, 2]):
        ours = loaded.batch(picked, with_answers=True)
        probes = encoder.encode([rows[i][0].replace(rows[i][1], "something") if rows[i][1] else rows[i][0] for i in picked])
        theirs = make_batch([prepared[i].subgraph for i in picked], encoder.encode([rows[i][0] for i in picked]), encoder,
                            [prepared[i].answers for i in picked], probe_vectors=probes)
        for field in ("edge_index", "edge_type", "edge_hop", "relation_graph", "node_graph", "topic_mask", "answer_mask"):
            assert torch.equal(getattr(ours, field), getattr(theirs, field)), field
        assert torch.allclose(ours.relation_text, theirs.relation_text)
        assert torch.allclose(ours.relation_question, theirs.relation_question)  # what the prior compares the probe with
        assert torch.allclose(ours.question, theirs.question, atol=5e-3)  # quantised to int8 in the pack
        assert torch.allclose(ours.probe, theirs.probe, atol=5e-3)  # the question with its topic masked, for the text prior
        assert not torch.allclose(ours.probe, ours.question, atol=5e-2)
    train_part, val_part = loaded.split()
    assert list(train_part.qid) == ["q0", "q2", "q3"] and list(val_part.qid) == ["q1"]
    for sub, full in ((val_part.batch([0], True), loaded.batch([1], True)), (train_part.batch([1, 0], True), loaded.batch([2, 0], True))):
        for field in ("edge_index", "edge_type", "edge_hop", "relation_text", "relation_graph", "node_graph", "topic_mask", "question", "answer_mask", "probe",
                      "relation_question"):
            assert torch.equal(getattr(sub, field), getattr(full, field)), field
    joined = PackedQA.concat([val_part, train_part])
    for field in ("probe", "relation_question"):
        assert torch.equal(getattr(joined.batch([0, 2], True), field), getattr(loaded.batch([1, 2], True), field)), field
    without = np.load(tmp_path / "p.npz")  # a pack made before probes and relation questions: the prior reads the question and relation texts
    np.savez_compressed(tmp_path / "old.npz", **{k: without[k] for k in without.files if k not in ("probe", "probe_scale", "rel_question_vocab", "rel_question_vectors")})
    old = PackedQA.load(tmp_path / "old.npz")
    assert old.probe is None and old.batch([0]).probe is None and old.batch([0]).relation_question is None
    mixed = PackedQA.concat([old, loaded])  # the old pack's questions stand in for its probes; the new one keeps its own
    assert torch.equal(mixed.batch([0]).probe, old.batch([0]).question) and torch.equal(mixed.batch([4]).probe, loaded.batch([0]).probe)
    assert mixed.batch([4]).relation_question is None  # relation questions in only some parts: none (the prior reads relation texts for all)
    np.savez_compressed(tmp_path / "half.npz", **{k: without[k] for k in without.files if k != "rel_question_vectors"})
    with pytest.raises(ValueError, match="half.npz.*rel_question_vocab and rel_question_vectors"):
        PackedQA.load(tmp_path / "half.npz")
    (tmp_path / "bad.npz").write_bytes(b"not a pack")
    with pytest.raises(ValueError, match="bad.npz: not a kgfr-pack"):
        PackedQA.load(tmp_path / "bad.npz")


def test_scoring_batches_stop_at_a_fact_budget():
    """Validation batches hold at most `size` questions and, past the first, at most `max_facts` facts."""
    from types import SimpleNamespace

    from kgqa.methods.kgfr.train import _fact_chunks

    data = SimpleNamespace(edge_ptr=np.cumsum([0, 5, 5, 20, 1, 1, 1]))  # facts per question: 5 5 20 1 1 1
    assert _fact_chunks(data, range(6), size=64, max_facts=12) == [[0, 1], [2], [3, 4, 5]]
    assert _fact_chunks(data, range(6), size=2, max_facts=100) == [[0, 1], [2, 3], [4, 5]]


def test_the_files_pyg_generates_for_the_models_layers_are_removed_when_the_process_exits(tmp_path):
    """PyG writes each layer class's generated `propagate` into the temp folder and keeps it; a kgqa
    process removes the ones it made when it exits (every `kgqa ask` left one in /tmp before KGFR's
    layers stopped using PyG; GraSP's still do)."""
    import os
    import subprocess
    import sys

    code = ("import json, sys; import kgqa.methods; from kgqa.methods.grasp.gnn import QuestionAttention; QuestionAttention(4); "
            "print(json.dumps([m.__file__ for n, m in sys.modules.items() if n.endswith('_propagate')]))")
    run = subprocess.run([sys.executable, "-c", code], env={**os.environ, "TMPDIR": str(tmp_path)}, capture_output=True, text=True, check=True)
    made = [f for f in json.loads(run.stdout.strip().splitlines()[-1]) if f.startswith(str(tmp_path))]
    assert made, "the layer generated no file in the temp folder: nothing to check"
    assert not list(tmp_path.glob("*_propagate_*.py"))
