"""Question-answer files: MetaQA (`question [topic]<TAB>a1|a2`) and generic JSONL
(`{"question": …, "answers": [labels], "topics": [labels]}`, topics optional)."""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

from kgqa.core.errors import BadInputLine

_BRACKETED = re.compile(r"\[([^\]]+)\]")


@dataclass(frozen=True)
class QAExample:
    qid: str
    question: str  # brackets removed
    answers: tuple[str, ...]
    topics: tuple[str, ...] = ()  # gold topic labels where the file gives them
    hop: int | None = None
    meta: dict = field(default_factory=dict, compare=False, hash=False)


def read_qa(path: str | Path, hop: int | None = None) -> list[QAExample]:
    """Read a QA file; the format comes from the suffix (.jsonl/.json → JSONL, else MetaQA)."""
    path = Path(path)
    if not path.is_file():
        raise BadInputLine(str(path), 0, "no such file")
    if hop is None:
        found = re.search(r"(\d)-hop", str(path))
        hop = int(found.group(1)) if found else None
    examples = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            qid = f"{path.parent.name}/{path.name}:{number}"
            if path.suffix in (".jsonl", ".json"):
                try:
                    row = json.loads(line)
                    question, answers = str(row["question"]), tuple(str(a) for a in row["answers"])
                    topics = tuple(str(t) for t in row.get("topics", ()))
                except (ValueError, KeyError, TypeError) as exc:
                    raise BadInputLine(str(path), number, f"not a QA record ({exc})", line.strip()) from None
                examples.append(QAExample(qid, question, answers, topics, row.get("hop", hop)))
                continue
            text, _, answer_text = line.rstrip("\n").partition("\t")
            if not answer_text:
                raise BadInputLine(str(path), number, "expected `question<TAB>answer|answer`", line.strip())
            topics = tuple(_BRACKETED.findall(text))
            examples.append(QAExample(qid, _BRACKETED.sub(r"\1", text).strip(), tuple(answer_text.split("|")), topics, hop))
    return examples


def split(examples: list[QAExample], validation: float, seed: int) -> tuple[list[QAExample], list[QAExample]]:
    """A fixed-seed split into (train, validation)."""
    order = list(range(len(examples)))
    random.Random(seed).shuffle(order)
    cut = int(round(len(order) * (1 - validation)))
    return [examples[i] for i in sorted(order[:cut])], [examples[i] for i in sorted(order[cut:])]
