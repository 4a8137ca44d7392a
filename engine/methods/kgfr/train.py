"""Training the KGFR scorer (eq. 9) on packed QA subgraphs (`kgqa.methods.kgfr.pack`), with early stopping on validation
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

from kgqa.core.answer import set_f1
from kgqa.methods.kgfr.model import KGFR, kgfr_loss
from kgqa.methods.kgfr.pack import PackedQA
from kgqa.methods.kgfr.text_prior import VOCABULARY_FILE, TextPrior, load_vocabulary, path_match, save_vocabulary, standardise
from kgqa.retrieval.text import DEFAULT_ENCODER


@dataclass
class TrainConfig:
    hops: int = 3
    lam: int = 100
    layers: int = 3
    dim: int | None = None
    attn_dim: int = 4
    residual: bool = False
    norm: bool = False
    attn_act: str = "relu"
    message: str = "sum"
    lr: float = 1e-3
    lr_decay: float = 0.5  # the learning rate is multiplied by this after two epochs that did not improve validation Hits@1 (1.0: off)
    batch_size: int = 16
    epochs: int = 20
    patience: int = 3
    seed: int = 0
    device: str = "auto"
    time_budget: float | None = None  # seconds: no epoch starts that would likely end past it, and one that runs past it stops
    init: str | None = None  # a checkpoint to start from (its model shape is kept)
    split: dict = field(default_factory=dict)  # how the data was split, written into the checkpoint


def pick_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device {device!r}: this machine has no CUDA device (use auto or cpu)")
    if device != "cpu" and not device.startswith("cuda"):
        raise ValueError(f"device {device!r}: expected auto, cpu or cuda[:N]")
    return torch.device(device)


def code_version() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent, timeout=5).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


class TimeBudget:
    """`--time-budget`: no epoch starts that would likely end past it, and one that runs past it stops."""

    def __init__(self, seconds: float | None):
        self.seconds = seconds
        self.began = time.perf_counter()

    def spent(self) -> float:
        return time.perf_counter() - self.began

    def room_for_epoch(self, epochs_done: int, log: Callable[[str], None]) -> bool:
        if self.seconds is None or not epochs_done:
            return True
        spent = self.spent()
        if spent + spent / epochs_done > self.seconds:
            log(f"time budget: stopping after {epochs_done} epochs ({spent:.0f} s of {self.seconds:.0f} s)")
            return False
        return True

    def exceeded(self, epoch: int, step: int, steps: int, log: Callable[[str], None]) -> bool:
        if self.seconds is None or self.spent() <= self.seconds:
            return False
        log(f"time budget: {self.seconds:.0f} s spent in epoch {epoch} (step {step} of {steps}); validating and stopping")
        return True


def batched(items: Sequence[int], size: int) -> list[list[int]]:
    """`items` in consecutive lists of `size` (the last may be shorter): the training steps of kgfr and rapl."""
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


EVAL_FACTS = 150_000  # facts per scoring batch: 64 Kinships subgraphs (~17k facts each) took ~15 GB in one batch


def _fact_chunks(data: PackedQA, items: Sequence[int], size: int, max_facts: int = EVAL_FACTS) -> list[list[int]]:
    """Up to `size` questions per chunk, fewer where their subgraphs together pass `max_facts`."""
    chunks: list[list[int]] = []
    facts = 0
    for i in items:
        n = int(data.edge_ptr[i + 1] - data.edge_ptr[i])
        if not chunks or len(chunks[-1]) >= size or facts + n > max_facts:
            chunks.append([])
            facts = 0
        chunks[-1].append(i)
        facts += n
    return chunks


def _local_scores(model: KGFR, data: PackedQA, indices: list[int], device: torch.device, alphas: list[torch.Tensor] | None = None) -> list[torch.Tensor]:
    """Per question, the scores of its nodes (topic entities at -inf: they are not answers).
    With `alphas`, each layer's edge attention is appended to it."""
    batch = data.batch(indices).to(device)
    scores, attention = model(batch, keep_attention=alphas is not None)
    if alphas is not None:
        alphas += [a.cpu() for a in attention]
    scores = scores.masked_fill(batch.topic_mask, float("-inf")).cpu()
    sizes = [int(data.num_nodes[i]) for i in indices]
    return list(torch.split(scores, sizes))


@torch.no_grad()
def evaluate(model: KGFR, data: PackedQA, device: torch.device, batch_size: int = 64) -> dict:
    """Hits@1 over all questions and over the answerable ones (a gold answer in the subgraph), per hop;
    and the spread of the attention α (eq. 5) over the edges: a std near 0 means the gate is dead."""
    model.eval()
    hits: dict[str, list[bool]] = {}
    alphas: list[torch.Tensor] = []
    usable = [i for i in range(len(data)) if data.has_subgraph(i)]
    for chunk in _fact_chunks(data, usable, batch_size):
        for i, local in zip(chunk, _local_scores(model, data, chunk, device, alphas)):
            best = int(torch.argmax(local)) if torch.isfinite(local).any() else -1
            answers = data.answers(i)
            hit = best in set(answers.tolist())
            for key in ("all", f"hop{int(data.hop[i])}"):
                hits.setdefault(key, []).append(hit)
                if len(answers):
                    hits.setdefault(key + "_answerable", []).append(hit)
    missing = len(data) - len(usable)  # no topic entity: a miss
    hits.setdefault("all", []).extend([False] * missing)
    metrics = {key: float(np.mean(v)) for key, v in sorted(hits.items())}
    if alphas:
        every = torch.cat(alphas)
        metrics["alpha_mean"], metrics["alpha_std"] = float(every.mean()), float(every.std())
    return metrics


def train(
    train_data: PackedQA,
    val_data: PackedQA | None,
    config: TrainConfig,
    out_dir: Path,
    encoder_name: str = DEFAULT_ENCODER,
    log: Callable[[str], None] = print,
    max_steps: int | None = None,
    progress: Callable[[int, int, int], None] | None = None,
) -> dict:
    """Adam on eq. 9; keeps the epoch with the best validation Hits@1; returns the history.
    `progress(epoch, step_in_epoch, steps_per_epoch)` is called after every step."""
    torch.manual_seed(config.seed)
    rng = random.Random(config.seed)
    device = pick_device(config.device)
    inherited = inherited_text_prior(Path(config.init)) if config.init else None  # read before a resumed run rewrites its config
    if config.init:
        model, _ = load_checkpoint(Path(config.init), str(device))
        model.text_prior = None  # training and its validation score the model alone; a prior is chosen afterwards
        log(f"starting from {config.init} ({model.config})")
    else:
        model = KGFR(train_data.question.shape[1], config.dim, config.layers, config.attn_dim, config.residual, config.norm, config.attn_act, config.message).to(device)
    optimiser = torch.optim.Adam(model.parameters(), lr=config.lr)
    plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(optimiser, mode="max", factor=config.lr_decay, patience=1) if config.lr_decay < 1 else None
    usable = [i for i in range(len(train_data)) if train_data.has_subgraph(i) and len(train_data.answers(i))]
    if not usable:
        raise ValueError("no training question has a gold answer in its subgraph")
    history: list[dict] = []
    best, best_epoch, steps = -float("inf"), -1, 0  # without validation the score is −loss, which may be below −1
    out_dir.mkdir(parents=True, exist_ok=True)
    # the relation texts it will have trained on (with its starting point's): the text prior's "familiar"
    save_vocabulary(out_dir, train_data.trained_relation_vectors(), load_vocabulary(Path(config.init)) if config.init else None)
    if config.init and val_data is not None and len(val_data):  # a resumed run keeps its starting point unless an epoch beats it
        best = evaluate(model, val_data, device).get("all", -1.0)
        log(f"{config.init}: validation Hits@1 {best:.3f} before training; an epoch must beat it to be kept")
        if Path(config.init).resolve() != out_dir.resolve():
            save_checkpoint(model, config, encoder_name, out_dir, history, train_data.relation_text)
    budget = TimeBudget(config.time_budget)
    out_of_time = False
    for epoch in range(config.epochs):
        if not budget.room_for_epoch(len(history), log):
            break
        model.train()
        order = list(usable)
        rng.shuffle(order)
        losses = []
        started = time.perf_counter()
        chunks = batched(order, config.batch_size)
        for step, chunk in enumerate(chunks):
            batch = train_data.batch(chunk, with_answers=True).to(device)
            scores, _ = model(batch)
            loss = kgfr_loss(scores, batch)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            losses.append(float(loss.detach()))
            steps += 1
            if progress:
                progress(epoch + 1, step + 1, len(chunks))
            if max_steps is not None and steps >= max_steps:
                break
            if budget.exceeded(epoch + 1, step + 1, len(chunks), log):
                out_of_time = True
                break
        metrics = evaluate(model, val_data, device) if val_data is not None and len(val_data) else {}
        row = {"epoch": epoch + 1, "loss": float(np.mean(losses)) if losses else float("nan"), "seconds": time.perf_counter() - started,
               "lr": optimiser.param_groups[0]["lr"], **{f"val_{k}": v for k, v in metrics.items()}}
        history.append(row)
        log(json.dumps(row))
        score = metrics.get("all", -float(row["loss"]))
        if plateau is not None:
            plateau.step(score)
        if score > best:
            best, best_epoch = score, epoch
            save_checkpoint(model, config, encoder_name, out_dir, history, train_data.relation_text)
        elif epoch - best_epoch >= config.patience:
            log(f"early stop: no better validation Hits@1 for {config.patience} epochs")
            break
        if (max_steps is not None and steps >= max_steps) or out_of_time:
            break
    save_history(out_dir, history)
    margin = None
    if (out_dir / "model.safetensors").exists():
        meta = json.loads((out_dir / "config.json").read_text())
        meta.pop("without_prior", None)
        if val_data is not None and len(val_data):
            best_model, _ = load_checkpoint(out_dir, str(device))
            best_model.text_prior = None  # a run resumed in place that no epoch beat still has its old config, prior and all
            meta["validation_metrics"] = evaluate(best_model, val_data, device)  # the model alone, as in its history
            margin, f1 = choose_margin(best_model, val_data, device)
            if inherited:
                if val_data.rel_question_vectors is None:
                    log("the validation pack was made before relation questions: the text prior's weight is chosen on relation texts (make the pack again)")
                chosen, table = choose_text_prior(best_model, {"validation": val_data}, device)
                inherited.update(weight=chosen.weight, length_penalty=chosen.length_penalty, chosen_on=["validation"], max_loss=PRIOR_MAX_LOSS,
                                 validation_hits1=table[f"{chosen.weight}/{chosen.length_penalty}"], validation_hits1_without=table["0.0/0.0"])
                best_model.text_prior = text_prior_of(inherited, out_dir, device)
                log(f"text prior: weight {chosen.weight}, length penalty {chosen.length_penalty} (validation Hits@1 "
                    f"{table['0.0/0.0']['validation']:.3f} → {inherited['validation_hits1']['validation']:.3f}); unfamiliar relations as {config.init}")
                meta["without_prior"] = {"margin": margin, "margin_val_f1": f1}  # the model alone's (bench/transfer.py prior falls back to it)
                margin, f1 = choose_margin(best_model, val_data, device)
            meta["margin"], meta["margin_val_f1"] = margin, f1
            log(f"answer-set margin {margin} (validation F1 {f1:.3f})")
        if inherited:
            meta["text_prior"] = inherited
        (out_dir / "config.json").write_text(json.dumps(meta, indent=2) + "\n")
    return {"best_val_hits1": best, "best_epoch": best_epoch + 1, "history": history, "margin": margin}


MARGINS = (0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0, 7.5, 10.0, 15.0)


@torch.no_grad()
def choose_margin(model: KGFR, data: PackedQA, device: torch.device, batch_size: int = 64) -> tuple[float, float]:
    """The score margin below the best candidate within which candidates are answers, chosen for the
    best mean F1 on validation (§ issue: "the answer set for F1 is the top candidates within a margin")."""
    f1s: dict[float, list[float]] = {m: [] for m in MARGINS}
    usable = [i for i in range(len(data)) if data.has_subgraph(i)]
    for chunk in _fact_chunks(data, usable, batch_size):
        for i, local in zip(chunk, _local_scores(model, data, chunk, device)):
            gold = set(data.answers(i).tolist())
            best = float(local.max()) if local.numel() else float("-inf")
            for m in MARGINS:
                chosen = {int(k) for k in torch.nonzero(local >= best - m).squeeze(-1)} if np.isfinite(best) else set()
                f1s[m].append(set_f1(chosen, gold))
    means = {m: float(np.mean(v)) if v else 0.0 for m, v in f1s.items()}
    margin = max(MARGINS, key=lambda m: (means[m], -m))
    return margin, means[margin]


PRIOR_WEIGHTS = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0)
PRIOR_PENALTIES = (0.0, 0.02, 0.05, 0.1)
PRIOR_MAX_LOSS = 0.01  # a prior is for where the model is weak: it may not cost a KG it serves well more than this
# β_novel, λ_novel (text_prior.py): on relations it never saw, the model's scores may need to give way entirely
NOVEL_WEIGHTS = (0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
NOVEL_PENALTIES = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3)


@torch.no_grad()
def choose_text_prior(model: KGFR, packs: dict[str, PackedQA], device: torch.device, batch_size: int = 64,
                      max_loss: float = PRIOR_MAX_LOSS) -> tuple[TextPrior, dict[str, dict]]:
    """The text prior (text_prior.py) with the best Hits@1 averaged over `packs` (validation parts;
    one per KG, so that each KG counts the same) among those that cost no pack more than `max_loss`
    of its Hits@1 without a prior; and every setting's Hits@1 per pack."""
    table = prior_grid(model, packs, device, PRIOR_WEIGHTS, PRIOR_PENALTIES, batch_size)
    return pick_text_prior(table, max_loss), table


@torch.no_grad()
def prior_grid(model: KGFR, packs: dict[str, PackedQA], device: torch.device, weights: Sequence[float], penalties: Sequence[float],
               batch_size: int = 64) -> dict[str, dict[str, float]]:
    """{"β/λ": {pack: Hits@1}} of the model's scores fused with β·z(prior with λ), whatever its own prior
    says. Both grids must hold 0.0: "0.0/0.0" is the model alone, which pick_text_prior compares with."""
    saved, model.text_prior = model.text_prior, None
    hits: dict[tuple[float, float], dict[str, list[bool]]] = {(w, p): {} for w in weights for p in penalties}
    try:
        for name, data in packs.items():
            usable = [i for i in range(len(data)) if data.has_subgraph(i)]
            for chunk in _fact_chunks(data, usable, batch_size):
                batch = data.batch(chunk).to(device)
                raw = model(batch)[0]
                sizes = [int(data.num_nodes[i]) for i in chunk]
                gold = [set(data.answers(i).tolist()) for i in chunk]
                for penalty in penalties:
                    prior = standardise(path_match(batch, penalty), batch)
                    for weight in weights:
                        fused = (raw + weight * prior).masked_fill(batch.topic_mask, float("-inf")).cpu()
                        marks = hits[(weight, penalty)].setdefault(name, [])
                        marks += [int(torch.argmax(local)) in answers for local, answers in zip(torch.split(fused, sizes), gold)]
            for row in hits.values():  # a question without a subgraph is a miss
                row.setdefault(name, []).extend([False] * (len(data) - len(usable)))
    finally:
        model.text_prior = saved
    table = {f"{w}/{p}": {n: float(np.mean(v)) if v else 0.0 for n, v in row.items()} for (w, p), row in hits.items()}
    return table


def pick_text_prior(table: dict[str, dict[str, float]], max_loss: float = PRIOR_MAX_LOSS) -> TextPrior:
    """From {"weight/penalty": {pack: Hits@1}} (with "0.0/0.0", no prior): the setting with the best
    mean over the packs among those that cost no pack more than `max_loss`; ties go to the smaller."""
    without = table["0.0/0.0"]
    allowed = [k for k, row in table.items() if all(v >= without[n] - max_loss for n, v in row.items())]
    settings = {k: tuple(float(x) for x in k.split("/")) for k in allowed}
    best = max(allowed, key=lambda k: (float(np.mean(list(table[k].values()))), -settings[k][0], -settings[k][1]))
    return TextPrior(*settings[best])


def inherited_text_prior(init: Path) -> dict | None:
    """What a checkpoint trained from `init` keeps of init's text prior: all of it, until its own
    validation chooses the weight for the relations it trained on. The weight for relations it never
    saw cannot be judged on them (text_prior.py) and stays as init's."""
    spec = json.loads((init / "config.json").read_text()).get("text_prior")
    if not spec:
        return None
    kept = {k: v for k, v in spec.items() if k in ("weight", "length_penalty") or k.startswith("novel_")}
    return {**kept, "inherited_from": str(init)}


def text_prior_of(spec: dict, checkpoint: Path, device: torch.device | str = "cpu") -> TextPrior:
    """The TextPrior a checkpoint's config.json "text_prior" describes; its novel-relation weights
    read the checkpoint's relation vocabulary (kept on `device`)."""
    novel = spec.get("novel_weight")
    vocabulary = load_vocabulary(checkpoint) if novel is not None else None
    if novel is not None and vocabulary is None:
        raise ValueError(f"{checkpoint}: its text_prior weighs unfamiliar relations, but {VOCABULARY_FILE} (the relations it trained on) is missing")
    return TextPrior(float(spec["weight"]), float(spec["length_penalty"]),
                     None if novel is None else float(novel),
                     None if spec.get("novel_penalty") is None else float(spec["novel_penalty"]),
                     None if vocabulary is None else torch.from_numpy(vocabulary.astype(np.float32)).to(device))


def save_checkpoint(model: KGFR, config: TrainConfig, encoder_name: str, out_dir: Path, history: list[dict], relation_text: str) -> None:
    """`relation_text`: the style of the training pack's relation texts, which the checkpoint must be run with."""
    from safetensors.torch import save_file

    save_file({k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}, str(out_dir / "model.safetensors"))
    meta = {"model": model.config, "train": asdict(config), "encoder": encoder_name, "relation_text": relation_text,
            "code_version": code_version(), "history": history}
    (out_dir / "config.json").write_text(json.dumps(meta, indent=2) + "\n")


def save_history(out_dir: Path, history: list[dict]) -> None:
    meta = json.loads((out_dir / "config.json").read_text()) if (out_dir / "config.json").exists() else {}
    meta["history"] = history
    (out_dir / "config.json").write_text(json.dumps(meta, indent=2) + "\n")


def load_checkpoint(path: Path, device: str = "auto") -> tuple[KGFR, dict]:
    from safetensors.torch import load_file

    path = Path(path)
    if not (path / "config.json").is_file():
        raise ValueError(f"{path}: no KGFR checkpoint here ({'config.json missing' if path.is_dir() else 'no such folder'})")
    meta = json.loads((path / "config.json").read_text())
    model = KGFR(**meta["model"])
    model.load_state_dict(load_file(str(path / "model.safetensors")))
    target = pick_device(device)
    if meta.get("text_prior"):
        model.text_prior = text_prior_of(meta["text_prior"], path, target)
    return model.to(target).eval(), meta
