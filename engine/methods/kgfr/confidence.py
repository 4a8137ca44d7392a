"""How far to trust a KGFR answer given without an LLM, and when to decline.

A few signals of one answered question (`signals`) — how peaked the ranking is, how well the question
reads like a relation of the subgraph, how surely its topic was linked — go through two logistic
models (`Calibration`) fitted on validation questions, answerable ones and questions the KG cannot
answer (other KGs' questions): the answer's confidence (is the top answer right?) and its
answerability (does the KG hold an answer?). The threshold on answerability is chosen on the
answerable validation questions so that a given share of them (97 % by default) is still answered;
below it the answer is declined.

A checkpoint carries its calibration in `calibration.json`, tied by a hash to its weights and to its
scoring settings (`model_digest`); one without it (or after `kgqa train` changed the weights, or a
prior or margin was chosen again) reports no confidence and never declines.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from kgqa.methods.kgfr.path_reader import READER_DIR
from kgqa.methods.kgfr.text_prior import VOCABULARY_FILE
from kgqa.retrieval.relation_text import TOPIC_MASK

CALIBRATION_FILE = "calibration.json"
FORMAT = 2  # calibration.json's layout; files of another layout are ignored with a warning
log = logging.getLogger(__name__)
FEATURES = ("top_probability", "answer_mass", "gap", "top_logit", "relation_match", "link_strength", "lone_word_link", "log_nodes",
            "path_lacking")
ANSWERABILITY_FEATURES = ("relation_match", "link_strength", "lone_word_link", "path_lacking")  # see Calibration
DEFAULT_ANSWER_RATE = 0.97
CURVE_THRESHOLDS = (0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9)  # answerability thresholds a curve is shown at


def relation_probe(question: str, topics: Sequence[Mapping]) -> str:
    """The question with its topic mentions replaced by "something": what it asks, not whom it names
    ("how tall is Tom Hanks" → "how tall is something" reads like no relation of a film KG)."""
    names = sorted({str(t["query"]) for t in topics if str(t["query"]).strip()}, key=len, reverse=True)  # "Tom Hanks" before "Tom"
    if not names:
        return question
    pattern = re.compile(r"(?<!\w)(?:" + "|".join(re.escape(n) for n in names) + r")(?!\w)", re.IGNORECASE)
    return pattern.sub(TOPIC_MASK, question)


def gold_probe(question: str, topics: Sequence[str]) -> str:
    """`relation_probe` for a question whose topics are given by label (a QA file's gold topics):
    a label written with underscores ("western_europe") is masked as typed too ("western europe")."""
    return relation_probe(question, [{"query": form} for t in topics for form in dict.fromkeys([t, t.replace("_", " ")])])


def signals(scores: torch.Tensor, margin: float, relation_match: float, topics: Sequence[Mapping], nodes: int,
            path_lacking: float | None = None) -> dict[str, float]:
    """The features of one question: `scores` are the model's per-node scores (topics -inf), `margin`
    the answer-set margin, `topics` the linked topics (`Linking.topics_json()`), `path_lacking` how far
    the path reader's "no path reads it" beats its best group (kgfr/path_reader.py; 0 without one)."""
    finite = scores[torch.isfinite(scores)].double()
    if finite.numel() == 0:
        return no_signal(topics)
    top = torch.topk(finite, min(2, finite.numel())).values
    probabilities = torch.softmax(finite, 0)
    gap = float(top[0] - top[1]) if top.numel() > 1 else 20.0
    found = {
        "top_probability": float(probabilities.max()),
        "answer_mass": float(probabilities[finite >= top[0] - margin].sum()),
        "gap": min(gap, 20.0),
        "top_logit": float(top[0].clamp(-50, 50)),
        "relation_match": float(relation_match),
        **_link_signals(topics),
        "log_nodes": math.log1p(nodes),
        "path_lacking": float(max(-20.0, min(20.0, path_lacking))) if path_lacking is not None else 0.0,
    }
    return found if all(math.isfinite(v) for v in found.values()) else no_signal(topics)


def no_signal(topics: Sequence[Mapping]) -> dict[str, float]:
    """The features of a question with nothing to rank (no topic linked, or an empty subgraph)."""
    return {"top_probability": 0.0, "answer_mass": 0.0, "gap": 0.0, "top_logit": -50.0, "relation_match": -1.0,
            **_link_signals(topics), "log_nodes": 0.0, "path_lacking": 0.0}


def _link_signals(topics: Sequence[Mapping]) -> dict[str, float]:
    """The weakest topic's link score (1 for a match as written or normalised, the similarity for a
    fuzzy or embedding match), and whether every topic is a lone lower-case word ("math")."""
    if not topics:
        return {"link_strength": 0.0, "lone_word_link": 1.0}
    lone = all(len(str(t["query"]).split()) == 1 and not str(t["query"])[:1].isupper() for t in topics)
    return {"link_strength": float(min(float(t.get("score", 1.0)) for t in topics)), "lone_word_link": float(lone)}


@dataclass(frozen=True)
class Logistic:
    """P(y | features) = σ(w · standardised features + b)."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float

    def __call__(self, found: Mapping[str, float]) -> float:
        z = (np.array([found[name] for name in self.features]) - np.array(self.mean)) / np.array(self.scale)
        return float(1.0 / (1.0 + np.exp(-(z @ np.array(self.weights) + self.bias))))

    @staticmethod
    def fit(found: Sequence[Mapping[str, float]], y: np.ndarray, features: tuple[str, ...], l2: float) -> "Logistic":
        """L2-regularised logistic regression by Newton's method (at most 50 steps; the bias is not penalised)."""
        x = np.array([[f[name] for name in features] for f in found], dtype=np.float64)
        mean, scale = x.mean(0), x.std(0)
        scale[scale < 1e-9] = 1.0
        z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
        w = np.zeros(z.shape[1])
        penalty = np.diag([l2 * len(z)] * (z.shape[1] - 1) + [0.0])
        for _ in range(50):
            p = 1 / (1 + np.exp(-z @ w))
            gradient = z.T @ (p - y) + penalty @ w
            hessian = (z * (p * (1 - p))[:, None]).T @ z + penalty + 1e-9 * np.eye(len(w))
            step = np.linalg.solve(hessian, gradient)
            w -= step
            if np.abs(step).max() < 1e-8:
                break
        return Logistic(features, tuple(mean.tolist()), tuple(scale.tolist()), tuple(w[:-1].tolist()), float(w[-1]))


@dataclass(frozen=True)
class Calibration:
    """Two logistic models: `confidence`, the probability that the top answer is right (over all
    `FEATURES`), and `answerability`, the probability that the KG holds an answer at all (over
    `ANSWERABILITY_FEATURES`); below `threshold` of the latter the answer is declined.

    Why two: where the retriever is often wrong on a KG, "right" is rare even on questions the KG
    answers, and a threshold on it that keeps those answered lets most unanswerable questions
    through. Why fewer signals for answerability: whether a question's relation is around its topic
    is a property of the question and the KG; the ranking's scale and the subgraph's size differ
    from KG to KG and checkpoint to checkpoint, and with them, calibrated with one KG left out,
    the left-out KG's answerable questions were declined far more often (bench/abstention.py)."""

    right: Logistic
    answerable: Logistic
    threshold: float
    answer_rate: float  # the share of answerable validation questions (topic linked) the threshold keeps answered
    fitted_on: dict = field(default_factory=dict)  # what it was fitted on (counts, sources)
    weights_digest: str = ""  # model_digest() of the checkpoint it was fitted for: other weights ignore it
    format: int = FORMAT

    def confidence(self, found: Mapping[str, float]) -> float:
        return self.right(found)

    def answerability(self, found: Mapping[str, float]) -> float:
        return self.answerable(found)

    def save(self, checkpoint: Path) -> Path:
        path = Path(checkpoint) / CALIBRATION_FILE
        path.write_text(json.dumps(asdict(self), indent=2) + "\n")
        return path

    @staticmethod
    def load(checkpoint: Path) -> "Calibration | None":
        """The checkpoint's calibration, or None where it has none or where it cannot serve this
        checkpoint (another layout, other weights, a threshold that is no probability): then a
        warning names the file and says to run `kgqa calibrate`, and nothing is declined."""
        path = Path(checkpoint) / CALIBRATION_FILE
        if not path.exists():
            return None
        try:
            data = json.loads(path.read_text())
            if data.get("format") != FORMAT:
                raise ValueError(f"layout {data.get('format')!r}, this version reads {FORMAT}")
            heads = [Logistic(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in data[h].items()}) for h in ("right", "answerable")]
            calibration = Calibration(*heads, float(data["threshold"]), float(data["answer_rate"]), data.get("fitted_on", {}),
                                      str(data.get("weights_digest", "")))
            for head in heads:
                if not set(head.features) <= set(FEATURES) or len({len(head.features), len(head.mean), len(head.scale), len(head.weights)}) != 1:
                    raise ValueError(f"features {list(head.features)} do not match this version's {list(FEATURES)}")
            if not 0.0 <= calibration.threshold <= 1.0:
                raise ValueError(f"threshold {calibration.threshold} is not in [0, 1]")
            if calibration.weights_digest != model_digest(checkpoint):
                raise ValueError("it was fitted for other weights, or another text prior or margin")
        except (KeyError, TypeError, ValueError) as exc:  # json's decode error is a ValueError
            log.warning("%s ignored (%s): nothing is declined; run kgqa calibrate for this checkpoint", path, exc)
            return None
        return calibration


def model_digest(checkpoint: Path) -> str:
    """A short hash of what the checkpoint's scores depend on, which ties a calibration to them: its
    weights file, its relation vocabulary, its path reader's weights (their "no path" score is a
    signal), and the text prior's weights and the answer-set margin in its config.json (a prior chosen
    again changes the scores the confidence model reads)."""
    checkpoint = Path(checkpoint)
    weights = checkpoint / "model.safetensors"
    if not weights.exists():
        return ""
    digest = hashlib.sha256(weights.read_bytes())
    for extra in (checkpoint / VOCABULARY_FILE, checkpoint / READER_DIR / "model.safetensors"):
        if extra.exists():
            digest.update(extra.read_bytes())
    config = json.loads((checkpoint / "config.json").read_text()) if (checkpoint / "config.json").exists() else {}
    prior = config.get("text_prior") or {}
    scoring = {"margin": config.get("margin"), **{k: prior.get(k) for k in ("weight", "length_penalty", "novel_weight", "novel_penalty")}}
    digest.update(json.dumps(scoring, sort_keys=True).encode())
    return digest.hexdigest()[:16]


def fit(features: Sequence[Mapping[str, float]], correct: Sequence[bool], answerable: Sequence[bool],
        answer_rate: float = DEFAULT_ANSWER_RATE, l2: float = 1e-2, fitted_on: dict | None = None, checkpoint: Path | None = None) -> Calibration:
    """Fit both models on the questions whose topic was linked (the others are declined whatever the
    models say, and their made-up signals would skew the fit): "the top answer is right" (questions
    the KG cannot answer never are) and "the KG holds an answer". The threshold on the latter keeps
    `answer_rate` of the answerable ones answered. `checkpoint`: the one the signals came from."""
    if not 0 < answer_rate <= 1:
        raise ValueError(f"answer_rate must be in (0, 1], got {answer_rate}")
    linked = [i for i, f in enumerate(features) if f["link_strength"] > 0]
    features, correct, answerable = [features[i] for i in linked], [correct[i] for i in linked], [answerable[i] for i in linked]
    a = np.array(answerable, dtype=np.float64)
    y = np.array(correct, dtype=np.float64) * a
    if not a.any():
        raise ValueError("calibration needs answerable questions whose topic was linked")
    if a.all() or not y.any():
        raise ValueError("calibration needs both right and wrong answers, and questions the KG cannot answer")
    right, answerability = Logistic.fit(features, y, FEATURES, l2), Logistic.fit(features, a, ANSWERABILITY_FEATURES, l2)
    kept = np.array([answerability(f) for f, ok in zip(features, answerable) if ok])
    threshold = float(np.quantile(kept, 1 - answer_rate, method="lower")) if answer_rate < 1 else 0.0
    return Calibration(right, answerability, threshold, answer_rate, fitted_on or {}, model_digest(checkpoint) if checkpoint else "")


def curve(answerability: Sequence[float], correct: Sequence[bool], answerable: Sequence[bool], linked: Sequence[bool],
          thresholds: Sequence[float]) -> list[dict]:
    """Per threshold: the share of answerable questions answered (coverage; an unlinked question is
    never answered) and of those whose topic was linked, Hits@1 among those answered (precision),
    and the share of unanswerable questions declined."""
    ok, a, on = np.array(correct, dtype=bool), np.array(answerable, dtype=bool), np.array(linked, dtype=bool)
    c = np.where(on, np.array(answerability), -np.inf)
    rows = []
    for t in thresholds:
        answered = c >= t
        rows.append({"threshold": float(t),
                     "coverage": float(answered[a].mean()) if a.any() else None,
                     "coverage_linked": float(answered[a & on].mean()) if (a & on).any() else None,
                     "precision": float(ok[a & answered].mean()) if (a & answered).any() else None,
                     "declined_unanswerable": float((~answered[~a]).mean()) if (~a).any() else None})
    return rows


def fit_rows(rows: Sequence[Mapping], answer_rate: float = DEFAULT_ANSWER_RATE, fitted_on: dict | None = None,
             checkpoint: Path | None = None) -> Calibration:
    """`fit` on `kgqa eval` rows (their "signals" and "hits1_ranked"), each marked "answerable";
    `fitted_on` gains how many of each there were."""
    counts = {"answerable": sum(bool(r["answerable"]) for r in rows), "unanswerable": sum(not r["answerable"] for r in rows)}
    return fit([r["signals"] for r in rows], [r["hits1_ranked"] for r in rows], [r["answerable"] for r in rows], answer_rate,
               fitted_on={**counts, **(fitted_on or {})}, checkpoint=checkpoint)


def judge_rows(calibration: Calibration, rows: Sequence[Mapping], thresholds: Sequence[float]) -> list[dict]:
    """`curve` of a calibration on `kgqa eval` rows marked "answerable"."""
    return curve([calibration.answerability(r["signals"]) for r in rows], [r["hits1_ranked"] for r in rows], [r["answerable"] for r in rows],
                 [r["signals"]["link_strength"] > 0 for r in rows], thresholds)


def curve_table(calibration: Calibration, rows: Sequence[Mapping]) -> str:
    """The coverage / precision curve on `rows` as a Markdown table, the chosen threshold marked."""
    fmt = lambda v: "—" if v is None else f"{v:.3f}"  # noqa: E731
    lines = ["| answerability threshold | answerable answered | of those linked | Hits@1 when answered | unanswerable declined |",
             "|---:|---:|---:|---:|---:|"]
    for row in judge_rows(calibration, rows, sorted({*CURVE_THRESHOLDS, calibration.threshold})):
        mark = " ← chosen" if row["threshold"] == calibration.threshold else ""
        lines.append(f"| {row['threshold']:.3f} | {fmt(row['coverage'])} | {fmt(row['coverage_linked'])} | {fmt(row['precision'])} | "
                     f"{fmt(row['declined_unanswerable'])} |{mark}")
    return "\n".join(lines)
