"""Where kgqa keeps what it computes or fetches once (text vectors, label indexes of endpoints,
relation phrasings, the BioKG's and WordNet's files, Neo4j's jars): $KGQA_CACHE, else ~/.cache/kgqa."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    return Path(os.environ.get("KGQA_CACHE", Path.home() / ".cache" / "kgqa"))
