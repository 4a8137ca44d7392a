"""`grasp`: GraSP (graph-based soft prompting). A question-conditioned GNN encodes the question's
subgraph into one soft token per entity; a small LLM in-process (Gemma 3 270M) reads them and names
the relevant entities; the answer LLM answers from those entities and their facts, or names one to
retrieve around next (≤ `rounds` rounds). Without an answer LLM: the selected entities farthest from
the topics. Heavy modules are imported by the factory, not here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kgqa.methods.registry import Method, MethodContext, Runner, option


@dataclass(frozen=True)
class GraspOptions:
    hops: int = option(0, "GraSP: hops of the subgraph around each round's topics (0: the checkpoint's)", min=0, max=3)
    per_hop: int = option(12, "GraSP: entities kept per hop, the most similar to the question (eq. 1)", min=1, max=100)
    rounds: int = option(3, "GraSP with an LLM: most select-then-answer rounds (an ENTITY decision starts the next)", min=1, max=5)
    selector_input: str = option("soft", "GraSP: what the selector reads besides the question and candidate names: soft (the GNN's "
                                 "soft tokens), none (the no-soft-prompt ablation) or triples (the subgraph's facts as text)",
                                 choices=("soft", "none", "triples"))
    choose: str = option("likelihood", "GraSP with an LLM: how the answer LLM's reply is read: likelihood (\"ANSWER: name\" for each "
                         "selected entity and \"ENTITY: name\" for each unexplored one, scored after the prompt, where the model can score text; else "
                         "generate) or generate (it writes its reply)", choices=("likelihood", "generate"))


def build(context: MethodContext, options: GraspOptions) -> Runner:
    from kgqa.methods.grasp.answer import GraspAnswerer, GraspSettings, checkpoint_for

    checkpoint = checkpoint_for(context.checkpoint)
    shared = context.shared(("grasp", str(checkpoint)), lambda: GraspAnswerer(context.store, checkpoint))
    settings = GraspSettings(options.hops or shared.settings.hops, options.per_hop, options.rounds, options.selector_input, options.choose)
    return shared.with_options(settings, context.llm).answer


def call_bound(options: Any, topics: int, has_llm: bool) -> int:
    """One selector call per round, and one answer call per round with an LLM (one round without)."""
    return 2 * options.rounds if has_llm else 1


METHOD = Method(
    name="grasp",
    summary="GraSP: a GNN turns the subgraph into soft tokens that a small in-process LLM reads to select entities; "
            "the answer LLM answers from them or asks to look around one (no LLM: the selected entities farthest out)",
    options=GraspOptions, needs_llm="optional", call_bound=call_bound,
    call_bound_text="1 selector call without an LLM; with one, 2 per round (select + answer), rounds ≤ --rounds", build=build,
)
