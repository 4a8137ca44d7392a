"""Path-aware reading (issue 46): a small cross-encoder reads the question (topics masked) together
with each relation path that reaches a candidate answer from a topic, so that which relation comes
last — what is asked for — and how many hops the question spans are read in order, which one pooled
sentence vector (KGFR's q, the text prior's cosine) barely keeps.

Paths are grouped by relation sequence ("directed by → directed", whatever the films), so a question
costs one forward pass over a few short pairs. A node's reading is the best logit among the groups
that reach it; the fused score is c + γ·(reading − best reading), applied to the scorer's top nodes
only (the others keep c). The model's own scores still feed confidence and declining (calibrated
on them), the fused ones the ranking, the margin answer set and the evidence.

The model is the sentence encoder's MiniLM (all-MiniLM-L6-v2, from its PyPI wheel) with a LoRA adapter
on its attention (query, value) and a linear head on the first token, trained listwise: a softmax
over a question's groups, the target spread over the groups whose reached set best matches the gold
answers (bench/path_reader.py builds the data and trains it)."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from kgqa.core.subgraph import Subgraph
from kgqa.retrieval.relation_text import relation_description

MAX_PATH = 3  # edges
MAX_SEQUENCES = 400  # relation sequences followed per question (hubs of many relation types)
MAX_GROUPS = 12  # groups read per question: those reaching the scorer's top nodes, shortest first
MAX_TOKENS = 64
READER_DIR = "path_reader"  # in a KGFR checkpoint folder: adapter, head and config
ARROW = " → "


def path_groups(sg: Subgraph, max_len: int = MAX_PATH, targets: Sequence[int] | None = None) -> dict[tuple[int, ...], np.ndarray]:
    """Each relation-type sequence (types as in `Subgraph`: 2r + inverse) walked from the topics, of at
    most `max_len` edges → the nodes it ends on (topics excluded), as a sorted array. Breadth first:
    a sequence is extended by every edge type leaving the nodes it reached (edges looked up by their
    head, so a step costs the reached nodes' degrees, not the subgraph's size); walks may pass
    through a topic. With `targets`, a walk goes on only through nodes from which a target is still
    within reach (every fact is an edge both ways, so that is the undirected distance), and only
    sequences ending on a target are kept: on a dense 2-hop FB15k-237 subgraph (31k edges) this
    takes the cost from ~280 ms to a few."""
    heads = np.concatenate([sg.edge_index[0], sg.edge_index[1]])
    tails = np.concatenate([sg.edge_index[1], sg.edge_index[0]])
    types = np.concatenate([sg.edge_type, sg.edge_type ^ 1])
    is_topic = np.zeros(sg.num_nodes, dtype=bool)
    is_topic[np.asarray(sg.topics, dtype=np.int64)] = True
    near = _distance_to(targets, heads, tails, sg.num_nodes, max_len) if targets is not None else None
    by_head = _by_head(heads, sg.num_nodes)
    into_targets = _by_head(heads, sg.num_nodes, near[tails] == 0) if near is not None else by_head  # the last step's edges
    frontier: list[tuple[tuple[int, ...], np.ndarray]] = [((), np.flatnonzero(is_topic))]
    out: dict[tuple[int, ...], np.ndarray] = {}
    for step in range(1, max_len + 1):
        grown = []
        order, ptr = into_targets if step == max_len else by_head
        for sequence, reached in frontier:
            starts, lengths = ptr[reached], ptr[reached + 1] - ptr[reached]
            total = int(lengths.sum())
            if total == 0:
                continue
            offsets = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
            edges = order[np.repeat(starts, lengths) + offsets]
            kinds, ends = types[edges], tails[edges]
            by_kind = np.argsort(kinds, kind="stable")
            kinds, ends = kinds[by_kind], ends[by_kind]
            cuts = np.flatnonzero(np.diff(kinds)) + 1
            for kind, part in zip(kinds[np.concatenate([[0], cuts])].tolist(), np.split(ends, cuts)):
                part = np.unique(part)
                if near is not None:
                    part = part[near[part] <= max_len - step]
                if part.size:
                    grown.append(((*sequence, int(kind)), part))
        frontier = grown[:MAX_SEQUENCES]
        for sequence, ends in frontier:
            kept = ends[~is_topic[ends] & (near[ends] == 0 if near is not None else True)]
            if kept.size:
                out[sequence] = kept
    return out


def _by_head(heads: np.ndarray, num_nodes: int, keep: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Edge ids sorted by head (only those `keep` marks), and each node's range in them."""
    ids = np.flatnonzero(keep) if keep is not None else np.arange(heads.shape[0])
    order = ids[np.argsort(heads[ids], kind="stable")]
    return order, np.searchsorted(heads[order], np.arange(num_nodes + 1))


def _distance_to(targets: Sequence[int], heads: np.ndarray, tails: np.ndarray, num_nodes: int, limit: int) -> np.ndarray:
    """Each node's distance (in edges, up to `limit`; beyond: limit + 1) to the nearest target."""
    far = limit + 1
    distance = np.full(num_nodes, far, dtype=np.int64)
    frontier = np.unique(np.asarray(targets, dtype=np.int64))
    distance[frontier] = 0
    for d in range(1, limit + 1):
        seen = np.zeros(num_nodes, dtype=bool)
        seen[frontier] = True
        nxt = np.unique(tails[seen[heads]])
        nxt = nxt[distance[nxt] == far]
        if nxt.size == 0:
            break
        distance[nxt] = d
        frontier = nxt
    return distance


def verbalise(sg: Subgraph, sequence: Sequence[int]) -> str:
    """"directed by → directed": each edge's relation text read in the direction walked."""
    return ARROW.join(relation_description(sg.relation_labels[t // 2], bool(t % 2)) for t in sequence)


def groups_for(sg: Subgraph, nodes: Sequence[int], limit: int = MAX_GROUPS) -> list[tuple[tuple[int, ...], np.ndarray]]:
    """The groups that reach any of `nodes` (the scorer's top candidates), shortest first, at most `limit`,
    one per distinct text (two relation types may read alike)."""
    found = list(path_groups(sg, min(MAX_PATH, max(1, sg.hops)), targets=sorted(set(nodes))).items())
    found.sort(key=lambda item: (len(item[0]), item[0]))
    return found[:limit]


@dataclass(frozen=True)
class ReaderConfig:
    weight: float  # γ
    top: int  # the scorer's top nodes re-ranked
    lora_r: int = 8
    lora_alpha: int = 16
    layers: int = 4  # MiniLM's first layers kept: a pair of short texts needs few, and each costs CPU time


class PathReaderModel(torch.nn.Module):
    """MiniLM's first `layers` layers (frozen) + LoRA on query/value + a linear head on the first
    token: (question, path) → logit."""

    def __init__(self, lora_r: int = 8, lora_alpha: int = 16, layers: int = 4, dropout: float = 0.1):
        super().__init__()
        from peft import LoraConfig, get_peft_model
        from transformers import AutoModel, AutoTokenizer

        from kgqa.retrieval.text import minilm_path, quiet_loading

        with quiet_loading():
            base = AutoModel.from_pretrained(str(minilm_path()))
            self.tokenizer = AutoTokenizer.from_pretrained(str(minilm_path()))
        base.encoder.layer = base.encoder.layer[:layers]
        base.config.num_hidden_layers = layers
        config = LoraConfig(r=lora_r, lora_alpha=lora_alpha, lora_dropout=dropout, target_modules=["query", "value"])
        self.encoder = get_peft_model(base, config)
        self.head = torch.nn.Linear(base.config.hidden_size, 1)

    def forward(self, questions: Sequence[str], paths: Sequence[str]) -> torch.Tensor:
        device = self.head.weight.device
        batch = self.tokenizer(list(questions), list(paths), padding=True, truncation=True, max_length=MAX_TOKENS, return_tensors="pt").to(device)
        hidden = self.encoder(**batch).last_hidden_state[:, 0]
        return self.head(hidden).squeeze(-1)

    def save(self, folder: Path, config: ReaderConfig, meta: dict) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.encoder.save_pretrained(str(folder / "lora"))
        torch.save(self.head.state_dict(), folder / "head.pt")
        (folder / "config.json").write_text(json.dumps({"weight": config.weight, "top": config.top, "lora_r": config.lora_r,
                                                        "lora_alpha": config.lora_alpha, "layers": config.layers, **meta}, indent=2) + "\n")

    @classmethod
    def load(cls, folder: Path) -> tuple["PathReaderModel", ReaderConfig]:
        from peft import set_peft_model_state_dict
        from safetensors.torch import load_file

        spec = json.loads((folder / "config.json").read_text())
        config = ReaderConfig(float(spec["weight"]), int(spec["top"]), int(spec["lora_r"]), int(spec["lora_alpha"]), int(spec["layers"]))
        model = cls(config.lora_r, config.lora_alpha, config.layers, dropout=0.0)
        set_peft_model_state_dict(model.encoder, load_file(str(folder / "lora" / "adapter_model.safetensors")))
        model.head.load_state_dict(torch.load(folder / "head.pt", map_location="cpu", weights_only=True))
        model.eval()
        return model, config


class PathReader:
    """The trained reader of a checkpoint, shared by the threads of a process (one forward at a time)."""

    def __init__(self, folder: Path):
        self.model, self.config = PathReaderModel.load(folder)
        self._lock = threading.Lock()

    def read(self, sg: Subgraph, probe: str, nodes: Sequence[int]) -> tuple[dict[int, float], list[tuple[str, float]]]:
        """Each of `nodes` → its best group logit (nodes no group reaches are left out), and each
        group's text with its logit (the evidence)."""
        groups = groups_for(sg, nodes, MAX_GROUPS)
        if not groups:
            return {}, []
        texts = [verbalise(sg, seq) for seq, _ in groups]
        with self._lock, torch.inference_mode():
            logits = self.model([probe] * len(texts), texts).float().tolist()
        best: dict[int, float] = {}
        wanted = set(nodes)
        for (_, ends), logit in zip(groups, logits):
            for node in ends.tolist():
                if node in wanted and logit > best.get(node, -np.inf):
                    best[node] = logit
        return best, list(zip(texts, logits))

    def fuse(self, scores: torch.Tensor, sg: Subgraph, probe: str) -> tuple[torch.Tensor, list[tuple[str, float]]]:
        """c + γ·(reading − best reading) on the top nodes by c; a top node no group reaches gets the worst reading."""
        finite = torch.isfinite(scores)
        order = [int(i) for i in torch.argsort(scores, descending=True)[: self.config.top] if finite[i]]
        best, read = self.read(sg, probe, order)
        if not best:
            return scores, read
        top_reading, worst = max(best.values()), min(best.values())
        fused = scores + self.config.weight * (worst - top_reading)  # beyond the top: the worst reading
        for node in order:
            fused[node] = scores[node] + self.config.weight * (best.get(node, worst) - top_reading)
        return fused, read
