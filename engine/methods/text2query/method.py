"""`text2query`: what users of neo4j-graphrag, LangChain and LlamaIndex run today — an LLM writes one
query in the store's language over its schema — with the query's powers checked before it runs
(sparql_guard.py, cypher_guard.py). A refused, failing or empty query goes back to the LLM with the
reason, at most `query_retries` times; then the answer is KGFR's (no LLM), and the trace says why.

Rows are mapped to KG entities: an IRI of this KG (SPARQL), a node of this KG or its iri (Cypher),
else a value resolved as a label; every query, its verdict and its rows are kept in the evidence."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from kgqa.core.answer import Answer, AnswerItem
from kgqa.core.errors import KGQAError
from kgqa.core.store import GraphStore
from kgqa.llm.protocol import LLMError
from kgqa.llm.session import LLMSession
from kgqa.methods.text2query.cypher_guard import check_cypher
from kgqa.methods.text2query.refusal import QueryRefused
from kgqa.methods.text2query.schema import Schema
from kgqa.methods.text2query.sparql_guard import check_sparql, mentioned_iris
from kgqa.methods.linking_step import linked_into
from kgqa.retrieval.linking import Linking
from kgqa.sparql import escape

_FENCE = re.compile(r"```[A-Za-z]*\s*\n?(.*?)(?:```|$)", re.DOTALL)
SAMPLE_ROWS = 5  # rows of each query kept in the evidence


def written_query(reply: str) -> str:
    """The query in an LLM's reply: inside its first code fence if it wrote one, else the reply."""
    fenced = _FENCE.search(reply)
    return (fenced.group(1) if fenced else reply).strip()


NO_EXAMPLE = {"example_question": "(this KG has no facts)", "example_topics": "none", "example_query": "none"}


class Text2Query:
    def __init__(self, store: GraphStore, llm: Any, schema: Callable[[], Schema], fallback: Callable[[str, list[str] | None], Answer],
                 retries: int, limit: int, encoder: Any = None):
        self.store, self.llm, self.schema, self.fallback = store, llm, schema, fallback
        self.retries, self.limit, self.encoder = retries, limit, encoder

    def answer(self, question: str, topics: list[str] | None = None) -> Answer:
        started = time.perf_counter()
        result = Answer(question, "text2query")
        linking = linked_into(result, self.store, topics, self.encoder)
        result.trace.seconds["link"] = time.perf_counter() - started
        schema = self.schema()
        session = LLMSession(self.llm, max_calls=self.retries + 1)
        feedback, reason = "", "no query was tried"
        for attempt in range(self.retries + 1):
            try:
                reply = session.ask(f"text2query.{schema.language}.{attempt + 1}", f"text2query_{schema.language}",
                                    schema=schema.text, question=question, topics=self._topics(schema, linking) or "none found",
                                    feedback=feedback, **(schema.example or NO_EXAMPLE))
            except LLMError as error:
                reason = f"the LLM failed: {error}"
                break
            query = written_query(reply.text)
            record: dict[str, Any] = {"language": schema.language, "query": query}
            result.evidence.queries.append(record)
            try:
                rows = self._run(schema, query, linking, record)
            except QueryRefused as refusal:
                record.update(verdict="refused", rule=refusal.rule, detail=refusal.detail)
                reason = f"query {attempt + 1} refused ({refusal.rule}): {refusal.detail}"
            except KGQAError as error:
                record.update(verdict="failed", detail=str(error)[:500])
                reason = f"query {attempt + 1} failed: {str(error)[:300]}"
            else:
                answers = self._answers(rows)
                record.update(verdict="ran" if answers else "no rows", rows=len(rows) if isinstance(rows, list) else 1,
                              sample=rows[:SAMPLE_ROWS] if isinstance(rows, list) else rows)
                if answers:
                    result.answers = answers
                    result.text = "\n".join(a.label or a.text for a in answers)
                    break
                reason = f"query {attempt + 1} ran and found nothing"
            feedback = f"Your query\n{query}\nwas not used: {reason}. Write a corrected query.\n"
        result.trace.llm_calls = session.calls
        if not result.answers:
            result = self._fall_back(result, question, topics, reason)
        result.trace.seconds["total"] = time.perf_counter() - started
        return result

    def _topics(self, schema: Schema, linking: Linking) -> str:
        if schema.language == "cypher":
            return "; ".join(f'$topic{i} is "{t.entity.label}"' for i, t in enumerate(linking.topics))
        return "; ".join(f'{escape.iri(t.entity.iri)} is "{t.entity.label}"' for t in linking.topics)

    def _run(self, schema: Schema, query: str, linking: Linking, record: dict[str, Any]) -> list[dict[str, Any]] | bool:
        if schema.language == "cypher":
            params = {**schema.params, **{f"topic{i}": t.entity.iri for i, t in enumerate(linking.topics)}}
            check_cypher(self.store, query, params)
            _check_anchored(linking, [f"topic{i}" for i in range(len(linking.topics)) if re.search(rf"\$topic{i}(?!\d)", query)])
            return self.store.read_rows(query, params, self.limit)  # type: ignore[attr-defined]
        checked = check_sparql(query, schema.graphs, self.limit)
        record["query"] = checked  # the text that ran (a LIMIT may have been added)
        named = mentioned_iris(checked)
        _check_anchored(linking, [t.entity.iri for t in linking.topics if t.entity.iri in named])
        return self.store.select_asked(checked)  # type: ignore[attr-defined]

    def _answers(self, rows: list[dict[str, Any]] | bool) -> list[AnswerItem]:
        """An ASK's yes or no, or each row's `answer` column (else its first bound one), mapped."""
        if isinstance(rows, bool):
            return [AnswerItem("yes" if rows else "no", match="verdict")]
        return self._mapped([row.get("answer", next(iter(row.values()))) for row in rows if row])

    def _mapped(self, values: list[Any]) -> list[AnswerItem]:
        iris, texts = [], []
        for value in values:
            if hasattr(value, "get") and hasattr(value, "labels"):  # a Neo4j node
                if value.get("kg") == self.store.kg and value.get("iri"):
                    iris.append(str(value["iri"]))
                continue
            text = str(value)
            (iris if _looks_like_iri(text) else texts).append(text)
        iris = list(dict.fromkeys(iris))
        labels = self.store.labels(iris) if iris else {}
        out = [AnswerItem(labels[i], i, labels[i], "exact") for i in iris if i in labels]  # IRIs of this KG's entities only
        found = self.store.resolve(sorted(set(texts))) if texts else {}
        for text in dict.fromkeys(texts):
            hits = found.get(text) or []
            out.append(AnswerItem(text, hits[0].entity.iri, hits[0].entity.label, hits[0].match) if hits else AnswerItem(text))
        return out

    def _fall_back(self, result: Answer, question: str, topics: list[str] | None, reason: str) -> Answer:
        fallback = self.fallback(question, topics)
        fallback.method = "text2query"
        fallback.evidence.queries = result.evidence.queries
        fallback.trace.llm_calls = result.trace.llm_calls + fallback.trace.llm_calls
        fallback.trace.seconds = {**result.trace.seconds, **{f"fallback.{k}": v for k, v in fallback.trace.seconds.items()}}
        fallback.trace.fallback = f"kgfr's answer (no LLM): {reason}"
        return fallback


def _check_anchored(linking: Linking, used: list[str]) -> None:
    """A query that names none of the question's linked topics answers some other question (a small
    model copies the worked example's entity): refused, so that it is written again or kgfr answers."""
    if linking.topics and not used:
        names = ", ".join(f'"{t.entity.label}"' for t in linking.topics)
        raise QueryRefused("unanchored", f"the query names none of the question's topic entities ({names}): its rows would not be about them")


def _looks_like_iri(text: str) -> bool:
    return text.startswith("urn:") or "://" in text
