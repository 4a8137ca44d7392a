"""`glow`: open-world answers on incomplete KGs (GLOW). An RGCN trained per question pattern predicts
the missing label's top classes; the LLM picks the class from the label set, given the entity's
facts (G), the GNN's answers (N) or both (GN). Without an LLM the answer is the GNN's top class.
Heavy modules are imported by the factory, not here."""

from __future__ import annotations

from dataclasses import dataclass

from kgqa.methods.registry import Method, MethodContext, Runner, option


@dataclass(frozen=True)
class GLOWOptions:
    variant: str = option("gn", "GLOW with an LLM: the prompt (gn: facts and GNN answers; g: facts; n: GNN answers; l: the label set "
                          "alone; llm-only: the question alone). Without an LLM the answer is the GNN's top class",
                          choices=("gn", "g", "n", "l", "llm-only"))
    gnn_top: int = option(3, "GLOW: GNN answers shown in the n and gn prompts (top-k)", min=1, max=10)
    choose: str = option("likelihood", "GLOW: how the LLM's class is read: likelihood (each label scored after the prompt, "
                         "where the model can score text; else generate) or generate (its reply mapped onto the labels)",
                         choices=("likelihood", "generate"))
    calibrate: bool = option(True, "GLOW with an LLM that scores text: rank each label by log P(label | prompt) − log P(label | the prompt with "
                             "question, entity, facts and GNN answers set to N/A) + log prior, the prior being the GNN's probability for the entity in the "
                             "gn and n variants (the prompt shows its answers) and the label's share in the KG otherwise: the model's own "
                             "preference among the labels is replaced by the graph's (off: log P(label | prompt) alone)")
    facts_per_relation: int = option(3, "GLOW: the entity's facts per relation in the g and gn prompts", min=0, max=50)
    use_stored: bool = option(True, "GLOW: answer from the KG where it holds the asked fact (off: always predict)",
                              flags=("--use-stored/--always-predict",))
    link: str = option("phrasings", "GLOW: how the asked pattern (target relation) is found: phrasings (the question against each pattern's "
                       "phrasings, by the text encoder) or llm (GLOW App. A.1: the LLM extracts the entity and label, then picks the "
                       "schema line; 2 more calls; falls back to phrasings when a reply cannot be read)", choices=("phrasings", "llm"))


def _call_bound(options: GLOWOptions, topics: int, has_llm: bool) -> int:
    return 0 if not has_llm else 1 + (2 if options.link == "llm" else 0)  # 2: kgqa.methods.glow.llm_link.CALLS


def build(context: MethodContext, options: GLOWOptions) -> Runner:
    from kgqa.methods.glow.answer import GLOWAnswerer, GLOWSettings, checkpoint_for

    checkpoint = checkpoint_for(context.checkpoint, context.store.kg)
    shared = context.shared(("glow", str(checkpoint)), lambda: GLOWAnswerer(context.store, checkpoint))
    settings = GLOWSettings(options.variant, options.gnn_top, options.choose, options.facts_per_relation, options.use_stored, options.link,
                            options.calibrate)
    return shared.with_options(settings, context.llm).answer


METHOD = Method(
    name="glow",
    summary="GLOW: open-world answers where the KG lacks the fact: an RGCN predicts the label's top classes, "
            "the LLM picks one given the entity's facts (no LLM: the GNN's top class)",
    options=GLOWOptions, needs_llm="optional", call_bound=_call_bound,
    call_bound_text="0 without an LLM; 1 with one (3 with --link llm)", build=build,
)
