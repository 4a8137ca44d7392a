"""The service's JSON shapes (pydantic, at the edge only). The request's `method` and `options`
are generated from the method registry: one optional field per option any method takes, with its
range, choices and help, so /docs and validation follow the registry."""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, create_model

from kgqa.methods import REGISTRY


def _options_model() -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for name, (spec, users) in REGISTRY.all_options().items():
        kind: Any = Literal[spec.choices] if spec.choices else spec.type  # type: ignore[valid-type]
        limits = {k: v for k, v in (("ge", spec.min), ("le", spec.max)) if v is not None}
        fields[name] = (Optional[kind], Field(None, description=f"{spec.help} [{', '.join(users)}; default {spec.default!r}]", **limits))
    return create_model("AskOptions", __config__=ConfigDict(extra="forbid"), **fields)


AskOptions = _options_model()
MethodName = Literal[REGISTRY.names]  # type: ignore[valid-type]


class AskRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: str = Field(min_length=1, description="The question, in plain language")
    topics: list[str] | None = Field(default=None, description="Topic entity labels; skips entity linking")
    method: Optional[MethodName] = Field(default=None, description="The method (default: the service's); see GET /v1/methods")  # type: ignore[valid-type]
    options: AskOptions = Field(default_factory=AskOptions, description="Options of the chosen method; see GET /v1/methods")  # type: ignore[valid-type]

    def given_options(self) -> dict[str, Any]:
        return {name: getattr(self.options, name) for name in self.options.model_fields_set}


class ErrorBody(BaseModel):
    status: int
    reason: str


class ErrorSchema(BaseModel):
    error: ErrorBody


class AnswerItemSchema(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str
    iri: str | None
    label: str | None
    match: str = Field(description="subgraph | exact | normalised | linked | none | ranked")
    score: float | None


class TopicSchema(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str = Field(description="the question span (or given label) that named the entity")
    iri: str
    label: str
    match: str = Field(description="exact | normalised | fuzzy | embedding (the last two: linker fallbacks for misspellings)")
    score: float = Field(description="similarity of span and label: 1.0 for exact and normalised matches")


class EvidenceSchema(BaseModel):
    model_config = ConfigDict(extra="forbid")
    candidates: list[dict[str, Any]]
    facts: list[str]
    paths: list[str]
    path_edges: list[list[dict[str, str]]]
    outline: str | None
    reading: list[dict[str, Any]] = Field(default_factory=list, description="KGFR's path reader: each relation path from a topic it read, with its score, best first")
    queries: list[dict[str, Any]] = Field(default_factory=list, description="text2query: each query the LLM wrote (language, text, verdict: ran / refused / failed / no rows, the rule or error, rows read)")


class LLMCallSchema(BaseModel):
    model_config = ConfigDict(extra="forbid")
    purpose: str
    provider: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    retries: int
    temperature: float
    cached: bool
    ok: bool
    error: str | None
    tokens_estimated: bool


class TraceSchema(BaseModel):
    model_config = ConfigDict(extra="forbid")
    round_trips: int
    subgraph: dict[str, Any]
    seconds: dict[str, float]
    llm_calls: list[LLMCallSchema]
    fallback: str | None
    linking_candidates: dict[str, list[str]]
    confidence_signals: dict[str, float] = Field(description="what the answer's confidence was computed from (KGFR without an LLM)")
    answerability: float | None = Field(description="calibrated probability that the KG holds an answer; below the checkpoint's threshold the answer is declined")
    llm: dict[str, float]


class AnswerSchema(BaseModel):
    """The Answer JSON (engine/answer.py); `extra="forbid"` keeps this schema and the code in step."""

    model_config = ConfigDict(extra="forbid")

    question: str
    method: str
    answers: list[AnswerItemSchema]
    text: str
    topics: list[TopicSchema]
    evidence: EvidenceSchema
    trace: TraceSchema
    confidence: float | None = Field(description="calibrated probability that the top answer is right (null: the method gives none)")
    declined: str | None = Field(description="why no answer is given: the KG holds none the method trusts; "
                                             "evidence.candidates keeps the closest (null: answered)")
