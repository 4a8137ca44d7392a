"""A local index of a KG's entity labels, for the linker's fallbacks when no label in the question
matches exactly or normalised (misspellings, "ginger rodgers"):

- fuzzy: character-trigram candidates (one `bincount` over the posting lists), then a
  similarity ratio on the normalised strings (difflib);
- embedding: cosine similarity between sentence embeddings of the question span and of every label.

Built once per KG from the store, page by page (`GraphStore.label_page`), and cached on disk with
the label embeddings, keyed by the KG's name and its fact/entity/relation counts: a load that adds
facts or entities builds anew; one that only adds labels does not (delete ~/.cache/kgqa/labels).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import logging
import os
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kgqa.core.errors import KGQAError
from kgqa.core.labels import normalise_label
from kgqa.core.store import GraphStore

PAGE = 5000  # below Virtuoso's default 10,000-row cap
MAX_LABELS = 2_000_000  # a larger KG gets no local index: the fallbacks are then skipped
TOP = 30  # candidates by shared trigrams that get the exact similarity
MIN_DICE = 0.4  # fewer shared trigrams than this: not a misspelling of each other


@dataclass(frozen=True)
class LabelMatch:
    iri: str
    label: str
    score: float  # similarity in [0, 1]


def _trigrams(text: str) -> set[str]:
    padded = f"  {text} "
    return {padded[i : i + 3] for i in range(len(padded) - 2)}


class LabelIndex:
    def __init__(self, iris: list[str], labels: list[str], cache_key: str | None = None):
        self.iris = iris
        self.labels = labels
        self.keys = [normalise_label(x) for x in labels]
        self.cache_key = cache_key
        postings: dict[str, list[int]] = {}
        sizes = np.zeros(len(labels), dtype=np.int32)
        for i, key in enumerate(self.keys):
            grams = _trigrams(key)
            sizes[i] = len(grams)
            for g in grams:
                postings.setdefault(g, []).append(i)
        self._postings = {g: np.asarray(ids, dtype=np.int32) for g, ids in postings.items()}
        self._sizes = sizes
        self._vectors: np.ndarray | None = None
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.labels)

    def fuzzy(self, text: str, k: int = 5, threshold: float = 0.85) -> list[LabelMatch]:
        """Labels whose normalised form is at least `threshold` similar to `text`'s (difflib ratio),
        best first; candidates are the `TOP` labels sharing the most trigrams (Dice coefficient)."""
        key = normalise_label(text)
        grams = _trigrams(key)
        lists = [self._postings[g] for g in grams if g in self._postings]
        if not lists or len(key) < 4:
            return []
        shared = np.bincount(np.concatenate(lists), minlength=len(self.labels))
        dice = 2.0 * shared / (self._sizes + len(grams))
        top = np.argpartition(-dice, min(TOP, len(dice) - 1))[:TOP]
        found = []
        for i in top[np.argsort(-dice[top])]:
            if dice[i] < MIN_DICE:
                break
            other = self.keys[i]
            if 2.0 * min(len(key), len(other)) / (len(key) + len(other)) < threshold:  # ratio's bound by length
                continue
            matcher = difflib.SequenceMatcher(None, key, other, autojunk=False)
            # the cheap upper bounds first (difflib's documented pattern)
            if matcher.real_quick_ratio() < threshold or matcher.quick_ratio() < threshold:
                continue
            ratio = matcher.ratio()
            if ratio >= threshold:
                found.append(LabelMatch(self.iris[i], self.labels[i], ratio))
        found.sort(key=lambda m: (-m.score, m.label))
        return found[:k]

    def nearest(self, texts: list[str], encoder, threshold: float = 0.9) -> list[LabelMatch | None]:  # type: ignore[no-untyped-def]
        """For each text, the label with the most similar sentence embedding, if its cosine ≥ threshold."""
        if not texts or not self.labels:
            return [None] * len(texts)
        vectors = self.vectors(encoder)
        sims = encoder.encode(texts) @ vectors.T
        best = sims.argmax(axis=1)
        return [LabelMatch(self.iris[j], self.labels[j], float(sims[i, j])) if sims[i, j] >= threshold else None for i, j in enumerate(best)]

    def vectors(self, encoder) -> np.ndarray:  # type: ignore[no-untyped-def]
        """Embeddings of every label (computed once, then read from the disk cache as float16)."""
        with self._lock:
            if self._vectors is None:
                path = _cache_dir() / f"{self.cache_key}-{encoder.name}.npy" if self.cache_key else None
                stored = np.load(path) if path is not None and path.exists() else None
                if stored is None or stored.shape[0] != len(self.labels):
                    stored = encoder.encode_bulk(self.labels, progress=len(self.labels) > 5000).astype(np.float16)
                    if path is not None:
                        _atomic_save(path, lambda f: np.save(f, stored))
                self._vectors = stored.astype(np.float32)
            return self._vectors


def _cache_dir() -> Path:
    return Path(os.environ.get("KGQA_CACHE", Path.home() / ".cache" / "kgqa")) / "labels"


def _atomic_save(path: Path, write) -> None:  # type: ignore[no-untyped-def]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        write(f)
    os.replace(tmp, path)


def build(store: GraphStore, max_labels: int = MAX_LABELS) -> LabelIndex | None:
    """The index of `store`'s KG (from the disk cache when the KG is unchanged); None when it has
    more than `max_labels` labels."""
    counts = store.counts()
    key = f"{store.kg}-" + hashlib.sha256(repr((store.kg, counts)).encode()).hexdigest()[:16]
    path = _cache_dir() / f"{key}.json"
    if path.exists():
        data = json.loads(path.read_text(encoding="utf-8"))
        return LabelIndex(data["iris"], data["labels"], key)
    iris: list[str] = []
    labels: list[str] = []
    after = None
    while True:
        page = store.label_page(after, PAGE)
        iris += [iri for iri, _ in page]
        labels += [label for _, label in page]
        if len(labels) > max_labels:
            return None
        if len(page) < PAGE:
            break
        after = page[-1]
    _atomic_save(path, lambda f: f.write(json.dumps({"iris": iris, "labels": labels}, ensure_ascii=False).encode()))
    return LabelIndex(iris, labels, key)


_INDEXES: "weakref.WeakKeyDictionary[object, LabelIndex | None]" = weakref.WeakKeyDictionary()
_LOCKS: "weakref.WeakKeyDictionary[object, threading.Lock]" = weakref.WeakKeyDictionary()
_LOCKS_LOCK = threading.Lock()
log = logging.getLogger(__name__)


def index_for(store: GraphStore) -> LabelIndex | None:
    """One index per store object, built on first use (one build at a time per store). A store that
    cannot give its labels gets None, once: linking then goes on without its fallbacks."""
    with _LOCKS_LOCK:
        lock = _LOCKS.setdefault(store, threading.Lock())
    with lock:
        if store not in _INDEXES:
            try:
                _INDEXES[store] = build(store)
            except (KGQAError, OSError, ValueError) as exc:
                log.warning("no label index for KG %r (linking goes on without fuzzy/embedding fallbacks): %s", store.kg, exc)
                _INDEXES[store] = None
        return _INDEXES[store]
