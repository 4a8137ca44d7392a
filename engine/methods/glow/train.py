"""Training GLOW's label predictors: one RGCN per pattern, node classification on the KG the
open-world benchmark left (App. A.4). A node's classes are the pattern's answers from it in that KG;
the benchmark's entities have none there (their facts were deleted), so they are never trained on.
Nodes with several answers (a film's genres) count the prediction right when it is any of them:
the loss is −log Σ_{y ∈ gold} softmax(logits)_y.

Each pattern's RGCN reads the KG without the facts that state its classes (`label_free_edges`), so
that training looks like question time, where those facts are missing.

The checkpoint (format "glow/1") is what the method serves, like the paper's inference API: every
entity's top classes with their probabilities, per pattern, beside the patterns and the metrics.

    checkpoint/config.json       format, kg, patterns (with class sets and their labels), training, metrics
    checkpoint/predictions.npz   entities; per pattern "<name>/classes" (entities × top, int16), "<name>/scores" (float16)
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from kgqa.methods.glow.graph import KGGraph, kg_graph
from kgqa.methods.glow.patterns import Fact, Pattern, follow
from kgqa.methods.glow.rgcn import RGCN, SortedEdges
from kgqa.methods.kgfr.train import TimeBudget, pick_device

FORMAT = "glow/1"
EVALUATE_EVERY = 5  # full-graph steps between validations (a validation costs a forward pass)


@dataclass(frozen=True)
class GLOWTrainConfig:
    dim: int = 128  # App. A.4: input dimension 128, hidden 64, 2 layers, dropout 0.5
    hidden: int = 64
    layers: int = 2
    dropout: float = 0.5
    bases: int = 16
    lr: float = 5e-3  # from the paper's grid 5e-4 … 5e-3
    weight_decay: float = 5e-4
    epochs: int = 200  # full-graph steps
    patience: int = 25
    validation: float = 0.1  # share of the labelled nodes held out for early stopping and the metrics
    seed: int = 0
    top: int = 10  # classes kept per entity in the checkpoint
    shuffle_labels: bool = False  # a control: the labels of the training nodes permuted
    time_budget: float | None = None  # seconds for all patterns, shared equally
    device: str = "auto"  # auto: CUDA where present


@dataclass
class PatternFit:
    pattern: str
    classes: np.ndarray  # (nodes, top) class indices
    scores: np.ndarray  # (nodes, top) probabilities
    metrics: dict


def node_classes(graph: KGGraph, facts: Sequence[Fact], pattern: Pattern) -> tuple[np.ndarray, list[list[int]]]:
    """Rows of the nodes that have answers in the class set, and those answers as class indices."""
    index = {c: i for i, c in enumerate(pattern.labels)}
    rows, gold = [], []
    graph_rows = graph.rows()
    for entity, ends in sorted(follow(facts, pattern.path).items()):
        classes = sorted(index[e] for e in ends if e in index)
        if classes and entity in graph_rows:
            rows.append(graph_rows[entity])
            gold.append(classes)
    return np.asarray(rows, dtype=np.int64), gold


def label_free_edges(graph: KGGraph, pattern: Pattern) -> SortedEdges:
    """The graph the pattern's RGCN reads: without the facts along the target relation that end at a
    class. Left in, every labelled node would read its own answer off its edges in training and find
    none at question time (the benchmark deleted them); Countries' `locatedin` to a subregion stays."""
    if pattern.target.relation not in graph.relations:
        return SortedEdges.of(graph.edge_index, graph.edge_type, graph.num_edge_types, graph.num_nodes)
    target = graph.relations.index(pattern.target.relation)
    rows = graph.rows()
    classes = np.asarray([rows[c] for c in pattern.labels if c in rows], dtype=np.int64)
    label_edge = (graph.edge_type % len(graph.relations) == target) & (
        np.isin(graph.edge_index[0], classes) | np.isin(graph.edge_index[1], classes))
    keep = ~label_edge
    return SortedEdges.of(graph.edge_index[:, keep], graph.edge_type[keep], graph.num_edge_types, graph.num_nodes)


def _gold_mask(gold: list[list[int]], classes: int) -> torch.Tensor:
    mask = torch.zeros(len(gold), classes, dtype=torch.bool)
    for i, g in enumerate(gold):
        mask[i, g] = True
    return mask


def _loss(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return (torch.logsumexp(logits, 1) - torch.logsumexp(logits.masked_fill(~mask, float("-inf")), 1)).mean()


def _accuracy(logits: torch.Tensor, mask: torch.Tensor) -> float:
    if not len(mask):
        return float("nan")
    return float(mask[torch.arange(len(mask), device=mask.device), logits.argmax(1)].float().mean())


def fit_pattern(graph: KGGraph, facts: Sequence[Fact], pattern: Pattern, config: GLOWTrainConfig,
                budget: TimeBudget | None = None, log: Callable[[str], None] = print) -> PatternFit:
    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    rows, gold = node_classes(graph, facts, pattern)
    if len(rows) < 10:
        raise ValueError(f"pattern {pattern.name!r}: only {len(rows)} entities have an answer in its class set; too few to train on")
    if config.shuffle_labels:
        gold = [gold[i] for i in rng.permutation(len(gold))]
    order = rng.permutation(len(rows))
    cut = max(1, int(round(len(rows) * config.validation)))
    val, tr = order[:cut], order[cut:]
    device = pick_device(config.device)
    mask = _gold_mask(gold, len(pattern.labels)).to(device)
    majority = Counter(c for i in tr for c in gold[i]).most_common(1)[0][0]
    edges = label_free_edges(graph, pattern).to(device)
    model = RGCN(graph.num_nodes, graph.num_edge_types, len(pattern.labels), config.dim, config.hidden, config.layers,
                 config.dropout, config.bases).to(device)
    optimiser = torch.optim.Adam(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    tr_rows, val_rows = torch.from_numpy(rows[tr]).to(device), torch.from_numpy(rows[val]).to(device)
    best, best_state, stale, epochs = -1.0, None, 0, 0
    started = time.perf_counter()
    for epoch in range(config.epochs):
        model.train()
        optimiser.zero_grad()
        logits = model(edges)
        loss = _loss(logits[tr_rows], mask[tr])
        loss.backward()
        optimiser.step()
        epochs = epoch + 1
        out_of_time = budget is not None and budget.seconds is not None and budget.spent() > budget.seconds
        if epochs % EVALUATE_EVERY and epochs < config.epochs and not out_of_time:
            continue
        model.eval()
        with torch.no_grad():
            accuracy = _accuracy(model(edges)[val_rows], mask[val])
        if accuracy > best:
            best, stale = accuracy, 0
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        else:
            stale += EVALUATE_EVERY
        if epochs % (4 * EVALUATE_EVERY) == 0:
            log(f"  {pattern.name} epoch {epochs}: loss {loss.item():.3f}, validation accuracy {accuracy:.3f}")
        if stale >= config.patience or out_of_time:
            if out_of_time:
                log(f"time budget: {pattern.name} stops after {epochs} epochs")
            break
    assert best_state is not None
    model.load_state_dict(best_state)
    model.eval()
    with torch.no_grad():
        probabilities = torch.softmax(model(edges), 1)
    top = min(config.top, len(pattern.labels))
    scores, classes = probabilities.topk(top, 1)
    metrics = {"labelled": len(rows), "train": len(tr), "validation": len(val), "classes": len(pattern.labels),
               "epochs": epochs, "seconds": round(time.perf_counter() - started, 1), "validation_accuracy": round(best, 4),
               "validation_majority": round(float(mask[val][:, majority].float().mean()), 4), "majority_class": pattern.labels[majority]}
    log(f"  {pattern.name}: validation accuracy {best:.3f} (majority class {metrics['validation_majority']:.3f}) after {epochs} epochs")
    return PatternFit(pattern.name, classes.cpu().numpy().astype(np.int16), scores.cpu().numpy().astype(np.float16), metrics)


def train(facts: Sequence[Fact], patterns: Sequence[Pattern], out: Path, config: GLOWTrainConfig = GLOWTrainConfig(),
          kg: str = "", description: str = "", label_texts: dict[str, list[str]] | None = None,
          log: Callable[[str], None] = print) -> dict:
    """Fit every pattern, write the checkpoint to `out`, return its config."""
    graph = kg_graph(facts)
    log(f"graph: {graph.num_nodes} entities, {len(graph.relations)} relations, {graph.edge_index.shape[1] // 2} facts")
    share = config.time_budget / len(patterns) if config.time_budget else None  # each pattern its part of the budget
    fits = [fit_pattern(graph, facts, p, config, TimeBudget(share), log) for p in patterns]
    out.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, np.ndarray] = {"entities": np.asarray(graph.entities)}
    for fit in fits:
        arrays[f"{fit.pattern}/classes"], arrays[f"{fit.pattern}/scores"] = fit.classes, fit.scores
    np.savez_compressed(out / "predictions.npz", **arrays)
    pattern_json = []
    for p in patterns:
        data = p.to_json()
        data["label_texts"] = (label_texts or {}).get(p.name, list(p.labels))
        pattern_json.append(data)
    meta = {"format": FORMAT, "kg": kg, "description": description, "patterns": pattern_json,
            "train": {k: v for k, v in asdict(config).items()}, "metrics": {f.pattern: f.metrics for f in fits},
            "graph": {"entities": graph.num_nodes, "relations": len(graph.relations), "facts": graph.edge_index.shape[1] // 2}}
    (out / "config.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return meta
