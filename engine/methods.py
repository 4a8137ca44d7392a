"""The answering methods behind one call shape: `runner(question, topics) -> Answer`.

    kgfr          KGFR scorer; with an LLM, the LLM–KGFR loop (KGFR §V)     calls: 0, or ≤ 2·max_steps
    lmp           Language Message Passing (LMP §3)                        calls: 2L+1 per topic, ≤ 12·L·topics+1 with retries
    llm-only      IO prompting, no KG (LMP App. B)                          calls: 1
    llm-only-cot  chain-of-thought prompting, no KG                         calls: 1
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kgqa.answer import Answer
from kgqa.llm import LLM
from kgqa.store import GraphStore

METHODS = ("kgfr", "lmp", "llm-only", "llm-only-cot")
Runner = Callable[[str, "list[str] | None"], Answer]


@dataclass(frozen=True)
class MethodOptions:
    width: int = 3  # LMP K
    depth: int = 2  # LMP L
    sampler: str = "llm"  # LMP relation sampling: llm | embedding
    max_steps: int = 3  # LLM-KGFR
    lam: int = 100
    # LLM-KGFR: feed the LLM's relation descriptions (KGFR Fig. 2) to the KGFR encoder. Off by default:
    # the bundled checkpoint was trained on readable relation names, and Gemma 3 270M's descriptions
    # cut its Hits@1 from 0.853 to 0.563 on 300 MetaQA dev questions. The verbalisation templates the
    # LLM writes are used either way.
    describe_relations: bool = False


def build_runner(method: str, store: GraphStore, llm: LLM | None = None, checkpoint: str | Path | None = None,
                 options: MethodOptions | None = None) -> Runner:
    options = options or MethodOptions()
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}: choose one of {', '.join(METHODS)}")
    if method != "kgfr" and llm is None:
        raise ValueError(f"method {method!r} needs an LLM (--llm)")
    if method == "kgfr":
        from kgqa.kgfr_answer import KGFRAnswerer

        if llm is None:
            answerer = KGFRAnswerer(store, checkpoint)
            return lambda question, topics=None: answerer.answer(question, topics).to_answer()
        from kgqa.llm_kgfr import LLMKGFR
        from kgqa.relation_language import load_or_generate

        language = load_or_generate(store, llm)
        retriever = KGFRAnswerer(store, checkpoint, descriptions=(language.descriptions or None) if options.describe_relations else None)
        return LLMKGFR(retriever, llm, language, options.max_steps).answer
    if method == "lmp":
        from kgqa.lmp import LMP

        return LMP(store, llm, options.width, options.depth, options.lam, options.sampler).answer  # type: ignore[arg-type]
    from kgqa.llm_only import answer_llm_only

    style = "cot" if method == "llm-only-cot" else "io"
    return lambda question, topics=None: answer_llm_only(store, llm, question, style)  # type: ignore[arg-type]
