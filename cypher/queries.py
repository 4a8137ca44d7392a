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


@cache
def repeated(name: str, times: int) -> str:
    """A query whose part between the lines `// @hop` and `// @end` is written `times` times, each
    copy's `{{hop}}` replaced by its number, 1 to `times` (expand_hops.cypher)."""
    head, rest = cypher(name).split("// @hop\n", 1)
    body, tail = rest.split("// @end\n", 1)
    return head + "".join(body.replace("{{hop}}", str(hop)) for hop in range(1, times + 1)) + tail
