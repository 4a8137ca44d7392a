"""Why a written query is not run: one rule per refusal, named in the trace and in the retry prompt."""

from __future__ import annotations

from kgqa.core.errors import KGQAError


class QueryRefused(KGQAError):
    """A query an LLM wrote broke a rule of `text2query`; nothing of it ran."""

    def __init__(self, rule: str, detail: str):
        super().__init__(f"refused ({rule}): {detail}")
        self.rule = rule
        self.detail = detail
