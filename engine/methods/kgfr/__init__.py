"""`kgfr`: the KGFR scorer (a question-conditioned GNN over the APP subgraph); with an LLM, the
LLM–KGFR loop (KGFR §V, Algorithm 1). Heavy modules are imported by the factory, not here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kgqa.methods.registry import Method, MethodContext, Runner, option


@dataclass(frozen=True)
class KGFROptions:
    max_steps: int = option(3, "LLM-KGFR: answer/reflect rounds at most", min=1, max=10)
    # Off by default: the bundled checkpoint was trained on readable relation names, and Gemma 3
    # 270M's descriptions cut its Hits@1 from 0.853 to 0.563 on 300 MetaQA dev questions. The
    # verbalisation templates the LLM writes are used either way.
    describe_relations: bool = option(
        False, "LLM-KGFR: feed LLM-written relation descriptions (KGFR Fig. 2) to the KGFR encoder instead of the readable "
        "names the bundled checkpoint was trained on", flags=("--describe-relations/--relation-names",))
    decline_below: float = option(
        -1.0, "Without an LLM: decline when the calibrated probability that the KG holds an answer is below this "
        "(0: answer whenever a topic is linked; below 0: the checkpoint's threshold, chosen on validation, see kgqa calibrate)", min=-1.0, max=1.0)
    answer_kind: bool = option(
        True, "Rank candidates of a kind the question does not ask for last (a year for 'which country', a person for "
        "'when'; the KG's types where it has them)", flags=("--answer-kind/--any-kind",))


def build(context: MethodContext, options: KGFROptions) -> Runner:
    from kgqa.methods.kgfr.answer import KGFRAnswerer
    from kgqa.methods.kgfr.scorer import shared_scorer

    scorer = shared_scorer(context)
    if context.llm is None:
        answerer = KGFRAnswerer(context.store, scorer=scorer, decline_below=None if options.decline_below < 0 else options.decline_below,
                                answer_kind=options.answer_kind)
        return lambda question, topics=None: answerer.answer(question, topics).to_answer()
    from kgqa.llm.relation_language import load_or_generate
    from kgqa.methods.kgfr.llm_loop import LLMKGFR

    language = context.shared(("relation-language", id(context.llm)), lambda: load_or_generate(context.store, context.llm))
    descriptions = (language.descriptions or None) if options.describe_relations else None
    retriever = KGFRAnswerer(context.store, scorer=scorer, descriptions=descriptions, answer_kind=options.answer_kind)
    return LLMKGFR(retriever, context.llm, language, options.max_steps).answer


def call_bound(options: Any, topics: int, has_llm: bool) -> int:
    return 2 * options.max_steps if has_llm else 0


METHOD = Method(
    name="kgfr",
    summary="KGFR ranking over the APP subgraph (no LLM); with --llm the LLM–KGFR answer/reflect loop",
    options=KGFROptions, needs_llm="optional", call_bound=call_bound,
    call_bound_text="0 without an LLM; with one, 2 when the first answer is confirmed, ≤ 2·max_steps",
    build=build,
)
