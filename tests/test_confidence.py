"""KGFR's confidence and declining (kgfr/confidence.py): the signals, the fitted calibration, its
threshold, and the answerer declining below it while keeping the closest evidence."""

from __future__ import annotations

import json
import random

import pytest
import torch

from kgqa.methods.kgfr.confidence import FEATURES, Calibration, curve, fit, no_signal, relation_probe, signals


def _question(rng: random.Random, answerable: bool) -> tuple[dict[str, float], bool]:
    """Synthetic signals: answerable questions read like a relation and rank peakedly (right when the
    ranking is peaked), unanswerable ones read like none; the noise makes the classes overlap."""
    peaked = rng.random() < (0.8 if answerable else 0.3)
    features = {name: rng.gauss(0, 1) for name in FEATURES}
    features["relation_match"] = rng.gauss(0.5 if answerable else 0.15, 0.1)
    features["top_probability"] = min(1.0, max(0.0, rng.gauss(0.9 if peaked else 0.3, 0.15)))
    features["link_strength"] = 1.0 if rng.random() < 0.9 else 0.0  # a tenth not linked: never answered
    return features, answerable and peaked and rng.random() < 0.95


def _data(n: int, seed: int):
    rng = random.Random(seed)
    rows = [(*_question(rng, a), a) for a in [True] * n + [False] * n]
    return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]


def _judge(calibration: Calibration, features, correct, answerable) -> dict:
    return curve([calibration.answerability(f) for f in features], correct, answerable, [f["link_strength"] > 0 for f in features],
                 [calibration.threshold])[0]


def test_the_threshold_keeps_the_asked_share_of_linked_answerable_questions_and_declines_most_unanswerable_ones():
    features, correct, answerable = _data(400, seed=0)
    calibration = fit(features, correct, answerable, answer_rate=0.97)
    held_features, held_correct, held_answerable = _data(400, seed=1)  # judged on questions it was not fitted on
    row = _judge(calibration, held_features, held_correct, held_answerable)
    linked = sum(a and f["link_strength"] > 0 for f, a in zip(held_features, held_answerable)) / sum(held_answerable)
    assert 0.93 * linked <= row["coverage"] <= linked  # an unlinked question is never answered
    assert row["declined_unanswerable"] >= 0.9
    assert 0.0 <= row["precision"] <= 1.0
    # how well the question reads like a relation is what separates them here
    assert calibration.answerable.weights[calibration.answerable.features.index("relation_match")] > 0
    assert calibration.right.weights[calibration.right.features.index("top_probability")] > 0  # and rightness follows the peaked ranking
    # a higher answer rate can only lower the threshold
    assert fit(features, correct, answerable, answer_rate=0.99).threshold <= calibration.threshold <= fit(features, correct, answerable, answer_rate=0.9).threshold


def test_confidence_is_a_probability_ordered_by_the_signals():
    features, correct, answerable = _data(300, seed=2)
    calibration = fit(features, correct, answerable)
    low, high = dict(features[0]), dict(features[0])
    low["relation_match"], high["relation_match"] = 0.0, 0.8
    assert 0.0 < calibration.answerability(low) < calibration.answerability(high) < 1.0
    low["top_probability"], high["top_probability"] = 0.1, 0.95
    assert 0.0 < calibration.confidence(low) < calibration.confidence(high) < 1.0


def test_a_calibration_survives_its_file_and_serves_only_the_weights_it_was_fitted_for(tmp_path, caplog):
    (tmp_path / "model.safetensors").write_bytes(b"weights one")
    features, correct, answerable = _data(200, seed=3)
    calibration = fit(features, correct, answerable, fitted_on={"kgs": ["toy"]}, checkpoint=tmp_path)
    calibration.save(tmp_path)
    again = Calibration.load(tmp_path)
    assert again == calibration
    assert again.confidence(features[5]) == calibration.confidence(features[5])
    assert Calibration.load(tmp_path / "elsewhere") is None  # none: nothing to warn about
    (tmp_path / "model.safetensors").write_bytes(b"weights two")  # retrained: the calibration no longer fits
    assert Calibration.load(tmp_path) is None and "other weights" in caplog.text and "kgqa calibrate" in caplog.text
    (tmp_path / "model.safetensors").write_bytes(b"weights one")
    assert Calibration.load(tmp_path) == calibration
    config = {"margin": 3.0, "text_prior": {"weight": 1.0, "length_penalty": 0.1, "chosen_on": ["a"]}}
    (tmp_path / "config.json").write_text(json.dumps(config))  # same weights, scored with a prior: other scores
    assert Calibration.load(tmp_path) is None
    calibration = fit(features, correct, answerable, checkpoint=tmp_path)
    calibration.save(tmp_path)
    config["text_prior"]["chosen_on"] = ["a", "b"]  # where it was chosen does not change a score
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert Calibration.load(tmp_path) == calibration
    for changed in ({**config, "margin": 5.0}, {**config, "text_prior": {**config["text_prior"], "weight": 2.0}}):
        (tmp_path / "config.json").write_text(json.dumps(changed))
        assert Calibration.load(tmp_path) is None, changed
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "relation_vocab.npy").write_bytes(b"other relations")  # another vocabulary: other novelty, other scores
    assert Calibration.load(tmp_path) is None
    (tmp_path / "relation_vocab.npy").unlink()
    data = json.loads((tmp_path / "calibration.json").read_text())
    for broken in ({**data, "answerable": {**data["answerable"], "features": ["shoe_size", *data["answerable"]["features"][1:]]}},
                   {**data, "threshold": float("nan")}, {**data, "format": 1}, {"threshold": 0.5}):
        (tmp_path / "calibration.json").write_text(json.dumps(broken))
        caplog.clear()
        assert Calibration.load(tmp_path) is None and "calibration.json ignored" in caplog.text


def test_fitting_needs_answerable_questions_and_both_outcomes():
    features, correct, answerable = _data(50, seed=4)
    with pytest.raises(ValueError, match="answerable"):
        fit(features, correct, [False] * len(features))
    with pytest.raises(ValueError, match="both"):
        fit(features, [False] * len(features), answerable)
    with pytest.raises(ValueError, match="cannot answer"):
        fit(features, correct, [True] * len(features))
    with pytest.raises(ValueError, match="answer_rate"):
        fit(features, correct, answerable, answer_rate=0.0)


def test_signals_of_a_ranking():
    scores = torch.tensor([float("-inf"), 5.0, 3.0, 4.5, -1.0])  # node 0 is the topic
    topics = [{"query": "Kismet", "score": 1.0}]
    found = signals(scores, margin=1.0, relation_match=0.4, topics=topics, nodes=5)
    probabilities = torch.softmax(torch.tensor([5.0, 3.0, 4.5, -1.0], dtype=torch.float64), 0)
    assert found["top_probability"] == pytest.approx(float(probabilities[0]))
    assert found["answer_mass"] == pytest.approx(float(probabilities[0] + probabilities[2]))  # 5.0 and 4.5 are within the margin
    assert found["gap"] == pytest.approx(0.5)
    assert found["relation_match"] == pytest.approx(0.4)
    assert found["link_strength"] == 1.0 and found["lone_word_link"] == 0.0
    fuzzy = signals(scores, 1.0, 0.4, [{"query": "math", "score": 0.89}], 5)
    assert fuzzy["link_strength"] == pytest.approx(0.89) and fuzzy["lone_word_link"] == 1.0
    assert set(no_signal([])) == set(FEATURES) == set(found)
    assert signals(torch.tensor([float("-inf"), float("nan")]), 1.0, 0.4, topics, 2) == no_signal(topics)  # nothing finite to rank


def test_the_relation_probe_masks_what_the_question_names_as_whole_words():
    assert relation_probe("how tall is Tom Hanks", [{"query": "Tom Hanks"}]) == "how tall is something"
    assert relation_probe("who directed Kismet and Heat", [{"query": "Kismet"}, {"query": "Heat"}]) == "who directed something and something"
    assert relation_probe("which award went toward war films", [{"query": "war"}]) == "which award went toward something films"
    assert relation_probe("did Tom Hanks act with Tom", [{"query": "Tom"}, {"query": "Tom Hanks"}]) == "did something act with something"
    assert relation_probe("who directed kismet", [{"query": "Kismet"}]) == "who directed something"  # a given topic's label, other case
