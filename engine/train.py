"""Training the KGFR scorer (eq. 9) on QA pairs over a store, with early stopping on validation
Hits@1. Checkpoints: `model.safetensors` + `config.json` (encoder, λ, hops, layers, split, code version)."""

from __future__ import annotations

import json
import random
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from kgqa.kgfr import KGFR, kgfr_loss
from kgqa.kgfr_batch import make_batch
from kgqa.kgfr_data import Prepared, question_vectors
from kgqa.text import TextEncoder


@dataclass
class TrainConfig:
    hops: int = 3
    lam: int = 100
    layers: int = 3
    dim: int | None = None
    attn_dim: int = 4
    residual: bool = False
    norm: bool = False
    lr: float = 1e-3
    batch_size: int = 16
    epochs: int = 20
    patience: int = 3
    seed: int = 0
    device: str = "auto"
    split: dict = field(default_factory=dict)  # how the data was split, written into the checkpoint


def pick_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def code_version() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent, timeout=5).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


@torch.no_grad()
def evaluate(model: KGFR, items: Sequence[Prepared], encoder: TextEncoder, device: torch.device, batch_size: int = 64) -> dict:
    """Hits@1 over all items and over the answerable ones (a gold answer in the subgraph), per hop."""
    model.eval()
    hits: dict[str, list[bool]] = {}
    usable = [p for p in items if p.subgraph is not None]
    for start in range(0, len(usable), batch_size):
        chunk = usable[start : start + batch_size]
        batch = make_batch([p.subgraph for p in chunk], question_vectors(encoder, chunk), encoder).to(device)  # type: ignore[misc]
        scores, _ = model(batch)
        scores = scores.masked_fill(batch.topic_mask, float("-inf"))  # topic entities are not answers
        offset = 0
        for p in chunk:
            n = p.subgraph.num_nodes  # type: ignore[union-attr]
            best = int(torch.argmax(scores[offset : offset + n])) if n > len(p.subgraph.topics) else -1  # type: ignore[union-attr]
            hit = best in p.answers
            for key in ("all", f"hop{p.example.hop}"):
                hits.setdefault(key, []).append(hit)
                if p.answers:
                    hits.setdefault(key + "_answerable", []).append(hit)
            offset += n
    missing = len(items) - len(usable)  # no topic entity: a miss
    hits.setdefault("all", []).extend([False] * missing)
    return {key: float(np.mean(v)) for key, v in sorted(hits.items())}


def train(
    train_items: Sequence[Prepared],
    val_items: Sequence[Prepared],
    config: TrainConfig,
    out_dir: Path,
    encoder: TextEncoder | None = None,
    log: Callable[[str], None] = print,
    max_steps: int | None = None,
) -> dict:
    """Adam on eq. 9; keeps the epoch with the best validation Hits@1; returns the history."""
    torch.manual_seed(config.seed)
    rng = random.Random(config.seed)
    device = pick_device(config.device)
    encoder = encoder or TextEncoder()
    model = KGFR(encoder.dim, config.dim, config.layers, config.attn_dim, config.residual, config.norm).to(device)
    optimiser = torch.optim.Adam(model.parameters(), lr=config.lr)
    usable = [p for p in train_items if p.subgraph is not None and p.answers]
    history: list[dict] = []
    best, best_epoch, steps = -1.0, -1, 0
    out_dir.mkdir(parents=True, exist_ok=True)
    for epoch in range(config.epochs):
        model.train()
        order = list(range(len(usable)))
        rng.shuffle(order)
        losses = []
        started = time.perf_counter()
        for start in range(0, len(order), config.batch_size):
            chunk = [usable[i] for i in order[start : start + config.batch_size]]
            batch = make_batch([p.subgraph for p in chunk], question_vectors(encoder, chunk), encoder, [p.answers for p in chunk]).to(device)  # type: ignore[misc]
            scores, _ = model(batch)
            loss = kgfr_loss(scores, batch)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            losses.append(float(loss.detach()))
            steps += 1
            if max_steps is not None and steps >= max_steps:
                break
        metrics = evaluate(model, val_items, encoder, device) if val_items else {}
        row = {"epoch": epoch + 1, "loss": float(np.mean(losses)) if losses else float("nan"), "seconds": time.perf_counter() - started, **{f"val_{k}": v for k, v in metrics.items()}}
        history.append(row)
        log(json.dumps(row))
        score = metrics.get("all", -float(row["loss"]))
        if score > best:
            best, best_epoch = score, epoch
            save_checkpoint(model, config, encoder, out_dir, history)
        elif epoch - best_epoch >= config.patience:
            log(f"early stop: no better validation Hits@1 for {config.patience} epochs")
            break
        if max_steps is not None and steps >= max_steps:
            break
    save_history(out_dir, history)
    margin = None
    if val_items and (out_dir / "model.safetensors").exists():
        best_model, _ = load_checkpoint(out_dir, str(device))
        margin, f1 = choose_margin(best_model, val_items, encoder, device)
        meta = json.loads((out_dir / "config.json").read_text())
        meta["margin"], meta["margin_val_f1"] = margin, f1
        (out_dir / "config.json").write_text(json.dumps(meta, indent=2) + "\n")
        log(f"answer-set margin {margin} (validation F1 {f1:.3f})")
    return {"best_val_hits1": best, "best_epoch": best_epoch + 1, "history": history, "margin": margin}


MARGINS = (0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0)


@torch.no_grad()
def choose_margin(model: KGFR, items: Sequence[Prepared], encoder: TextEncoder, device: torch.device, batch_size: int = 64) -> tuple[float, float]:
    """The score margin below the best candidate within which candidates are answers, chosen for the
    best mean F1 on validation (§ issue: "the answer set for F1 is the top candidates within a margin")."""
    f1s = {m: [] for m in MARGINS}
    usable = [p for p in items if p.subgraph is not None]
    for start in range(0, len(usable), batch_size):
        chunk = usable[start : start + batch_size]
        batch = make_batch([p.subgraph for p in chunk], question_vectors(encoder, chunk), encoder).to(device)  # type: ignore[misc]
        scores, _ = model(batch)
        scores = scores.masked_fill(batch.topic_mask, float("-inf")).cpu()
        offset = 0
        for p in chunk:
            n = p.subgraph.num_nodes  # type: ignore[union-attr]
            local = scores[offset : offset + n]
            offset += n
            gold = set(p.answers)
            best = float(local.max()) if n else float("-inf")
            for m in MARGINS:
                chosen = {int(i) for i in torch.nonzero(local >= best - m).squeeze(-1)} if torch.isfinite(torch.tensor(best)) else set()
                hit = len(chosen & gold)
                f1s[m].append(0.0 if not hit else 2 * hit / (len(chosen) + len(gold)))
    means = {m: float(np.mean(v)) if v else 0.0 for m, v in f1s.items()}
    margin = max(MARGINS, key=lambda m: (means[m], -m))
    return margin, means[margin]


def save_checkpoint(model: KGFR, config: TrainConfig, encoder: TextEncoder, out_dir: Path, history: list[dict]) -> None:
    from safetensors.torch import save_file

    save_file({k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}, str(out_dir / "model.safetensors"))
    meta = {"model": model.config, "train": asdict(config), "encoder": encoder.name, "code_version": code_version(), "history": history}
    (out_dir / "config.json").write_text(json.dumps(meta, indent=2) + "\n")


def save_history(out_dir: Path, history: list[dict]) -> None:
    meta = json.loads((out_dir / "config.json").read_text()) if (out_dir / "config.json").exists() else {}
    meta["history"] = history
    (out_dir / "config.json").write_text(json.dumps(meta, indent=2) + "\n")


def load_checkpoint(path: Path, device: str = "auto") -> tuple[KGFR, dict]:
    from safetensors.torch import load_file

    path = Path(path)
    meta = json.loads((path / "config.json").read_text())
    model = KGFR(**meta["model"])
    model.load_state_dict(load_file(str(path / "model.safetensors")))
    return model.to(pick_device(device)).eval(), meta
