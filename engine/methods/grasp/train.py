"""Training GraSP (§4.4, eq. 9): the graph encoder and FFN learn through the frozen selector LLM
(optionally with a LoRA adapter on it) to make it name the target entities.

One question at a time (its sequence length is its own), gradients accumulated over `accumulate`
questions, AdamW with the clip of the authors' code. A checkpoint is written every `save_every`
questions and when the time budget ends; `init` starts from one's weights and adapter, and when it
is `out` itself goes on where that run stopped (its place in the shuffled order, its history).
Validation runs the selector on held-out questions once, at the end, and reports how often the
LLM-free answer (the farthest named entities) is a gold answer: generation costs seconds per
question on CPU, so it does not steer training (the last weights are kept).

Not in the paper: with `probe_weight` > 0 a linear probe on the GNN states is also trained to tell the
target entities (binary cross-entropy, added to eq. 9's loss). Through a 270M LM, eq. 9 alone reaches
the GNN weakly; the probe makes its states say which entity to select, which the soft tokens carry.

A checkpoint (format `grasp/1`): config.json, encoder.safetensors (GNN + FFN), lora/ (with --lora).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

from kgqa.core.labels import normalise_label
from kgqa.methods.grasp.data import Example
from kgqa.methods.grasp.gnn import GraphSoftPrompt
from kgqa.methods.grasp.labels import farthest, named
from kgqa.methods.grasp.selector import Selector, check_layout, frozen_selector
from kgqa.methods.kgfr.train import pick_device

FORMAT = "grasp/1"


@dataclass
class GraspTrainConfig:
    lora: bool = False
    dim: int = 128  # App. A
    layers: int = 3  # one per hop of the focus graph
    lr: float = 1e-3  # GNN + FFN
    lora_lr: float = 2e-4  # the authors' code's single rate
    weight_decay: float = 0.01
    accumulate: int = 8
    epochs: int = 2
    seed: int = 0
    time_budget: float | None = None  # seconds
    save_every: int = 200
    max_validation: int = 60
    init: str | None = None
    selector_model: str | None = None  # None: the bundled Gemma 3 270M
    device: str = "auto"  # the GNN, FFN and selector LLM together: cuda where present
    layout: str | None = None  # the soft tokens after all candidate names (eq. 6) or each after its name (selector.LAYOUTS);
    # None: the `init` checkpoint's, else "after"
    probe_weight: float = 0.0  # weight of the probe's loss beside eq. 9's (0: eq. 9 alone)
    data: dict = field(default_factory=dict)


def load_checkpoint(path: Path, trainable: bool = False, selector: Selector | None = None,
                    device: str = "cpu") -> tuple[GraphSoftPrompt, Selector, dict]:
    """The encoder on `device`, and the selector (`selector` if given: the encoder goes to its device)."""
    if not (path / "config.json").is_file():
        raise ValueError(f"{path}: no GraSP checkpoint here ({'config.json missing' if path.is_dir() else 'no such folder'})")
    config = json.loads((path / "config.json").read_text())
    if config.get("format") != FORMAT:
        raise ValueError(f"{path}: not a GraSP checkpoint ({FORMAT})")
    m = config["model"]
    model = GraphSoftPrompt(m["text_dim"], m["dim"], m["layers"], m["llm_dim"])
    missing, unexpected = model.load_state_dict(load_file(path / "encoder.safetensors"), strict=False)
    if unexpected or any(not key.startswith("probe.") for key in missing):  # checkpoints from before the probe lack only it
        raise ValueError(f"{path}: encoder weights do not fit the model (missing {missing}, unexpected {unexpected})")
    if selector is None:
        name, lora = config["selector"].get("model"), config["selector"].get("lora")
        selector = Selector(name, lora=path / "lora", trainable=trainable, device=device) if lora else frozen_selector(name, device)
    return model.to(selector.device), selector, config


def save_checkpoint(model: GraphSoftPrompt, selector: Selector, config: GraspTrainConfig, out: Path, progress: dict, history: list) -> None:
    out.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}, out / "encoder.safetensors")
    if selector.adapter is not None:
        selector.adapter.save_pretrained(str(out / "lora"))
    first = model.entity_in
    meta = {"format": FORMAT,
            "model": {"text_dim": first.in_features, "dim": first.out_features, "layers": len(model.layers), "llm_dim": selector.width},
            "selector": {"model": selector.model_name, "lora": selector.adapter is not None, "prompt": "grasp_select",
                         "layout": config.layout or "after"},
            "train": {k: v for k, v in asdict(config).items() if k not in ("data", "device")}, "data": config.data,
            "progress": progress, "history": history}
    (out / "config.json").write_text(json.dumps(meta, indent=1) + "\n")


def soft_tokens(model: GraphSoftPrompt, ex: Example) -> torch.Tensor:
    return model(*ex.graph.tensors(str(next(model.parameters()).device)))


def layout_of(config: dict) -> str:
    """Where a checkpoint's selector reads the soft tokens (checkpoints from before the choice: after the names)."""
    return config.get("selector", {}).get("layout", "after")


def probe_loss(logits: torch.Tensor, target: Sequence[int]) -> torch.Tensor:
    wanted = torch.zeros_like(logits)
    wanted[list(target)] = 1.0
    return F.binary_cross_entropy_with_logits(logits, wanted)


def mean_losses(running: Sequence[tuple[float, float | None]]) -> dict[str, float]:
    """Eq. 9's mean loss ("loss") and, where it was trained, the probe's ("probe")."""
    out = {"loss": round(sum(lm for lm, _ in running) / len(running), 4)}
    probed = [p for _, p in running if p is not None]
    if probed:
        out["probe"] = round(sum(probed) / len(probed), 4)
    return out


def validate(model: GraphSoftPrompt, selector: Selector, examples: Sequence[Example], layout: str = "after") -> dict:
    model.eval()
    selector.train(False)
    hits, named_right = 0, 0
    with torch.no_grad():
        for ex in examples:
            names = ex.graph.names
            selection = selector.select(selector.inputs(ex.question, names, soft_tokens(model, ex), layout=layout))
            chosen = named(selection.names, names)
            gold = {normalise_label(a) for a in ex.answers}
            answers = farthest(chosen, ex.graph.hop)
            hits += bool(answers) and normalise_label(names[answers[0]]) in gold
            named_right += any(normalise_label(names[i]) in gold for i in chosen)
    n = max(1, len(examples))
    return {"questions": len(examples), "hits1": round(hits / n, 4), "names_an_answer": round(named_right / n, 4)}


def train(examples: Sequence[Example], config: GraspTrainConfig, out: Path, log: Callable[[str], None] = print,
          max_steps: int | None = None, selector: Selector | None = None) -> dict:
    if config.layout is not None:
        check_layout(config.layout)
    torch.manual_seed(config.seed)
    history: list = []
    progress = {"epoch": 0, "position": 0, "questions": 0}
    device = str(pick_device(config.device))
    if config.init:
        model, selector, previous = load_checkpoint(Path(config.init), trainable=True, selector=selector, device=device)
        if Path(config.init).resolve() == out.resolve():  # going on where it stopped; other weights start a run of their own
            progress, history = previous.get("progress", progress), previous.get("history", [])
        config = replace(config, layout=config.layout or layout_of(previous))
    else:
        selector = selector or (Selector(config.selector_model, lora=True, trainable=True, device=device) if config.lora
                                else frozen_selector(config.selector_model, device))
        model = GraphSoftPrompt(layers=config.layers, dim=config.dim, llm_dim=selector.width).to(selector.device)
        config = replace(config, layout=config.layout or "after")
    groups = [{"params": list(model.parameters()), "lr": config.lr}]
    if selector.adapter is not None:
        groups.append({"params": selector.lora_parameters(), "lr": config.lora_lr})
    optimiser = torch.optim.AdamW(groups, weight_decay=config.weight_decay)
    trainable = [e for e in examples if e.target and not e.validation]
    validation = [e for e in examples if e.validation]
    held_out = validation[:: max(1, -(-len(validation) // config.max_validation))] if config.max_validation else []  # spread over the pack
    if not trainable:
        raise ValueError("no training question has an answer in its focus graph")
    started = time.perf_counter()
    steps, running = 0, []
    stop = False
    log(f"{len(trainable)} training questions, {len(held_out)} validation; selector {selector.model_name}"
        f"{' + LoRA' if selector.adapter is not None else ' (frozen)'} on {selector.device}")
    while progress["epoch"] < config.epochs and not stop:
        order = list(range(len(trainable)))
        random.Random(config.seed + progress["epoch"]).shuffle(order)
        model.train()
        selector.train(selector.adapter is not None)
        for k in range(progress["position"], len(order)):
            ex = trainable[order[k]]
            soft, probe = model.encode(*ex.graph.tensors(selector.device))
            loss = selector.loss(selector.inputs(ex.question, ex.graph.names, soft, layout=config.layout), ex.target_text)
            probed = probe_loss(probe, ex.target) if config.probe_weight else None
            total = loss + config.probe_weight * probed if probed is not None else loss
            (total / config.accumulate).backward()
            running.append((float(loss.detach()), None if probed is None else float(probed.detach())))
            progress["position"], progress["questions"] = k + 1, progress["questions"] + 1
            steps += 1
            if steps % config.accumulate == 0:
                torch.nn.utils.clip_grad_norm_([p for g in groups for p in g["params"]], 1.0)
                optimiser.step()
                optimiser.zero_grad()
            if steps % config.save_every == 0:
                means = mean_losses(running)
                history.append({"questions": progress["questions"], **means, "seconds": round(time.perf_counter() - started, 1)})
                log(f"epoch {progress['epoch'] + 1}, {k + 1}/{len(order)}: " + ", ".join(f"{key} {value:.3f}" for key, value in means.items()))
                running = []
                save_checkpoint(model, selector, config, out, progress, history)
            out_of_time = config.time_budget is not None and time.perf_counter() - started > config.time_budget
            if out_of_time or (max_steps is not None and steps >= max_steps):
                stop = True
                break
        else:
            progress["epoch"], progress["position"] = progress["epoch"] + 1, 0
    if steps % config.accumulate:
        optimiser.step()
        optimiser.zero_grad()
    if running:
        history.append({"questions": progress["questions"], **mean_losses(running),
                        "seconds": round(time.perf_counter() - started, 1)})
    result = {"validation": validate(model, selector, held_out, config.layout) if held_out else {}, "questions_seen": progress["questions"],
              "finished": progress["epoch"] >= config.epochs}
    history.append({"validation": result["validation"]})
    log(f"validation: {result['validation']}")
    save_checkpoint(model, selector, config, out, progress, history)
    return {**result, "history": history}
