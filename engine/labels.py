"""Label normalisation shared by the loaders (which store it) and the resolver (which looks it up)."""

from __future__ import annotations

import re
import unicodedata

_NON_WORD = re.compile(r"[^\w]+", re.UNICODE)


def normalise_label(text: str) -> str:
    """Case-, accent- and punctuation-insensitive key: "The Wizard of Oz!" → "the wizard of oz"."""
    decomposed = unicodedata.normalize("NFKD", text)
    no_marks = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(_NON_WORD.sub(" ", no_marks.casefold()).replace("_", " ").split())
