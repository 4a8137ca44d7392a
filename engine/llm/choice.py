"""How an LLM's reply becomes one of a fixed set of options (GLOW's classes, §3.1; GraSP's
decisions). Where the model can score text (a local transformers model), each option is scored by its
log-likelihood after the prompt and the best is taken; otherwise the model writes a reply and it is
mapped onto the options: the option it equals (after normalising), else the longest option it
contains, else the option whose words it shares most.

Scored options can be calibrated against a content-free prompt (the same template with the question's
own fields blanked): each option's score is then log P(option | prompt) − log P(option | content-free
prompt), the pointwise mutual information of option and content (Holtzman et al. 2021, "Surface Form
Competition"; Zhao et al. 2021, "Calibrate Before Use", in log space). A small model's likelihoods
carry a prior over the options themselves, the same whatever the question; the difference removes it.
Where a prior over the options is known (a KG's class frequencies, or a GNN's prediction for the
entity asked about), its log is added back: the model's own prior is replaced by the data's (Bayes'
rule under a change of prior; Saerens et al. 2002), and what the prompt's content adds updates it.
Without that, rare classes win where one class is common (FB15k-237's film languages). It
suits a fixed set of labels (GLOW's classes), not open entity names: on GraSP's answers (Gemma 3
270M, MetaQA) PMI favoured rare names (the films a question passes through) over short common
answers (years, genres, languages) and lost 2- and 3-hop questions."""

from __future__ import annotations

import math
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
    how: str  # likelihood | calibrated | equal | contains | words | none
    text: str  # the reply ("" when scored)
    scores: list[float] | None = None  # log-likelihood per class; calibrated: less the content-free one, plus log prior
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


NEUTRAL = "N/A"  # what a content-free prompt holds in place of the question's own fields (Zhao et al. 2021)


def choose(llm: LLM, session: LLMSession, purpose: str, prompt_name: str, classes: Sequence[str], mode: str, values: dict[str, object],
           content: Sequence[str] = (), calibrate: bool = False, prior: Sequence[float] | None = None,
           memo: dict[tuple, list[float]] | None = None) -> Choice:
    """One LLM call over the prompt filled with `values`: `mode` "likelihood" scores the class labels
    where the model can, else it generates and the reply is mapped onto them. With `calibrate`, scored
    classes are calibrated against the prompt with the `content` fields set to N/A, and where a `prior`
    (a weight per class; only ratios matter) is given its log is added back; the call's record counts both
    prompts. `memo` keeps content-free scores across calls (the content-free prompt of a fixed template
    and label set is the same for every question): one scored there is not scored or counted again."""
    if mode == "likelihood" and can_score(llm):
        template = load_prompt(prompt_name)
        text = template.render(llm.few_shot, **values)
        if len(session.calls) >= session.max_calls:
            raise CallBudgetExceeded(f"{purpose}: call {len(session.calls) + 1} is past this method's bound of {session.max_calls}")
        record = LLMCall(purpose, llm.provider, llm.model)
        session.calls.append(record)
        cached: list[bool] = []

        def score(prompt: str) -> list[float]:
            try:
                scored = llm.continuation_logprobs(prompt, [f" {label}" for label in classes])  # type: ignore[attr-defined]
            except LLMError as error:
                record.ok, record.error = False, str(error)
                raise
            record.prompt_tokens += scored.prompt_tokens
            record.seconds += scored.seconds
            cached.append(scored.cached)
            record.cached = all(cached)
            return list(scored.scores)

        scores = score(text)
        if calibrate:
            if not content:
                raise ValueError("calibrate needs the prompt's content fields")
            blank = template.render(llm.few_shot, **{**values, **{field: NEUTRAL for field in content}})
            key = (llm.provider, llm.model, blank, tuple(classes))
            base = memo.get(key) if memo is not None else None
            if base is None:
                base = score(blank)
                if memo is not None:
                    memo[key] = base
            scores = [value - b for value, b in zip(scores, base)]
            if prior is not None:
                if len(prior) != len(classes):
                    raise ValueError(f"prior: {len(prior)} probabilities for {len(classes)} classes")
                scores = [value + math.log(max(p, 1e-9)) for value, p in zip(scores, prior)]
        best = max(range(len(classes)), key=lambda i: scores[i])
        return Choice(best, "calibrated" if calibrate else "likelihood", "", scores, text)
    reply = session.ask(purpose, prompt_name, stream=True, **values)
    index, how = map_onto_labels(reply.text, classes)
    return Choice(index, how, reply.text, None, reply.prompt)
