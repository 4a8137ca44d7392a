"""all-MiniLM-L6-v2 (the bundled text encoder, a 6-layer BERT) run with torch and `tokenizers` alone.

Why not through sentence-transformers: on 2 busy cores `import sentence_transformers` (transformers,
scikit-learn, SciPy) took 16.2 s, `import torch, tokenizers, safetensors.torch` 4.7–4.9 s, and the
question path needs only the forward pass. The pipeline is the model
folder's own (modules.json: Transformer → mean Pooling → Normalize; max_seq_length 256), and
tests/test_text_encoder.py checks both against sentence-transformers on the same texts.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn


class _Layer(nn.Module):
    def __init__(self, dim: int, heads: int, inner: int, eps: float):
        super().__init__()
        self.heads = heads
        self.query, self.key, self.value = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.attention_out, self.attention_norm = nn.Linear(dim, dim), nn.LayerNorm(dim, eps=eps)
        self.inner, self.out, self.out_norm = nn.Linear(dim, inner), nn.Linear(inner, dim), nn.LayerNorm(dim, eps=eps)

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        b, t, d = x.shape
        split = lambda y: y.view(b, t, self.heads, d // self.heads).transpose(1, 2)  # noqa: E731
        scores = split(self.query(x)) @ split(self.key(x)).transpose(-1, -2) / math.sqrt(d // self.heads)
        scores = scores.masked_fill(~mask[:, None, None, :], torch.finfo(scores.dtype).min)
        context = (torch.softmax(scores, dim=-1) @ split(self.value(x))).transpose(1, 2).reshape(b, t, d)
        x = self.attention_norm(x + self.attention_out(context))
        return self.out_norm(x + self.out(nn.functional.gelu(self.inner(x))))


class MiniLM(nn.Module):
    """The BERT encoder of a sentence-transformers folder: token states, and mean-pooled unit vectors."""

    def __init__(self, folder: Path):
        super().__init__()
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        config = json.loads((folder / "config.json").read_text())
        dim, eps = config["hidden_size"], config["layer_norm_eps"]
        self.words = nn.Embedding(config["vocab_size"], dim)
        self.positions = nn.Embedding(config["max_position_embeddings"], dim)
        self.token_types = nn.Embedding(config["type_vocab_size"], dim)
        self.norm = nn.LayerNorm(dim, eps=eps)
        self.layers = nn.ModuleList(_Layer(dim, config["num_attention_heads"], config["intermediate_size"], eps)
                                    for _ in range(config["num_hidden_layers"]))
        self.load_state_dict(_renamed(load_file(str(folder / "model.safetensors")), config["num_hidden_layers"]))
        self.eval()
        max_length = json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"]
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")

    def states(self, texts: list[str] | list[tuple[str, str]]) -> tuple[Tensor, Tensor]:
        """Last-layer token states [B, T, dim] and the padding mask of texts, or of (first, second) pairs
        encoded as "[CLS] first [SEP] second [SEP]" with their segment ids (kgfr/cross_reader.py)."""
        encoded = self.tokenizer.encode_batch(texts)
        device = self.words.weight.device
        ids = torch.tensor([e.ids for e in encoded], device=device)
        mask = torch.tensor([e.attention_mask for e in encoded], dtype=torch.bool, device=device)
        types = torch.tensor([e.type_ids for e in encoded], device=device)
        positions = torch.arange(ids.shape[1], device=device).unsqueeze(0)
        x = self.norm(self.words(ids) + self.positions(positions) + self.token_types(types))
        for layer in self.layers:
            x = layer(x, mask)
        return x, mask

    @torch.inference_mode()
    def encode(self, texts: list[str], batch_size: int = 64, progress: bool = False) -> np.ndarray:
        """Unit vectors (n, dim), float32: the mean of each text's token states, L2-normalised."""
        return self.encode_with_states(texts, batch_size, progress, keep_states=False)[0]

    @torch.inference_mode()
    def encode_with_states(self, texts: list[str], batch_size: int = 64, progress: bool = False,
                           keep_states: bool = True) -> tuple[np.ndarray, list[np.ndarray]]:
        """`encode`'s vectors and, from the same pass, each text's `token_states` (empty with `keep_states` off)."""
        out = []
        states: list[np.ndarray] = [np.zeros(0)] * len(texts) if keep_states else []
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))  # similar lengths batched together: less padding
        starts = range(0, len(order), batch_size)
        if progress:
            from rich.progress import track

            starts = track(starts, description="encoding", transient=True)
        for start in starts:
            chunk = order[start:start + batch_size]
            x, mask = self.states([texts[i] for i in chunk])
            weights = mask.unsqueeze(-1).to(x.dtype)
            pooled = (x * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            out.append(nn.functional.normalize(pooled, dim=-1).float().cpu())
            if keep_states:
                for row, i in enumerate(chunk):
                    states[i] = x[row, : int(mask[row].sum())].float().cpu().numpy()
        vectors = torch.cat(out).numpy() if out else np.zeros((0, self.norm.normalized_shape[0]), np.float32)
        result = np.empty_like(vectors)
        result[order] = vectors
        return result, states

    @torch.inference_mode()
    def token_states(self, texts: list[str]) -> list[np.ndarray]:
        """Each text's last-layer token vectors ([CLS] … [SEP], no padding), [T_i, dim]."""
        return self.encode_with_states(texts, batch_size=max(1, len(texts)))[1]


def _renamed(state: dict[str, Tensor], layers: int) -> dict[str, Tensor]:
    """The BERT checkpoint's names → this module's (the pooler, unused by mean pooling, is dropped)."""
    names = {"embeddings.word_embeddings.weight": "words.weight", "embeddings.position_embeddings.weight": "positions.weight",
             "embeddings.token_type_embeddings.weight": "token_types.weight", "embeddings.LayerNorm.weight": "norm.weight",
             "embeddings.LayerNorm.bias": "norm.bias"}
    parts = {"attention.self.query": "query", "attention.self.key": "key", "attention.self.value": "value",
             "attention.output.dense": "attention_out", "attention.output.LayerNorm": "attention_norm",
             "intermediate.dense": "inner", "output.dense": "out", "output.LayerNorm": "out_norm"}
    for i in range(layers):
        for theirs, ours in parts.items():
            for kind in ("weight", "bias"):
                names[f"encoder.layer.{i}.{theirs}.{kind}"] = f"layers.{i}.{ours}.{kind}"
    return {ours: state[theirs] for theirs, ours in names.items()}
