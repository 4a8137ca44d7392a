"""How an LLM's reply becomes one of a fixed set of options (GLOW's classes, §3.1; GraSP's
decisions). Where the model can score text (a local transformers model), each option is scored by its
log-likelihood after the prompt and the best is taken; otherwise the model writes a reply and it is
mapped onto the options: the option it equals (after normalising), else the longest option it
contains, else the option whose words it shares most."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from kgqa.core.answer import LLMCall
from kgqa.core.labels import normalise_label
from kgqa.llm.prompt import load_prompt
from kgqa.llm.protocol import LLM, LLMError
from kgqa.llm.session import CallBudgetExceeded, LLMSession


@dataclass
class Choice:
    index: int | None  # the chosen class, None when the reply matched none
    how: str  # likelihood | equal | contains | words | none
    text: str  # the reply ("" when scored)
    scores: list[float] | None = None  # log-likelihood per class
    prompt: str = ""


def map_onto_labels(reply: str, labels: Sequence[str]) -> tuple[int | None, str]:
    first = normalise_label(reply.strip().splitlines()[0] if reply.strip() else "")
    first = re.sub(r"^(answer|the answer is)\s+", "", first)
    norm = [normalise_label(label) for label in labels]
    for i, label in enumerate(norm):
        if label and first == label:
            return i, "equal"
    padded = f" {first} "
    contained = [(len(label), i) for i, label in enumerate(norm) if label and f" {label} " in padded]
    if contained:
        return max(contained)[1], "contains"
    words = set(first.split())
    overlap = [(len(words & set(label.split())) / max(1, len(label.split())), -i) for i, label in enumerate(norm)]
    best = max(overlap, default=(0.0, 0))
    return (-best[1], "words") if best[0] > 0 else (None, "none")


def can_score(llm: LLM) -> bool:
    return bool(getattr(llm, "scores_continuations", False))


def choose(llm: LLM, session: LLMSession, purpose: str, prompt_name: str, classes: Sequence[str], mode: str, values: dict[str, object]) -> Choice:
    """One LLM call over the prompt filled with `values`: `mode` "likelihood" scores the class labels
    where the model can, else it generates and the reply is mapped onto them."""
    if mode == "likelihood" and can_score(llm):
        text = load_prompt(prompt_name).render(llm.few_shot, **values)
        if len(session.calls) >= session.max_calls:
            raise CallBudgetExceeded(f"{purpose}: call {len(session.calls) + 1} is past this method's bound of {session.max_calls}")
        record = LLMCall(purpose, llm.provider, llm.model)
        session.calls.append(record)
        try:
            scored = llm.continuation_logprobs(text, [f" {label}" for label in classes])  # type: ignore[attr-defined]
        except LLMError as error:
            record.ok, record.error = False, str(error)
            raise
        record.prompt_tokens, record.seconds, record.cached = scored.prompt_tokens, scored.seconds, scored.cached
        best = max(range(len(classes)), key=lambda i: scored.scores[i])
        return Choice(best, "likelihood", "", list(scored.scores), text)
    reply = session.ask(purpose, prompt_name, stream=True, **values)
    index, how = map_onto_labels(reply.text, classes)
    return Choice(index, how, reply.text, None, reply.prompt)
