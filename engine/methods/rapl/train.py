"""Training the RAPL retriever on a pack (`kgqa.methods.rapl.data`): Adam on the question-triple loss
(eq. 9, negative sampling) plus the path loss (eq. 6, one rational path per question per step, a
random one of its labels as in the paper's Appendix H). The epoch with the best validation Hits@1
(LLM-free decoding) is kept. Checkpoints: `model.safetensors` + `config.json`."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from kgqa.core.answer import set_f1
from kgqa.methods.kgfr.train import TimeBudget, batched, code_version, pick_device, save_history
from kgqa.methods.rapl.data import RAPLPack
from kgqa.methods.rapl.decode import decode, tail_mass
from kgqa.methods.rapl.model import RAPL, STOP, RAPLBatch
from kgqa.retrieval.text import DEFAULT_ENCODER

FORMAT = "rapl/1"


@dataclass
class RAPLTrainConfig:
    dim: int = 256
    layers: int = 2
    lookahead: bool = True
    step_relation: bool = True  # successors also scored by their relation's text (model.py)
    dropout: float = 0.2
    lr: float = 1e-3
    batch_size: int = 8
    epochs: int = 15
    patience: int = 3
    negatives: int = 8  # per positive question triple (eq. 9)
    seed: int = 0
    device: str = "auto"
    time_budget: float | None = None  # seconds (see kgfr's TrainConfig)
    init: str | None = None
    split: dict = field(default_factory=dict)


def losses(model: RAPL, batch: RAPLBatch, paths: Sequence[Sequence[int]], positives: Sequence[Sequence[int]],
           rng: random.Random, negatives: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    """(question-triple loss, path loss), each a mean over its terms."""
    h, q = model.encode(batch)
    start_scores = model.start_scores(batch, h, q)
    starts = torch.nonzero(batch.starts).squeeze(1).tolist()
    by_graph: dict[int, list[int]] = {}
    graph = batch.graph.tolist()
    for s in starts:
        by_graph.setdefault(graph[s], []).append(s)
    start_terms = []
    for g, pos in enumerate(positives):
        others = sorted(set(by_graph.get(g, [])) - set(pos))
        if not pos or not others:
            continue
        p = rng.choice(list(pos))
        picked = rng.sample(others, min(len(others), negatives))
        # eq. 9: -log σ(s⁺) - Σ_k log σ(-s⁻_k)
        start_terms.append(-F.logsigmoid(start_scores[p]) - F.logsigmoid(-start_scores[picked]).sum())
    current, history_rows, target = [], [], []
    for path in paths:
        for j in range(len(path)):
            current.append(path[j])
            history_rows.append(list(path[: j + 1]))
            target.append(path[j + 1] if j + 1 < len(path) else STOP)
    zero = h.sum() * 0.0
    start_loss = torch.stack(start_terms).mean() if start_terms else zero
    if not current:
        return start_loss, zero
    width = max(len(r) for r in history_rows)
    padded = torch.tensor([r + [r[0]] * (width - len(r)) for r in history_rows])
    mask = torch.tensor([[1.0] * len(r) + [0.0] * (width - len(r)) for r in history_rows])
    history = (h[padded] * mask.unsqueeze(-1)).sum(1)
    current_t = torch.tensor(current)
    ptr, idx = batch.successors()
    segment, member, logp = model.step(h, q[batch.graph[current_t]], history, current_t, ptr, idx, successors=model.successor_states(batch, h))
    target_t = torch.tensor(target)
    hit = member == target_t[segment]
    path_loss = -logp[hit].sum() / max(len(current), 1)  # eq. 6, averaged over steps
    return start_loss, path_loss


def tail_scores(model: RAPL, data: RAPLPack, i: int, device: torch.device, **decoding) -> tuple[dict[int, float], list]:
    """LLM-free answer scores of pack question i (`decode.tail_mass`), and its decoded walks."""
    batch, _, _ = data.batch([i])
    walks = decode(model, batch, **decoding)
    lg = data.line_graph(i)
    return tail_mass(walks, lg.tail, lg.topics), walks


@torch.no_grad()
def evaluate(model: RAPL, data: RAPLPack, indices: Sequence[int], device: torch.device) -> dict:
    """Hits@1 (LLM-free) and answer recall of the decoded paths, all and per hop."""
    model.eval()
    rows: dict[str, list[tuple[float, float]]] = {}
    for i in indices:
        gold = set(data.span("answer", i).tolist())
        scores, _ = tail_scores(model, data, i, device)
        top = max(scores, key=scores.get) if scores else None
        row = (float(top in gold), float(bool(gold & set(scores))))
        for key in ("all", f"hop{int(data.hop[i])}"):
            rows.setdefault(key, []).append(row)
    out = {}
    for key, values in rows.items():
        out[key] = float(np.mean([v[0] for v in values]))
        out[f"{key}_recall"] = float(np.mean([v[1] for v in values]))
    return out


def train(data: RAPLPack, config: RAPLTrainConfig, out_dir: Path, log: Callable[[str], None] = print, max_steps: int | None = None,
          progress: Callable[[int, int, int], None] | None = None, validate_on: int | None = 600) -> dict:
    """Trains on the pack's training questions that have a rational path; validates on (at most
    `validate_on` of) its validation ones."""
    torch.manual_seed(config.seed)
    rng = random.Random(config.seed)
    if config.device == "cuda":
        # batches, losses and decoding build their tensors on the CPU; untested on a GPU, so refused
        raise ValueError("rapl trains on the CPU only (--device auto or cpu); use --time-budget and --init to train in parts")
    device = torch.device("cpu")
    if config.init:
        model, _ = load_checkpoint(Path(config.init), str(device))
        if config.step_relation and not model.step_relation:
            model = model.with_step_relation()
        elif model.step_relation and not config.step_relation:
            raise ValueError(f"{config.init} scores a walk's next triple with its relation's text (step_relation), and a model cannot "
                             "drop that part: leave out --no-step-relation, or train without --init")
        log(f"starting from {config.init} ({model.config()})")
    else:
        model = RAPL(data.question.shape[1], config.dim, config.layers, config.lookahead, config.dropout, config.step_relation).to(device)
    optimiser = torch.optim.Adam(model.parameters(), lr=config.lr)
    train_idx, val_idx = data.split()
    labelled = set(data.trainable().tolist())
    usable = [int(i) for i in train_idx if int(i) in labelled]
    if not usable:
        raise ValueError("no training question has a rational path (see the pack's labelling log)")
    val = [int(i) for i in val_idx]
    if validate_on is not None and len(val) > validate_on:
        val = sorted(random.Random(1).sample(val, validate_on))
    history: list[dict] = []
    best, best_epoch, steps = float("-inf"), -1, 0  # a first epoch scored by its loss alone must still be kept
    out_dir.mkdir(parents=True, exist_ok=True)
    if config.init and val:  # a resumed run keeps its starting point unless an epoch beats it
        best = evaluate(model, data, val, device).get("all", float("-inf"))
        log(f"{config.init}: validation Hits@1 {best:.3f} before training; an epoch must beat it to be kept")
        if Path(config.init).resolve() != out_dir.resolve():
            save_checkpoint(model, config, out_dir, history, json.loads(data.meta))
    budget = TimeBudget(config.time_budget)
    out_of_time = False
    for epoch in range(config.epochs):
        if not budget.room_for_epoch(len(history), log):
            break
        model.train()
        order = list(usable)
        rng.shuffle(order)
        seen: list[tuple[float, float]] = []
        started = time.perf_counter()
        chunks = batched(order, config.batch_size)
        for step, chunk in enumerate(chunks):
            batch, paths, positives = data.batch(chunk, rng)
            start_loss, path_loss = losses(model, batch, paths, positives, rng, config.negatives)
            loss = start_loss + path_loss
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            seen.append((float(start_loss.detach()), float(path_loss.detach())))
            steps += 1
            if progress:
                progress(epoch + 1, step + 1, len(chunks))
            if max_steps is not None and steps >= max_steps:
                break
            if budget.exceeded(epoch + 1, step + 1, len(chunks), log):
                out_of_time = True
                break
        metrics = evaluate(model, data, val, device) if val else {}
        row = {"epoch": epoch + 1, "start_loss": float(np.mean([s for s, _ in seen])), "path_loss": float(np.mean([p for _, p in seen])),
               "seconds": time.perf_counter() - started, **{f"val_{k}": v for k, v in metrics.items()}}
        history.append(row)
        log(json.dumps(row))
        score = metrics.get("all", -(row["start_loss"] + row["path_loss"]))
        if score > best:
            best, best_epoch = score, epoch
            save_checkpoint(model, config, out_dir, history, json.loads(data.meta))
        elif epoch - best_epoch >= config.patience:
            log(f"early stop: no better validation Hits@1 for {config.patience} epochs")
            break
        if (max_steps is not None and steps >= max_steps) or out_of_time:
            break
    save_history(out_dir, history)
    share = None
    if val and (out_dir / "model.safetensors").exists():
        best_model, _ = load_checkpoint(out_dir, str(device))
        share, f1 = choose_answer_share(best_model, data, val, device)
        meta = json.loads((out_dir / "config.json").read_text())
        meta["answer_share"], meta["answer_share_val_f1"] = share, f1
        (out_dir / "config.json").write_text(json.dumps(meta, indent=2) + "\n")
        log(f"answer share {share} (validation F1 {f1:.3f})")
    return {"best_val_hits1": best, "best_epoch": best_epoch + 1, "history": history, "answer_share": share}


SHARES = (0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0)


@torch.no_grad()
def choose_answer_share(model: RAPL, data: RAPLPack, indices: Sequence[int], device: torch.device) -> tuple[float, float]:
    """The share of the best tail's score above which tails are answers, for the best validation F1."""
    f1s: dict[float, list[float]] = {s: [] for s in SHARES}
    for i in indices:
        gold = set(data.span("answer", i).tolist())
        scores, _ = tail_scores(model, data, i, device)
        top = max(scores.values(), default=0.0)
        for share in SHARES:
            chosen = {n for n, v in scores.items() if v >= share * top} if scores else set()
            f1s[share].append(set_f1(chosen, gold))
    means = {s: float(np.mean(v)) if v else 0.0 for s, v in f1s.items()}
    share = max(SHARES, key=lambda s: (means[s], s))
    return share, means[share]


def save_checkpoint(model: RAPL, config: RAPLTrainConfig, out_dir: Path, history: list[dict], data_meta: dict) -> None:
    from safetensors.torch import save_file

    out_dir.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}, str(out_dir / "model.safetensors"))
    meta = {"format": FORMAT, "model": model.config(), "train": asdict(config), "encoder": DEFAULT_ENCODER, "relation_text": "v2",
            "data": data_meta, "code_version": code_version(), "history": history}
    (out_dir / "config.json").write_text(json.dumps(meta, indent=2) + "\n")


def load_checkpoint(path: Path, device: str = "auto") -> tuple[RAPL, dict]:
    from safetensors.torch import load_file

    path = Path(path)
    config = path / "config.json"
    if not config.exists():
        raise ValueError(f"{path}: no RAPL checkpoint here ({'config.json missing' if path.is_dir() else 'no such folder'})")
    meta = json.loads(config.read_text())
    if meta.get("format") != FORMAT:
        raise ValueError(f"{path} is not a RAPL checkpoint (format {meta.get('format')!r}, expected {FORMAT!r})")
    model = RAPL(**meta["model"])
    model.load_state_dict(load_file(str(path / "model.safetensors")))
    return model.to(pick_device(device)).eval(), meta
