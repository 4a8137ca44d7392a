"""The LLM methods end to end with a real model — Gemma 3 270M base, the only model offline here —
through both providers: llama.cpp's OpenAI-compatible server over HTTP, and transformers in-process;
on the embedded store and on a real Virtuoso, with MetaQA dev questions and the full MetaQA KB.

A 270M base model answers badly; these tests assert structure and bounds, never accuracy: replies
parse, every call is accounted for, no method passes its call bound (with LLMSession's cap lifted, so
that the bound is the method's own), fallbacks say why, and the same
question gets the same prompts from both stores."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import shared_data

from kgqa import open_store, open_writer
from kgqa.llm.cache import CachedLLM
from kgqa.llm.openai_compat import OpenAICompatibleLLM
from kgqa.methods.lmp.method import LMP
from kgqa.loaders import load_file
from kgqa.methods import REGISTRY, build_runner
from kgqa.loaders.qa import read_qa
from kgqa.faces.service import AnswerSchema

pytestmark = [pytest.mark.slow, pytest.mark.shared_data]
WIDTH, DEPTH, STEPS = 3, 2, 3


def dev_questions(per_hop: int) -> list:
    return [ex for hop in (1, 2, 3) for ex in read_qa(shared_data("metaqa", f"{hop}-hop", "qa_dev.txt"))[:per_hop]]


@pytest.fixture(scope="module")
def embedded_metaqa(tmp_path_factory):
    kb = shared_data("metaqa", "kb_reconstructed.txt")
    location = tmp_path_factory.mktemp("metaqa-llm") / "store"
    writer = open_writer(f"oxigraph://{location}", "metaqa")
    load_file(writer, kb)
    writer.close()
    return f"oxigraph://{location}"


@pytest.fixture(scope="module")
def virtuoso_metaqa(virtuoso_server):
    kb = shared_data("metaqa", "kb_reconstructed.txt")
    writer = open_writer(virtuoso_server.writer_url, "metaqa")
    load_file(writer, kb)  # idempotent: a no-op when another module loaded it already
    writer.close()
    return "sparql+" + virtuoso_server.sparql_url


def check_answer(answer, method: str, bound: int) -> None:
    trace = answer.trace
    assert answer.method == method
    assert 1 <= len(trace.llm_calls) <= bound, [c.purpose for c in trace.llm_calls]
    for call in trace.llm_calls:
        assert call.ok and call.model == "gemma3-270m" and call.provider in ("openai-compatible", "transformers")
        assert call.prompt_tokens > 0 and call.completion_tokens >= 0 and call.seconds >= 0
    assert trace.seconds["total"] > 0
    for item in answer.answers:
        assert item.text and (item.iri is None) == (item.match == "none")
    AnswerSchema.model_validate(json.loads(json.dumps(answer.to_json())))  # serialisable, as documented


def check_lmp_calls(answer) -> None:
    """2L + 1 calls when no retry fires; each retry adds exactly one call; a fallback ends in one IO call."""
    purposes = [c.purpose for c in answer.trace.llm_calls]
    retries = [p for p in purposes if ".retry" in p]
    if answer.trace.fallback:
        assert purposes[-1] == "lmp.fallback"
    else:
        layers = {p.split(".")[2] for p in purposes if p.startswith(("lmp.sample", "lmp.transform"))}
        assert purposes[-1] == "lmp.answer"
        assert len(purposes) == 2 * len(layers) + 1 + len(retries) and len(layers) <= DEPTH
        assert answer.evidence.outline and answer.evidence.outline.startswith("1. ")


def test_http_provider_runs_every_method_on_embedded_and_virtuoso_with_the_same_prompts(
        llama_server, embedded_metaqa, virtuoso_metaqa, tmp_path, uncapped_sessions):
    questions = dev_questions(per_hop=1)
    options = {"kgfr": {"max_steps": STEPS, "describe_relations": True}, "lmp": {"width": WIDTH, "depth": DEPTH}, "llm-only": {}, "rapl": {}}
    results = {}
    for store_name, url in (("embedded", embedded_metaqa), ("virtuoso", virtuoso_metaqa)):
        store = open_store(url, "metaqa")
        llm = CachedLLM(OpenAICompatibleLLM(model="gemma3-270m", base_url=llama_server.url, mode="completion"), tmp_path / "cache")
        for method in ("kgfr", "lmp", "llm-only", "rapl"):
            runner = build_runner(method, store, llm, options=options[method])
            spec = REGISTRY.get(method)
            for ex in questions:
                answer = runner(ex.question, None)
                bound = spec.call_bound(spec.make_options(options[method]), len(answer.topics), True)
                assert bound == {"kgfr": 2 * STEPS, "lmp": LMP(store, llm, WIDTH, DEPTH).call_bound(len(answer.topics)), "llm-only": 1, "rapl": 1}[method]
                check_answer(answer, method, bound)
                if method == "lmp":
                    check_lmp_calls(answer)
                if method != "llm-only":
                    assert answer.topics and answer.trace.round_trips >= 1
                if method == "rapl":
                    assert answer.evidence.paths and all(" -> " in p for p in answer.evidence.paths)
                results[store_name, method, ex.qid] = answer
    # the second store sent exactly the prompts the first one did: every one of its calls hit the cache
    virtuoso_calls = [c for (s, _, _), a in results.items() if s == "virtuoso" for c in a.trace.llm_calls]
    assert virtuoso_calls and all(c.cached for c in virtuoso_calls)
    for (store_name, method, qid), answer in results.items():
        if store_name == "virtuoso":
            twin = results["embedded", method, qid]
            assert [a.text for a in answer.answers] == [a.text for a in twin.answers]
            assert answer.evidence.outline == twin.evidence.outline and answer.evidence.facts == twin.evidence.facts


class RecordingLLM:
    """The real LLM, with each reply kept in order (the trace keeps calls, not what they said)."""

    def __init__(self, inner):  # type: ignore[no-untyped-def]
        self.inner = inner
        self.replies: list[str] = []

    def complete(self, prompt: str, **kwargs):  # type: ignore[no-untyped-def]
        completion = self.inner.complete(prompt, **kwargs)
        self.replies.append(completion.text)
        return completion

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        if name == "stream_complete":  # every reply goes through complete(), to be recorded
            raise AttributeError(name)
        return getattr(self.inner, name)


def test_kgfr_llm_goes_on_only_when_its_reflection_asks_for_more(llama_server, embedded_metaqa, uncapped_sessions):
    from kgqa.methods.kgfr.llm_loop import parse_reflection

    store = open_store(embedded_metaqa, "metaqa")
    llm = RecordingLLM(OpenAICompatibleLLM(model="gemma3-270m", base_url=llama_server.url, mode="completion"))
    runner = build_runner("kgfr", store, llm, options={"max_steps": STEPS, "describe_relations": False})
    for ex in dev_questions(per_hop=2):  # 5 per hop took ten minutes
        llm.replies.clear()
        answer = runner(ex.question, None)
        purposes = [c.purpose for c in answer.trace.llm_calls]
        assert not answer.trace.fallback and len(llm.replies) == len(purposes), (answer.trace.fallback, purposes)
        steps = len(purposes) // 2
        assert 1 <= steps <= STEPS and purposes == [f"kgfr.{kind}.s{s}" for s in range(1, steps + 1) for kind in ("answer", "reflect")]
        reflections = [parse_reflection(text) for text in llm.replies[1::2]]
        # every step after the first was asked for by the reflection before it ...
        assert all(r.readable and not r.sufficient for r in reflections[:-1]), llm.replies
        # ... and the loop stopped by its rule: the last reflection was content or unreadable, the steps
        # ran out, or it asked for more and the follow-up (which ran) found nothing new
        last = reflections[-1]
        assert not last.readable or last.sufficient or steps == STEPS or "follow_up" in answer.trace.seconds, (llm.replies, answer.trace.seconds)


@pytest.fixture(scope="module")
def gemma_in_process(gemma_weights):
    from kgqa.llm.local import TransformersLLM

    return TransformersLLM(loaded=gemma_weights)


@pytest.mark.parametrize("store_fixture", ["embedded_metaqa", "virtuoso_metaqa"])
def test_in_process_transformers_provider_runs_kgfr_and_lmp(gemma_in_process, store_fixture, request, uncapped_sessions):
    store = open_store(request.getfixturevalue(store_fixture), "metaqa")
    llm = gemma_in_process
    ex = dev_questions(per_hop=1)[1]  # a 2-hop question
    kgfr = build_runner("kgfr", store, llm, options={"max_steps": 1})
    check_answer(kgfr(ex.question, None), "kgfr", 2)
    lmp = LMP(store, llm, k=2, depth=1)
    answer = lmp.answer(ex.question)
    check_answer(answer, "lmp", lmp.call_bound(len(answer.topics)))
    check_lmp_calls(answer)
    assert all(c.provider == "transformers" for c in answer.trace.llm_calls)


def test_gemma_rationalises_the_candidate_paths_of_a_real_question(gemma_in_process, embedded_metaqa):
    from kgqa.methods.kgfr.data import prepare
    from kgqa.methods.rapl.labels import make_labels
    from kgqa.methods.rapl.line_graph import line_graph
    from kgqa.methods.rapl.rationalise import EncoderRationaliser, LLMRationaliser
    from kgqa.retrieval.text import TextEncoder

    store = open_store(embedded_metaqa, "metaqa")
    ex = dev_questions(per_hop=1)[1]  # a 2-hop question
    [item] = prepare(store, [ex], 2, 100)
    lg = line_graph(item.subgraph)
    chooser = LLMRationaliser(gemma_in_process, EncoderRationaliser(TextEncoder()))
    labels = make_labels(item.subgraph, lg, ex.question, list(ex.topics), item.answers, chooser)
    calls = chooser.last_calls
    # one call for the rational paths, one for relation targeting (the question has start relations)
    assert [c.purpose for c in calls] == ["rapl.rational_paths", "rapl.relation_targeting"]
    assert all(c.ok and c.provider == "transformers" for c in calls)
    assert labels.log["source"] == "llm" or labels.log["source"].startswith("llm→encoder")  # read, or said why not
    assert labels.paths and len(labels.log["scores"]) == len(labels.log["chains"])


def test_cli_ask_and_eval_with_an_llm(llama_server, embedded_metaqa, tmp_path):
    llm = f"{llama_server.url}?model=gemma3-270m&mode=completion"

    def kgqa(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "kgqa", *args], capture_output=True, text=True, timeout=600)

    asked = kgqa("ask", "what movies did Temuera Morrison act in", "--store", embedded_metaqa, "--method", "lmp",
                 "--llm", llm, "-K", "2", "-L", "1", "--json")
    assert asked.returncode == 0, asked.stderr[-2000:]
    answer = json.loads(asked.stdout)
    assert answer["method"] == "lmp" and answer["trace"]["llm"]["calls"] == len(answer["trace"]["llm_calls"]) >= 1
    assert {"purpose", "prompt_tokens", "completion_tokens", "seconds", "retries", "provider", "model"} <= set(answer["trace"]["llm_calls"][0])
    qa = shared_data("metaqa", "1-hop", "qa_dev.txt")
    out = tmp_path / "report"
    evaluated = kgqa("eval", str(qa), "--store", embedded_metaqa, "--method", "llm-only", "--llm", llm, "--limit", "4", "--out", str(out))
    assert evaluated.returncode == 0, evaluated.stderr[-2000:]
    report = json.loads((out / "eval.json").read_text())
    group = report["groups"]["all"]
    assert report["method"] == "llm-only" and group["questions"] == 4
    assert group["llm_calls_mean"] == 1.0 and group["llm_calls_max"] == 1 and group["prompt_tokens_mean"] > 0
    assert "LLM calls" in (out / "eval.md").read_text()
    unknown = kgqa("ask", "who", "--store", embedded_metaqa, "--method", "lmp")
    assert unknown.returncode == 2 and "needs an LLM" in unknown.stderr and "Traceback" not in unknown.stderr
    bad_llm = kgqa("ask", "who", "--store", embedded_metaqa, "--method", "lmp", "--llm", "ftp://x")
    assert bad_llm.returncode == 2 and "--llm 'ftp://x'" in bad_llm.stderr


def test_engine_streams_answer_tokens_from_the_http_server(llama_server, embedded_metaqa):
    from kgqa import Engine, Final, Token

    llm = f"{llama_server.url}?model=gemma3-270m&mode=completion"
    with Engine(embedded_metaqa, "llm-only", llm, kg="metaqa") as engine:
        events = list(engine.stream("what movies did Temuera Morrison act in"))
    tokens = [e.text for e in events if isinstance(e, Token)]
    final = events[-1]
    assert isinstance(final, Final) and len(tokens) >= 1
    assert final.answer.text and final.answer.text in "".join(tokens)  # the reply is what was streamed, cleaned
    call = final.answer.trace.llm_calls[0]
    # llama.cpp's server sends no usage on streams: the tokens are estimated, and the record says so
    assert call.prompt_tokens > 0 and call.tokens_estimated is True


def test_gemma_picks_glow_classes_by_likelihood_and_the_gnns_answers_sway_some_gn_choices(gemma_in_process, tmp_path):
    """GLOW-GN with the real model on Countries S2 (region and subregion held out): each choice is a
    class scored by Gemma in one call (calibrated, the default: the content-free prompt's scores are
    part of that call); giving the prompt other GNN answers changes some choices, with the prior (the
    GNN's distribution, added to the calibrated scores) held as it was, so the change is the prompt's."""
    import numpy as np

    from kgqa.methods.glow.answer import GLOWAnswerer, GLOWSettings
    from kgqa.methods.glow.openworld import build, read_facts
    from kgqa.methods.glow.patterns import load_patterns
    from kgqa.methods.glow.train import GLOWTrainConfig, train

    # scoring a batch (the prompt's cache repeated, labels right-padded) equals scoring each label alone
    labels = [" Paris", " a city in Europe", " Berlin"]
    batch = gemma_in_process.continuation_logprobs("The capital of France is", labels).scores
    alone = [gemma_in_process.continuation_logprobs("The capital of France is", [label]).scores[0] for label in labels]
    assert np.allclose(batch, alone, atol=1e-3) and batch[0] > batch[2]
    s2 = shared_data("countries", "countries_S2")
    world = build("countries", read_facts(s2 / "train.txt"), load_patterns("countries"), held_out=read_facts(s2 / "test.txt"))
    world.write(tmp_path / "ow")
    train(world.facts, world.patterns.patterns, tmp_path / "ckpt", GLOWTrainConfig(epochs=60), "countries", "a geography", log=lambda _: None)
    from kgqa.sparql.embedded import EmbeddedWriter

    writer = EmbeddedWriter.open(None, "countries")
    load_file(writer, tmp_path / "ow" / "kg.tsv", "tsv")
    store = writer.reader()
    answerer = GLOWAnswerer(store, tmp_path / "ckpt").with_options(GLOWSettings("gn", use_stored=False), gemma_in_process)
    questions = world.questions[:12]
    prior, kept = answerer.prior, {}
    def held(pattern, variant, row):  # type: ignore[no-untyped-def]
        if (pattern.name, row) not in kept:  # the first run's prior, kept for the swapped run
            kept[pattern.name, row] = prior(pattern, variant, row)
        return kept[pattern.name, row]

    answerer.prior = held  # type: ignore[method-assign]
    first = [answerer.answer(q["question"], q["topics"]) for q in questions]
    for answer in first:
        assert len(answer.trace.llm_calls) == 1 and answer.trace.llm_calls[0].prompt_tokens > 50
        assert answer.answers[0].match == "label:calibrated" and answer.answers[0].label in ("africa", "americas", "asia", "europe", "oceania")
        assert len(answer.evidence.candidates) == 3
    classes = answerer.checkpoint.classes["country-region"]
    answerer.checkpoint.classes["country-region"] = (classes + 2) % 5  # other GNN answers, same scores
    try:
        swapped = [answerer.answer(q["question"], q["topics"]) for q in questions]
    finally:
        answerer.checkpoint.classes["country-region"] = classes
    assert len(kept) == len({q["topics"][0] for q in questions})  # no new (pattern, entity): each swapped answer had its prior as before
    changed = sum(a.answers[0].label != b.answers[0].label for a, b in zip(first, swapped))
    assert changed >= 1, "the GNN's answers in the GN prompt never changed Gemma's choice"
    assert np.isfinite([a.answers[0].score for a in first]).all()


def test_text2query_with_gemma_answers_or_falls_back_and_every_query_is_judged(llama_server, embedded_metaqa, tmp_path):
    """Gemma 3 270M writes SPARQL for the full MetaQA KB: whatever it writes is either run (checked
    first) or refused by a named rule, and each question ends answered or with kgfr's answer and why."""
    store = open_store(embedded_metaqa, "metaqa")
    llm = CachedLLM(OpenAICompatibleLLM(model="gemma3-270m", base_url=llama_server.url, mode="completion"), tmp_path / "cache")
    runner = build_runner("text2query", store, llm, options={"query_retries": 1})
    for ex in dev_questions(per_hop=1):
        answer = runner(ex.question, None)
        check_answer(answer, "text2query", 2)
        assert 1 <= len(answer.evidence.queries) <= 2 and len(answer.evidence.queries) == len(answer.trace.llm_calls)
        for record in answer.evidence.queries:
            assert record["language"] == "sparql" and record["verdict"] in ("ran", "no rows", "refused", "failed")
            assert record["verdict"] != "refused" or record["rule"]
        assert answer.answers or answer.declined or answer.trace.fallback
        assert (answer.trace.fallback is None) == (answer.evidence.queries[-1]["verdict"] == "ran")
