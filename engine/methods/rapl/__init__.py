"""`rapl`: the RAPL retriever (a GCN over the directed line graph that walks reasoning paths and learns
when to stop); without an LLM the answer is the tails of its most probable paths, with one the paths
go into the reasoner prompt. Heavy modules are imported by the factory, not here."""

from __future__ import annotations

from dataclasses import dataclass

from kgqa.methods.registry import Method, MethodContext, Runner, one_call_with_an_llm, option


@dataclass(frozen=True)
class RAPLOptions:
    starts: int = option(20, "RAPL: question triples sampled, with replacement (K)", min=1, max=1000)
    rollouts: int = option(5, "RAPL: paths walked from each sampled question triple", min=1, max=50)
    paths: int = option(20, "RAPL: most probable distinct paths kept as evidence (M)", min=1, max=500)
    answer_share: float = option(-1.0, "RAPL without an LLM: answers are the path tails scoring at least this share of the best "
                                 "(below 0: the checkpoint's, chosen for validation F1)", min=-1.0, max=1.0)


def build(context: MethodContext, options: RAPLOptions) -> Runner:
    from kgqa.methods.rapl.answer import Decoding, RAPLAnswerer, checkpoint_for

    checkpoint = checkpoint_for(context.checkpoint)
    shared = context.shared(("rapl", str(checkpoint)), lambda: RAPLAnswerer(context.store, checkpoint))
    return shared.with_options(Decoding(options.starts, options.rollouts, options.paths, options.answer_share), context.llm).answer


METHOD = Method(
    name="rapl",
    summary="RAPL: a line-graph GNN walks reasoning paths from the topic entities and learns when to stop (no LLM: the paths' tails); "
            "with --llm the paths go to the reasoner prompt",
    options=RAPLOptions, needs_llm="optional", call_bound=one_call_with_an_llm,
    call_bound_text="0 without an LLM; 1 with one", build=build,
)
