"""Cypher kept in *.cypher files beside this module. Values always travel as `$parameters`."""

from __future__ import annotations

from functools import cache
from importlib import resources


@cache
def cypher(name: str) -> str:
    return resources.files(__package__).joinpath(f"{name}.cypher").read_text(encoding="utf-8")


def statements(name: str) -> list[str]:
    """The `;`-separated statements of a file (comment lines dropped), e.g. schema.cypher."""
    text = "\n".join(line for line in cypher(name).splitlines() if not line.lstrip().startswith("//"))
    return [part.strip() for part in text.split(";") if part.strip()]
