"""Prompt files (engine/prompts/*.txt), one per prompt of the papers.

A file starts with `# key: value` header lines — `source` (the paper section it comes from), `stop`
(a JSON list of stop strings), `max_tokens`, `final_newline` (false: the reply continues the last
line, e.g. after "Reply:") — then the body, a `string.Template` (`$question`). A
block between `### example` and `### end example` is a worked example: kept for base models, which
need few-shot prompts, and dropped for instruction-tuned ones, which get the paper's zero-shot text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from string import Template

PROMPT_DIR = Path(__file__).resolve().parent / "prompts"
_EXAMPLE = re.compile(r"^### example\n.*?^### end example\n", re.DOTALL | re.MULTILINE)


@dataclass(frozen=True)
class Prompt:
    name: str
    source: str
    body: str
    stop: tuple[str, ...]
    max_tokens: int

    def render(self, few_shot: bool, **values: object) -> str:
        body = self.body if few_shot else _EXAMPLE.sub("", self.body)
        body = body.replace("### example\n", "").replace("### end example\n", "")
        try:
            return Template(body).substitute({k: str(v) for k, v in values.items()})
        except KeyError as missing:
            raise ValueError(f"prompt {self.name!r} needs a value for {missing}") from None


@lru_cache(maxsize=None)
def load_prompt(name: str) -> Prompt:
    path = PROMPT_DIR / f"{name}.txt"
    if not path.exists():
        raise ValueError(f"no prompt file {path}")
    header: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    while lines and lines[0].startswith("# "):
        key, _, value = lines.pop(0)[2:].partition(":")
        header[key.strip()] = value.strip()
    return Prompt(
        name=name,
        source=header.get("source", ""),
        body="".join(lines) if header.get("final_newline", "true") != "false" else "".join(lines).rstrip("\n"),
        stop=tuple(json.loads(header["stop"])) if "stop" in header else (),
        max_tokens=int(header.get("max_tokens", 256)),
    )
