"""`kgqa` command line: load, index, subgraph, stats, train, synth, calibrate, ask, eval, serve."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.table import Table

from kgqa.core.errors import EntityNotFound, KGQAError
from kgqa.faces.cli_common import CheckpointOpt, KgOpt, StoreOpt, err, fail, out, progress_bar
from kgqa.faces.cli_options import method_flags
from kgqa.faces.cli_index import index
from kgqa.faces.cli_load import load
from kgqa.faces.cli_openworld import app as openworld_app
from kgqa.faces.cli_calibrate import calibrate
from kgqa.faces.cli_synth import synth
from kgqa.faces.cli_train import train
from kgqa.methods import REGISTRY
from kgqa.retrieval.app import DEFAULT_HOPS, DEFAULT_LAMBDA, retrieve
from kgqa.retrieval.store_url import default_store_url, open_store

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Question answering over knowledge graphs in real graph stores.")
app.command()(load)
app.command()(index)


@app.command()
def subgraph(
    labels: Annotated[list[str], typer.Argument(help="Topic entities by label (exact, or case/punctuation-insensitive)")],
    store: StoreOpt = None,
    kg: KgOpt = None,
    hops: Annotated[int, typer.Option("--hops", min=0, max=10)] = DEFAULT_HOPS,
    lam: Annotated[int, typer.Option("--lambda", "--lam", min=0, help="λ: per-(subject, relation) fan-out cap")] = DEFAULT_LAMBDA,
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole subgraph as JSON")] = False,
    show: Annotated[int, typer.Option("--show", min=0, help="How many edges to print")] = 15,
) -> None:
    """Retrieve the capped k-hop subgraph (APP, KGFR eq. 6-7) around topic entities."""
    try:
        graph_store = open_store(store or default_store_url(), kg)
        linked = graph_store.resolve(labels)
        missing = [label for label, hits in linked.items() if not hits]
        if missing:
            raise EntityNotFound(f"no entity labelled {', '.join(repr(m) for m in missing)} in KG {graph_store.kg!r}")
        topics = [hit.entity.iri for hits in linked.values() for hit in hits]
        sg = retrieve(graph_store, topics, hops=hops, lam=lam)
    except (KGQAError, ValueError) as exc:
        fail(str(exc))
        return
    if as_json:
        payload = sg.to_json()
        payload["linking"] = {
            label: [{"iri": h.entity.iri, "label": h.entity.label, "match": h.match} for h in hits] for label, hits in linked.items()
        }
        json.dump(payload, sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
        return
    for label, hits in linked.items():
        for hit in hits:
            out.print(f"topic [bold]{label}[/] → {hit.entity.label} ({hit.match} match)", highlight=False)
    table = Table(title=f"APP subgraph: {hops} hops, λ={lam}, KG {graph_store.kg!r}")
    for col in ("hop", "edges reached", "new nodes"):
        table.add_column(col, justify="right")
    for hop, (edges, nodes) in enumerate(zip(sg.trace.edges_per_hop, sg.trace.new_nodes_per_hop), start=1):
        table.add_row(str(hop), f"{edges:,}", f"{nodes:,}")
    out.print(table)
    out.print(
        f"nodes {sg.num_nodes:,} · edges {sg.num_edges:,} · relations {len(sg.relations)} · "
        f"store round trips {sg.trace.round_trips} · {sg.trace.seconds * 1000:.1f} ms"
    )
    heads, tails = sg.edge_index.tolist()
    for h, t, o, k in list(zip(heads, sg.edge_type.tolist(), tails, sg.edge_hop.tolist()))[:show]:
        out.print(f"  [dim]hop {k}[/] {sg.node_labels[h]} —{sg.relation_name(t)}→ {sg.node_labels[o]}", highlight=False)
    if sg.num_edges > show:
        out.print(f"  … {sg.num_edges - show:,} more edges (--show N, or --json for all)")


@app.command()
def stats(store: StoreOpt = None, kg: KgOpt = None, as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Facts, entities and relations in a KG."""
    try:
        graph_store = open_store(store or default_store_url(), kg)
        counts = graph_store.counts()
        relations = graph_store.relations()
    except (KGQAError, ValueError) as exc:
        fail(str(exc))
        return
    if as_json:
        print(json.dumps({"kg": graph_store.kg, "facts": counts.facts, "entities": counts.entities,
                          "relations": {r.label: r.facts for r in relations}}))
        return
    out.print(f"KG {graph_store.kg!r}: {counts.facts:,} facts, {counts.entities:,} entities, {counts.relations} relations")
    table = Table()
    table.add_column("relation")
    table.add_column("facts", justify="right")
    for r in relations:
        table.add_row(r.label, f"{r.facts:,}")
    out.print(table)


app.command()(train)
app.command()(synth)
app.command()(calibrate)
app.add_typer(openworld_app, name="openworld")


MethodOpt = Annotated[str, typer.Option("--method", envvar="KGQA_METHOD", help=f"{' | '.join(REGISTRY.names)} (kgfr without --llm: no LLM at all) [env KGQA_METHOD]")]
LLMOpt = Annotated[Optional[str], typer.Option("--llm", envvar="KGQA_LLM", help="gemma3-270m | local:PATH | http://host/v1?model=NAME[&mode=completion] | openai:MODEL [env KGQA_LLM]")]
LLMCacheOpt = Annotated[Optional[Path], typer.Option("--llm-cache", help="Cache LLM replies on disk in this folder")]
WindowOpt = Annotated[float, typer.Option("--scoring-window-ms", envvar="KGQA_SCORING_WINDOW_MS", min=0, max=1000, help="KGFR batcher: how long the first question of a batch waits for others to join")]
BatchOpt = Annotated[int, typer.Option("--scoring-max-batch", envvar="KGQA_SCORING_MAX_BATCH", min=1, max=1024, help="KGFR batcher: most questions scored in one model call")]


def _engine(method: str, store_url: str | None, kg: str | None, llm: str | None, llm_cache: Path | None,
            checkpoint: Path | None, options: dict, **settings: Any):  # type: ignore[no-untyped-def]
    from kgqa.faces.sdk import Engine

    return Engine(store_url or default_store_url(), method, llm or None, kg=kg or None, checkpoint=checkpoint, llm_cache=llm_cache,
                  settings=settings, **options)


@app.command()
@method_flags
def ask(
    question: Annotated[str, typer.Argument(help="A question in plain language")],
    store: StoreOpt = None,
    kg: KgOpt = None,
    topic: Annotated[Optional[list[str]], typer.Option("--topic", help="Topic entity label (skips linking); repeatable")] = None,
    method: MethodOpt = "kgfr",
    llm: LLMOpt = None,
    llm_cache: LLMCacheOpt = None,
    checkpoint: CheckpointOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the Answer JSON (schema: kgqa.core.answer)")] = False,
    method_options: Optional[dict] = None,
) -> None:
    """Answer a question: the answers, the facts and paths behind them, and what it cost."""
    try:
        with _engine(method, store, kg, llm, llm_cache, checkpoint, method_options or {}) as engine:
            result = engine.ask(question, topic)
    except (KGQAError, ValueError, FileNotFoundError) as exc:
        fail(str(exc))
        return
    if as_json:
        print(json.dumps(result.to_json(), ensure_ascii=False))
        return
    if not result.topics and not method.startswith("llm-only"):
        fail("no entity of the KG found in the question (name one with --topic)")
    out.print("topics: " + ", ".join(f"{t['label']} ({t['match']})" for t in result.topics), highlight=False)
    if result.declined:
        out.print(f"[yellow]no answer: {result.declined}[/]", highlight=False)
        for c in result.evidence.candidates[:3]:
            out.print(f"  closest: {c['label']}  score {c['score']:.2f}", highlight=False)
    elif result.confidence is not None:
        answerable = f" · answerability {result.trace.answerability:.2f}" if result.trace.answerability is not None else ""
        out.print(f"[dim]confidence {result.confidence:.2f}{answerable}[/]", highlight=False)
    for a in result.answers:
        score = f"  score {a.score:.2f}" if a.score is not None else ""
        kg_part = f"  [dim]→ {a.label} ({a.match})[/]" if a.iri and a.label != a.text else ("" if a.iri or a.match == "verdict" else "  [dim](not in the KG)[/]")
        out.print(f"[bold]{a.text}[/]{kg_part}{score}", highlight=False)
    for fact in result.evidence.facts[:5]:
        out.print(f"  fact: {fact}", highlight=False)
    for path in result.evidence.paths[:3]:
        out.print(f"  path: {path}", highlight=False)
    if result.evidence.outline:
        out.print("[dim]outline:[/]", highlight=False)
        out.print(result.evidence.outline, highlight=False, markup=False)
    t = result.trace
    llm_cost = t.llm_totals()
    cost = f" · {llm_cost['calls']} LLM calls, {llm_cost['prompt_tokens']:,}+{llm_cost['completion_tokens']:,} tokens" if llm_cost["calls"] else ""
    sub = ""
    if "nodes" in t.subgraph:
        sub = f"subgraph {t.subgraph['nodes']:,} nodes · {t.subgraph.get('edges', 0):,} edges · "
    elif "pattern" in t.subgraph:  # glow reads the entity's facts, not a subgraph
        sub = f"pattern {t.subgraph['pattern']} · {t.subgraph.get('classes', 0)} classes · {t.subgraph.get('context_facts', 0)} facts · "
    out.print(f"[dim]{sub}{t.round_trips} round trips{cost} · {t.seconds.get('total', 0.0) * 1000:.0f} ms[/]", highlight=False)
    if t.fallback:
        out.print(f"[yellow]fallback: {t.fallback}[/]", highlight=False)


@app.command(name="eval")
@method_flags
def eval_command(
    qa: Annotated[list[Path], typer.Argument(help="QA files (MetaQA format or .jsonl)")],
    store: StoreOpt = None,
    kg: KgOpt = None,
    method: MethodOpt = "kgfr",
    llm: LLMOpt = None,
    llm_cache: LLMCacheOpt = None,
    checkpoint: CheckpointOpt = None,
    topics: Annotated[str, typer.Option("--topics", help="gold: use the file's topics; linked: link them from the question")] = "linked",
    limit: Annotated[Optional[int], typer.Option("--limit", min=1, help="First N questions per file")] = None,
    out_dir: Annotated[Path, typer.Option("--out", help="Report folder (eval.json, eval.md, PNG plots)")] = Path("eval-report"),
    workers: Annotated[int, typer.Option("--workers", min=1, max=256, help="Questions answered at once (KGFR scores them in batches; LLM methods: mind the server's rate limits)")] = 8,
    scoring_window_ms: WindowOpt = 2.0,
    scoring_max_batch: BatchOpt = 32,
    drop_topic_edges: Annotated[Optional[float], typer.Option(
        "--drop-topic-edges", min=0.0, max=1.0, help="Evaluate on an incomplete copy of the KG: this share of the facts around each gold "
                                                     "topic deleted (seeded; needs --kb). The copy is an embedded store kept under --cache-dir")] = None,
    kb: Annotated[Optional[list[Path]], typer.Option("--kb", help="With --drop-topic-edges: the KG's source files, as `kgqa load` read them")] = None,
    drop_seed: Annotated[int, typer.Option("--drop-seed", help="With --drop-topic-edges: which facts are deleted")] = 0,
    cache_dir: Annotated[Path, typer.Option("--cache-dir", help="With --drop-topic-edges: where the incomplete copies are kept (and reused)")] = Path(".kgqa/cache"),
    method_options: Optional[dict] = None,
) -> None:
    """Evaluate on QA files: Hits@1, Hits@k, F1 (all and answerable), per hop, linking, LLM calls and tokens, time per stage."""
    from kgqa.eval.report import evaluate, write_report
    from kgqa.loaders.qa import read_qa

    if topics not in ("gold", "linked"):
        fail(f"--topics must be gold or linked, got {topics!r}")
    try:
        examples = []
        for path in qa:
            rows = read_qa(path)
            examples += rows[:limit] if limit else rows
        if drop_topic_edges:
            store, kg = _incomplete_copy(store, kg, kb, examples, drop_topic_edges, drop_seed, cache_dir), kg or None
        with _engine(method, store, kg, llm, llm_cache, checkpoint, method_options or {}, scoring_window_ms=scoring_window_ms,
                     scoring_max_batch=scoring_max_batch) as engine, progress_bar("eval", len(examples)) as bar:
            task = bar.add_task("questions", total=len(examples))
            report = evaluate(engine.runner(), engine.store, examples, gold_topics=topics == "gold", workers=workers,
                              progress=lambda n: bar.update(task, completed=n))
        report["topics"] = topics
        if drop_topic_edges:
            report["incomplete"] = {"drop_topic_edges": drop_topic_edges, "seed": drop_seed, "store": store}
        written = write_report(report, out_dir, f"kgqa eval ({method}, {topics} topics, KG {engine.store.kg!r})")
    except (KGQAError, ValueError, FileNotFoundError) as exc:
        fail(str(exc))
        return
    out.print((out_dir / "eval.md").read_text(), highlight=False, markup=False)
    out.print(f"wrote {', '.join(str(p) for p in written)}")


def _incomplete_copy(store: str | None, kg: str | None, kb: list[Path] | None, examples: list, ratio: float, seed: int, work: Path) -> str:
    from kgqa.eval.incomplete import gold_topic_iris, incomplete_store

    if not kb:
        raise ValueError("--drop-topic-edges needs --kb: the KG's source files (the copy is built from them)")
    whole = open_store(store or default_store_url(), kg)
    try:
        topics, name = gold_topic_iris(whole, examples), whole.kg
    finally:
        whole.close()
    return incomplete_store(kb, name, topics, ratio, seed, work, progress=lambda line: err.print(line, highlight=False))


@app.command()
@method_flags
def serve(
    store: StoreOpt = None,
    kg: KgOpt = None,
    method: MethodOpt = "kgfr",
    llm: LLMOpt = None,
    llm_cache: LLMCacheOpt = None,
    checkpoint: CheckpointOpt = None,
    host: Annotated[str, typer.Option("--host", envvar="KGQA_HOST", help="Address to bind (0.0.0.0 only behind a proxy you trust)")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", envvar="KGQA_PORT", min=1, max=65535)] = 8000,
    max_body_bytes: Annotated[int, typer.Option("--max-body-bytes", envvar="KGQA_MAX_BODY_BYTES", min=256)] = 16_384,
    max_question_chars: Annotated[int, typer.Option("--max-question-chars", envvar="KGQA_MAX_QUESTION_CHARS", min=10)] = 500,
    request_timeout: Annotated[float, typer.Option("--request-timeout", envvar="KGQA_REQUEST_TIMEOUT_S", min=0.1, help="Seconds per question before 504")] = 60.0,
    max_concurrent: Annotated[int, typer.Option("--max-concurrent", envvar="KGQA_MAX_CONCURRENT", min=1, help="Questions answered at once; more wait in the queue")] = 16,
    max_queue: Annotated[int, typer.Option("--max-queue", envvar="KGQA_MAX_QUEUE", min=0, help="Questions that may wait for a slot; past that, 503 + Retry-After")] = 256,
    queue_timeout: Annotated[float, typer.Option("--queue-timeout", envvar="KGQA_QUEUE_TIMEOUT_S", min=0, help="Seconds a question may wait for a slot before 503 (never past --request-timeout)")] = 30.0,
    scoring_window_ms: WindowOpt = 2.0,
    scoring_max_batch: BatchOpt = 32,
    api_keys: Annotated[Optional[str], typer.Option("--api-keys", envvar="KGQA_API_KEYS", help="Comma-separated keys; when set, /v1/* needs X-API-Key")] = None,
    method_options: Optional[dict] = None,
) -> None:
    """Run the HTTP QA service (FastAPI): POST /v1/ask, /v1/health, /v1/methods, /metrics, /docs, and the playground at /."""
    import uvicorn

    from kgqa.faces.service import ServiceLimits, create_app, limit_malloc_arenas

    if "MALLOC_ARENA_MAX" not in os.environ:
        limit_malloc_arenas(2)
    try:
        engine = _engine(method, store, kg, llm, llm_cache, checkpoint, method_options or {}, scoring_window_ms=scoring_window_ms,
                         scoring_max_batch=scoring_max_batch)
    except (KGQAError, ValueError, FileNotFoundError) as exc:
        fail(str(exc))
        return
    keys = frozenset(k.strip() for k in (api_keys or "").split(",") if k.strip())
    limits = ServiceLimits(max_body_bytes=max_body_bytes, max_question_chars=max_question_chars, request_timeout_s=request_timeout,
                           max_concurrent=max_concurrent, max_queue=max_queue, queue_timeout_s=queue_timeout, api_keys=keys)
    out.print(f"kgqa serving KG {engine.store.kg!r} ({method}{', LLM ' + llm if llm else ''}) on http://{host}:{port}  — docs at /docs", highlight=False)
    # uvicorn shuts down on SIGTERM, then raises it again under the handler it found: the default one
    # would end the process there, before `engine.close()` and the exit handlers. This one exits instead.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        uvicorn.run(create_app(engine, limits), host=host, port=port, log_level="warning", access_log=False)
    finally:
        engine.close()


def main() -> None:
    app()
