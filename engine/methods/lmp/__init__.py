"""`lmp`: Language Message Passing (LMP §3, App. A) — the LLM samples relations, aggregates,
transforms and pools over the KG layer by layer; DFS readout; QA prompt."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kgqa.methods.registry import Method, MethodContext, Runner, option

MAX_RETRIES = 5  # A.7: a reply with the wrong number of items is retried this often


@dataclass(frozen=True)
class LMPOptions:
    width: int = option(3, "LMP width K: relations kept per layer", min=1, max=20, flags=("-K",))
    depth: int = option(2, "LMP depth L: layers of message passing", min=1, max=5, flags=("-L",))
    sampler: str = option("llm", "LMP relation sampling: llm | embedding (no call)", choices=("llm", "embedding"))
    lam: int = option(100, "λ: per-(subject, relation) fan-out cap of the APP subgraph", min=0)


def build(context: MethodContext, options: LMPOptions) -> Runner:
    from kgqa.methods.lmp.method import LMP

    assert context.llm is not None  # the registry refuses to build an LLM method without one
    return LMP(context.store, context.llm, options.width, options.depth, options.lam, options.sampler).answer


def call_bound(options: Any, topics: int, has_llm: bool) -> int:
    """Per topic and layer, sampling and transformation with their retries; then one answer."""
    per_layer = (1 + MAX_RETRIES) * (2 if options.sampler == "llm" else 1)
    return max(topics, 1) * options.depth * per_layer + 1


METHOD = Method(
    name="lmp", summary="Language Message Passing: the LLM aggregates and transforms KG messages layer by layer (LMP §3)",
    options=LMPOptions, needs_llm="yes", call_bound=call_bound,
    call_bound_text="2L+1 per topic entity without retries; ≤ 12·L·topics + 1", build=build,
)
