"""The relation-text prior fused with KGFR's scores (kgqa.methods.kgfr.text_prior): hand-computed
path matches, per-question standardising, and when the fusion applies."""

from __future__ import annotations

import json

import pytest
import torch

from kgqa.methods.kgfr.model import KGFR, KGFRBatch
from kgqa.methods.kgfr.text_prior import TextPrior, novelty, path_match, standardise
from kgqa.methods.kgfr.train import load_checkpoint, pick_text_prior

FILM, LANGUAGE, OTHER = [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]


def _batch() -> KGFRBatch:
    """Topic 0; 0 -film-> 1 -film-> 3 and 0 -language-> 2, each fact also reversed (inverse texts: OTHER).
    The question reads like "film"."""
    facts = [(0, 1, 0), (0, 2, 2), (1, 3, 4)]  # (head, tail, type); type + 1 is the inverse
    heads = [h for h, t, _ in facts] + [t for h, t, _ in facts]
    tails = [t for h, t, _ in facts] + [h for h, t, _ in facts]
    types = [k for _, _, k in facts] + [k + 1 for _, _, k in facts]
    return KGFRBatch(
        edge_index=torch.tensor([heads, tails]),
        edge_type=torch.tensor(types),
        edge_hop=torch.tensor([1, 1, 2, 1, 1, 2]),
        relation_text=torch.tensor([FILM, OTHER, LANGUAGE, OTHER, FILM, OTHER]),
        relation_graph=torch.zeros(6, dtype=torch.long),
        node_graph=torch.zeros(4, dtype=torch.long),
        topic_mask=torch.tensor([True, False, False, False]),
        question=torch.tensor([[2.0, 0.0, 0.0]]),  # not unit length: the prior normalises
    )


def test_path_match_is_the_best_mean_cosine_less_the_length_penalty():
    prior = path_match(_batch(), length_penalty=0.1)
    assert prior[1].item() == pytest.approx(1.0)  # one "film" edge
    assert prior[3].item() == pytest.approx(1.0 - 0.1)  # two "film" edges: mean 1, one extra edge
    # "language" (cosine 0) directly, or the walk 0 -film-> 1 -inverse-> 0 -language-> 2: (1 + 0 + 0) / 3 − 0.2
    assert prior[2].item() == pytest.approx(max(0.0, 1 / 3 - 0.2))
    assert path_match(_batch(), length_penalty=0.0)[3].item() == pytest.approx(1.0)


def test_standardise_over_each_questions_non_topic_nodes():
    batch = _batch()
    values = torch.tensor([50.0, 1.0, 2.0, float("-inf")])  # the topic's value is ignored; node 3 is unreached
    z = standardise(values, batch)
    assert z[1].item() == pytest.approx(-1.0, abs=1e-4) and z[2].item() == pytest.approx(1.0, abs=1e-4)
    assert z[3].item() == pytest.approx(-1.0, abs=1e-4)  # an unreached node gets the question's lowest


def test_the_prior_is_fused_in_eval_mode_only_and_read_from_the_checkpoint(tmp_path):
    from safetensors.torch import save_file

    torch.manual_seed(0)
    model = KGFR(text_dim=3, layers=2, attn_dim=1)
    batch = _batch()
    raw, _ = model.eval()(batch)
    model.text_prior = TextPrior(weight=100.0, length_penalty=0.1)
    fused, _ = model(batch)
    assert int(torch.argmax(fused[1:])) + 1 in (1, 3)  # the prior's choice: a "film" node, not "language"
    assert not torch.allclose(fused, raw)
    model.train()
    assert torch.allclose(model(batch)[0], raw)  # training sees the model's own scores
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(tmp_path / "model.safetensors"))
    meta = {"model": model.config}
    (tmp_path / "config.json").write_text(json.dumps(meta))
    assert load_checkpoint(tmp_path, "cpu")[0].text_prior is None
    (tmp_path / "config.json").write_text(json.dumps({**meta, "text_prior": {"weight": 0.5, "length_penalty": 0.05}}))
    assert load_checkpoint(tmp_path, "cpu")[0].text_prior == TextPrior(0.5, 0.05)
    (tmp_path / "config.json").write_text(json.dumps({**meta, "text_prior": {"weight": -1, "length_penalty": 0.05}}))
    with pytest.raises(ValueError, match="weight -1"):
        load_checkpoint(tmp_path, "cpu")


def test_the_chosen_prior_may_not_cost_any_kg_more_than_max_loss():
    table = {
        "0.0/0.0": {"metaqa": 0.96, "umls": 0.30},
        "2.0/0.05": {"metaqa": 0.94, "umls": 0.60},  # best mean, but MetaQA loses 0.02
        "1.0/0.1": {"metaqa": 0.955, "umls": 0.45},
        "0.5/0.0": {"metaqa": 0.96, "umls": 0.40},
    }
    assert pick_text_prior(table, max_loss=0.01) == TextPrior(1.0, 0.1)
    assert pick_text_prior(table, max_loss=0.05) == TextPrior(2.0, 0.05)
    assert pick_text_prior(table, max_loss=0.0) == TextPrior(0.5, 0.0)
    assert pick_text_prior({"0.0/0.0": {"a": 0.5}, "1.0/0.0": {"a": 0.4}}) == TextPrior(0.0, 0.0)  # no prior helps: none


def test_the_prior_reads_the_masked_question_where_the_batch_has_one():
    batch = _batch()
    batch.question = torch.tensor([[0.0, 1.0, 0.0]])  # the question as asked reads like "language" (say, a film named "Language")
    assert int(torch.argmax(path_match(batch, 0.1)[1:3])) + 1 == 2
    batch.probe = torch.tensor([[1.0, 0.0, 0.0]])  # with the topic's name masked it asks for a film
    assert int(torch.argmax(path_match(batch, 0.1)[1:3])) + 1 == 1


def test_the_prior_reads_the_relation_questions_where_the_batch_has_them():
    batch = _batch()
    assert int(torch.argmax(path_match(batch, 0.1)[1:3])) + 1 == 1  # by relation text: the "film" edge
    # asked along each row, "film" reads like LANGUAGE and "language" like the question
    batch.relation_question = torch.tensor([LANGUAGE, OTHER, FILM, OTHER, LANGUAGE, OTHER])
    assert int(torch.argmax(path_match(batch, 0.1)[1:3])) + 1 == 2


def test_unfamiliar_relations_get_their_own_weight():
    """n(q) is the share of the question's relation rows the model never trained on; the fused score
    is c + (1 − n)·β·z(prior_λ) + n·β_novel·z(prior_λ_novel)."""
    batch = _batch()
    scores = torch.tensor([0.0, 0.0, 3.0, 0.0])  # the model prefers node 2 ("language")
    seen_all = torch.tensor([FILM, LANGUAGE, OTHER])
    familiar = TextPrior(0.5, 0.1, novel_weight=20.0, novel_penalty=0.0, familiar=seen_all)
    assert novelty(batch, familiar.familiar).tolist() == [0.0]
    assert torch.allclose(familiar.fuse(scores, batch), TextPrior(0.5, 0.1).fuse(scores, batch))
    assert int(torch.argmax(familiar.fuse(scores, batch)[1:])) + 1 == 2  # β small: the model's choice stands
    never = TextPrior(0.5, 0.1, novel_weight=20.0, novel_penalty=0.0, familiar=torch.tensor([[0.6, 0.64, 0.48]]))  # near no row (cos < 0.8)
    assert novelty(batch, never.familiar).tolist() == [1.0]
    assert torch.allclose(never.fuse(scores, batch), TextPrior(20.0, 0.0).fuse(scores, batch))
    assert int(torch.argmax(never.fuse(scores, batch)[1:])) + 1 in (1, 3)  # the prior overturns it
    some = TextPrior(0.5, 0.1, novel_weight=20.0, novel_penalty=0.0, familiar=torch.tensor([FILM, OTHER]))
    n = novelty(batch, some.familiar)
    assert n.tolist() == [pytest.approx(1 / 6)]  # "language" is one of the six relation rows
    expected = scores + (1 - n) * 0.5 * standardise(path_match(batch, 0.1), batch) + n * 20.0 * standardise(path_match(batch, 0.0), batch)
    assert torch.allclose(some.fuse(scores, batch), expected)
    assert novelty(batch, None).tolist() == [0.0]  # no vocabulary: every relation counts as seen


def test_a_checkpoint_that_weighs_unfamiliar_relations_needs_its_vocabulary(tmp_path):
    from safetensors.torch import save_file

    from kgqa.methods.kgfr.text_prior import save_vocabulary

    model = KGFR(text_dim=3, layers=2, attn_dim=1)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(tmp_path / "model.safetensors"))
    spec = {"weight": 1.0, "length_penalty": 0.1, "novel_weight": 16.0, "novel_penalty": 0.15}
    (tmp_path / "config.json").write_text(json.dumps({"model": model.config, "text_prior": spec}))
    with pytest.raises(ValueError, match="relation_vocab.npy"):
        load_checkpoint(tmp_path, "cpu")
    save_vocabulary(tmp_path, torch.tensor([FILM, FILM, [0.0, 3.0, 0.0]]).numpy(), None)
    prior = load_checkpoint(tmp_path, "cpu")[0].text_prior
    assert prior == TextPrior(1.0, 0.1, 16.0, 0.15)
    assert prior.familiar.tolist() == [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]  # unit rows, each once


def test_the_prior_tells_which_end_of_a_relation_a_question_asks_for():
    """X complicates B and A complicates X. By the relation's text, "what complicates X?" reads like the
    row "complicates" (X → B); asked along each row ("what complicated by something", "what complicates
    something") it reads like the row from A. A question whose wh-word is the fact's object ("what does X
    complicate?") still reads like the row from A: the encoder hardly sees word order (text_prior.py)."""
    import numpy as np

    from kgqa.core.subgraph import Subgraph
    from kgqa.methods.kgfr.batch import make_batch
    from kgqa.retrieval.text import TextEncoder

    sg = Subgraph(nodes=["x", "a", "b"], node_labels=["X", "A", "B"], node_hop=np.array([0, 1, 1], np.int8), topics=np.array([0]),
                  relations=["complicates"], relation_labels=["complicates"], edge_index=np.array([[1, 0], [0, 2]]),
                  edge_type=np.array([0, 0]), edge_hop=np.array([1, 1], np.int8), hops=1, lam=100)
    encoder = TextEncoder()
    for probe, answer in (("what complicates something?", 1), ("what is complicated by something?", 2)):
        batch = make_batch([sg], encoder.encode([probe]), encoder, probe_vectors=encoder.encode([probe]))
        assert int(torch.argmax(path_match(batch, 0.1)[1:])) + 1 == answer, probe
