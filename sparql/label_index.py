"""An on-disk text index of one KG's entity labels, beside a store that has none of its own (the
embedded Oxigraph, `oxigraph serve`, any SPARQL endpoint): the linker's fallbacks ask it for the
few labels a misspelt span may mean, so that no question ever reads the whole KG.

SQLite (Python's own `sqlite3`, FTS5): one file per KG, written by the loader batch by batch, in the
same order as the store's facts (a batch's labels are committed before the store records the batch
as loaded, so a resumed load rewrites at most one batch, and rewriting is idempotent).

- `labels(id, iri, label)`: every (entity, label) pair once. The id is the normalised label's length
  in its top bits and a hash of the pair below, so that the word index, whose lists are kept in id
  order, hands out the labels of a length range shortest first without ranking every match.
- `words`: an FTS5 index of the normalised labels (no content kept: `labels` has it; no column
  sizes either, which only ranking needs: with them, inserts slowed as the index grew).
- `near(d, word)`: every word of the KG under itself and under each of its one-letter deletions
  (SymSpell), so that the words one edit away (a letter deleted, added, replaced, or two swapped)
  are found by a few indexed look-ups at any size of vocabulary.

A span is searched as its words, each as written or one edit away, all present in the label (the
`fuzzy` mode), or any of them (the `any_word` mode, for the embedding fallback); the similarity
that decides a match is computed by the linker over the few candidates this returns.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from kgqa.core.cache import cache_root
from kgqa.core.errors import NoLabelIndex, StoreError
from kgqa.core.labels import MIN_FUZZY_WORD, deletion_keys, normalise_label, one_edit_deletions, within_one_edit

log = logging.getLogger(__name__)

SCHEMA_VERSION = "1"
LENGTH_SHIFT = 48  # id = key length << 48 | 48-bit hash of (IRI, label)
MAX_LENGTH = (1 << 14) - 1
KNOWN_WORDS = 500_000  # words a writer remembers having indexed (forgetting only costs a look-up)


def length_range(length: int, threshold: float) -> tuple[int, int]:
    """Key lengths a label may have and still reach `threshold` similarity (difflib's ratio is at most
    2·min/(a+b)) with a span of `length` characters."""
    return max(1, int(length * threshold / (2 - threshold))), min(MAX_LENGTH, int(length * (2 - threshold) / threshold) + 1)


def _row_id(iri: str, label: str, key: str) -> int:
    digest = hashlib.blake2b(f"{iri}\0{label}".encode(), digest_size=6).digest()
    return (min(len(key), MAX_LENGTH) << LENGTH_SHIFT) | int.from_bytes(digest, "big")


def _quoted(word: str) -> str:
    return '"' + word.replace('"', '""') + '"'


class LabelIndex:
    """One KG's label index (see the module's docstring). Thread-safe; `open` for reading, `create`
    for loading (it adds to what is there)."""

    def __init__(self, connection: sqlite3.Connection, location: str, writable: bool):
        self._db = connection
        self.location = location
        self.writable = writable
        self._lock = threading.Lock()
        self._known_words: set[str] = set()

    @classmethod
    def create(cls, path: Path | None) -> "LabelIndex":
        """Open for loading, creating the file (and its folder) if need be; `None`: in memory."""
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        location = str(path) if path is not None else ":memory:"
        db = sqlite3.connect(location, check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA cache_size=-131072")  # 128 MB of pages: random ids insert into B-trees much larger than SQLite's default 2 MB
        db.execute("PRAGMA temp_store=MEMORY")
        db.executescript(
            f"""
            CREATE TABLE IF NOT EXISTS info(key TEXT PRIMARY KEY, value TEXT NOT NULL);
            INSERT OR IGNORE INTO info VALUES ('version', '{SCHEMA_VERSION}');
            CREATE TABLE IF NOT EXISTS labels(id INTEGER PRIMARY KEY, iri TEXT NOT NULL, label TEXT NOT NULL);
            CREATE VIRTUAL TABLE IF NOT EXISTS words USING fts5(key, content='', detail=none, columnsize=0, tokenize='unicode61 remove_diacritics 2');
            CREATE TABLE IF NOT EXISTS near(d TEXT NOT NULL, word TEXT NOT NULL, PRIMARY KEY (d, word)) WITHOUT ROWID;
            """
        )
        version = db.execute("SELECT value FROM info WHERE key = 'version'").fetchone()[0]
        if version != SCHEMA_VERSION:
            raise StoreError(f"label index {location} was written by another kgqa (format {version}, this one reads {SCHEMA_VERSION}); delete it and run `kgqa index`")
        return cls(db, location, writable=True)

    @classmethod
    def open(cls, path: Path) -> "LabelIndex":
        """Open an existing index read-only; `NoLabelIndex` if there is none."""
        if not path.is_file():
            raise NoLabelIndex(f"no label index at {path}")
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False, isolation_level=None)
        try:
            version = db.execute("SELECT value FROM info WHERE key = 'version'").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            db.close()
            raise StoreError(f"label index {path} cannot be read ({exc}); delete it and run `kgqa index`") from exc
        if version != SCHEMA_VERSION:
            db.close()
            raise StoreError(f"label index {path} was written by another kgqa (format {version}); delete it and run `kgqa index`")
        return cls(db, str(path), writable=False)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM labels").fetchone()[0]

    # --- loading ---
    def add(self, pairs: Iterable[tuple[str, str]]) -> int:
        """Index (entity IRI, label) pairs, in one transaction; pairs already there are skipped
        (idempotent). Returns how many were new."""
        rows = []
        for iri, label in pairs:
            key = normalise_label(label)
            if not key:
                continue
            rows.append((_row_id(iri, label, key), iri, label, key))
        if not rows:
            return 0
        with self._lock:
            db = self._db
            db.execute("BEGIN")
            try:
                fresh = self._absent(rows)
                # a contentless FTS5 table must never be given an id twice: only ids new to `labels`
                db.executemany("INSERT INTO labels(id, iri, label) VALUES (?, ?, ?)", [r[:3] for r in fresh])
                db.executemany("INSERT INTO words(rowid, key) VALUES (?, ?)", [(r[0], r[3]) for r in fresh])
                self._add_words({w for r in fresh for w in r[3].split()})
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        return len(fresh)

    def _absent(self, rows: list[tuple[int, str, str, str]]) -> list[tuple[int, str, str, str]]:
        """The rows whose id `labels` does not hold yet, each id once (a hash collision keeps the first)."""
        db = self._db
        db.execute("CREATE TEMP TABLE IF NOT EXISTS batch_ids(id INTEGER PRIMARY KEY)")
        db.execute("DELETE FROM batch_ids")
        db.executemany("INSERT OR IGNORE INTO batch_ids VALUES (?)", [(r[0],) for r in rows])
        present = {row[0] for row in db.execute("SELECT b.id FROM batch_ids b JOIN labels l ON l.id = b.id")}
        fresh = []
        for r in rows:
            if r[0] not in present:
                present.add(r[0])
                fresh.append(r)
        return fresh

    def _add_words(self, words: set[str]) -> None:
        new = [w for w in words if w not in self._known_words]
        if not new:
            return
        db = self._db
        db.execute("CREATE TEMP TABLE IF NOT EXISTS batch_words(word TEXT PRIMARY KEY) WITHOUT ROWID")
        db.execute("DELETE FROM batch_words")
        db.executemany("INSERT OR IGNORE INTO batch_words VALUES (?)", [(w,) for w in new])
        unseen = [row[0] for row in db.execute("SELECT word FROM batch_words b WHERE NOT EXISTS (SELECT 1 FROM near n WHERE n.d = b.word AND n.word = b.word)")]
        rows = [(w, w) for w in unseen]
        rows += [(d, w) for w in unseen if len(w) >= MIN_FUZZY_WORD for d in one_edit_deletions(w)]
        db.executemany("INSERT OR IGNORE INTO near(d, word) VALUES (?, ?)", rows)
        if len(self._known_words) + len(new) > KNOWN_WORDS:
            self._known_words.clear()
        self._known_words.update(new)

    # --- searching ---
    def variants(self, words: Iterable[str]) -> dict[str, list[str]]:
        """Each word → the KG's words equal to it or one edit away (none: the KG has no such word)."""
        words = list(dict.fromkeys(words))
        asked: dict[str, set[str]] = {w: set(deletion_keys(w)) for w in words}
        keys = sorted(set().union(*asked.values())) if asked else []
        found: dict[str, set[str]] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                part = keys[start : start + 500]
                query = f"SELECT d, word FROM near WHERE d IN ({','.join('?' * len(part))})"
                for d, word in self._db.execute(query, part):
                    found.setdefault(d, set()).add(word)
        out = {}
        for w in words:
            near = set().union(*(found.get(k, set()) for k in asked[w]))
            if len(w) < MIN_FUZZY_WORD:
                near &= {w}
            out[w] = sorted(x for x in near if within_one_edit(w, x))
        return out

    def search(self, texts: Sequence[str], any_word: bool = False, limit: int = 50, threshold: float = 0.8) -> dict[str, list[tuple[str, str]]]:
        """Candidate (IRI, label) pairs per text: labels holding each of its words (as written or one
        edit away), or with `any_word` any of them; only labels whose length could reach `threshold`
        similarity, nearest lengths first (shortest first among those longer), at most `limit`."""
        keyed = {text: normalise_label(text) for text in texts}
        variants = self.variants(w for key in keyed.values() for w in key.split())
        out: dict[str, list[tuple[str, str]]] = {}
        for text, key in keyed.items():
            words = key.split()
            if not words or (not any_word and not all(variants[w] for w in words)):
                out[text] = []
                continue
            groups = ["(" + " OR ".join(_quoted(v) for v in variants[w]) + ")" for w in words if variants[w]]
            if not groups:
                out[text] = []
                continue
            expression = (" OR " if any_word else " AND ").join(groups)
            low, high = length_range(len(key), threshold)
            out[text] = self._matching(expression, low, high, len(key), limit)
        return out

    def _matching(self, expression: str, low: int, high: int, length: int, limit: int) -> list[tuple[str, str]]:
        """Labels matching an FTS5 expression with key length in [low, high]: those at least as long as
        the text first (shortest first), then the shorter ones (longest first)."""
        query = ("SELECT l.iri, l.label FROM words w JOIN labels l ON l.id = w.rowid "
                 "WHERE words MATCH ? AND w.rowid >= ? AND w.rowid < ? ORDER BY w.rowid {} LIMIT ?")
        with self._lock:
            longer = self._db.execute(query.format("ASC"), (expression, length << LENGTH_SHIFT, (high + 1) << LENGTH_SHIFT, limit)).fetchall()
            shorter = self._db.execute(query.format("DESC"), (expression, low << LENGTH_SHIFT, length << LENGTH_SHIFT, limit)).fetchall()
        merged = []
        for i in range(max(len(longer), len(shorter))):
            merged += [pair[i] for pair in (longer, shorter) if i < len(pair)]
        return [(iri, label) for iri, label in merged[:limit]]


def embedded_index_path(store_path: Path, kg: str) -> Path:
    """Where an embedded store's label index of `kg` lives: in a folder beside the store's own."""
    return store_path.parent / f"{store_path.name}.labels" / f"{kg}.sqlite"


def endpoint_index_path(url: str, kg: str) -> Path:
    """Where the label index of `kg` at a SPARQL endpoint lives (under KGQA_CACHE, by URL)."""
    digest = hashlib.sha256(url.rstrip("/").encode()).hexdigest()[:16]
    return cache_root() / "labels" / f"{digest}-{kg}.sqlite"


def build_index(pairs: Iterable[tuple[str, str]], index: LabelIndex, batch: int = 20_000,
                progress: "Callable[[int], None] | None" = None) -> int:
    """Add every (entity IRI, label) pair a store streams to `index`, `batch` at a time (idempotent:
    an interrupted build is finished by running it again). Returns the pairs read."""
    read = 0
    chunk: list[tuple[str, str]] = []
    for pair in pairs:
        chunk.append(pair)
        if len(chunk) >= batch:
            index.add(chunk)
            read += len(chunk)
            chunk = []
            if progress:
                progress(read)
    index.add(chunk)
    read += len(chunk)
    if progress:
        progress(read)
    return read
