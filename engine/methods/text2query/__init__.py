"""`text2query`: an LLM writes one Cypher (bolt://) or SPARQL (every other store) query over the KG's
schema; kgqa checks what it may do before the store runs it, retries with the reason, and falls back
to KGFR's answer (issue 47). Heavy modules are imported by the factory, not here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kgqa.methods.registry import Method, MethodContext, Runner, option


@dataclass(frozen=True)
class Text2QueryOptions:
    query_retries: int = option(2, "text2query: queries written again after a refused, failing or empty one (with the reason)", min=0, max=5)
    query_limit: int = option(100, "text2query: rows a query may read (a SPARQL query without a LIMIT gets this one)", min=1, max=10_000)


def build(context: MethodContext, options: Text2QueryOptions) -> Runner:
    from kgqa.methods.kgfr.answer import KGFRAnswerer
    from kgqa.methods.kgfr.scorer import shared_scorer
    from kgqa.methods.text2query.method import Text2Query
    from kgqa.methods.text2query.schema import read_schema

    assert context.llm is not None
    scorer = shared_scorer(context)
    kgfr = context.shared(("text2query-fallback",), lambda: KGFRAnswerer(context.store, scorer=scorer))
    method = Text2Query(context.store, context.llm, lambda: context.shared(("text2query-schema",), lambda: read_schema(context.store)),
                        lambda question, topics: kgfr.answer(question, topics).to_answer(), options.query_retries, options.query_limit,
                        scorer.encoder)
    return method.answer


def call_bound(options: Any, topics: int, has_llm: bool) -> int:
    return options.query_retries + 1


METHOD = Method(
    name="text2query",
    summary="an LLM writes one Cypher/SPARQL query over the KG's schema; kgqa refuses any write, SERVICE, LOAD CSV or "
            "foreign graph before it runs, retries with the reason, and falls back to kgfr's answer",
    options=Text2QueryOptions, needs_llm="yes", call_bound=call_bound, call_bound_text="query_retries + 1 (default 3)",
    build=build,
)
