"""Judging GLOW's answers (§4, App. A.2): exact match always, deterministically (the same class, or
the same text after normalising); exact and hierarchical match by an LLM judge where one is given,
with the paper's judge prompt over a list of (predicted, true) pairs."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from kgqa.core.labels import normalise_label
from kgqa.llm.protocol import LLM, LLMError
from kgqa.llm.session import LLMSession


def exact_match(predicted: str | None, gold: Sequence[str]) -> bool:
    return predicted is not None and normalise_label(predicted) in {normalise_label(g) for g in gold}


def llm_judge(llm: LLM, pairs: Sequence[tuple[str, str]]) -> list[tuple[int, int]]:
    """[(exact, hierarchical)] per pair from one judge call; LLMError when the reply is not a list of
    exactly as many pairs of 0/1."""
    session = LLMSession(llm, max_calls=1)
    listing = "[" + ", ".join(f"[{p}, {t}]" for p, t in pairs) + "]"
    reply = session.ask("glow.judge", "glow_judge", pairs=listing, count=len(pairs)).text
    found = re.search(r"\[\s*\[.*\]\s*\]", reply, re.DOTALL)
    try:
        marks = json.loads(found.group(0)) if found else None
    except ValueError:
        marks = None
    if not isinstance(marks, list) or len(marks) != len(pairs) or not all(
            isinstance(m, list) and len(m) == 2 and all(v in (0, 1) for v in m) for m in marks):
        raise LLMError(f"the judge's reply is not {len(pairs)} pairs of 0/1: {reply[:200]!r}")
    return [(int(m[0]), int(m[1])) for m in marks]
