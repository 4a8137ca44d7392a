"""`kgqa` command line: load, subgraph, stats."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from kgqa.errors import EntityNotFound, KGQAError
from kgqa.retrieval import DEFAULT_HOPS, DEFAULT_LAMBDA, retrieve
from kgqa.store_url import default_store_url, open_store, open_writer

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Question answering over knowledge graphs in real graph stores.")
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

StoreOpt = Annotated[
    Optional[str],
    typer.Option("--store", help="Store URL: oxigraph:///abs/path or oxigraph://rel/path [env KGQA_STORE; default oxigraph://.kgqa/store]"),
]
KgOpt = Annotated[Optional[str], typer.Option("--kg", help="KG name inside the store (optional when it holds one KG)")]


def _fail(message: str) -> None:
    err.print(f"[bold red]error:[/] {message}", highlight=False)
    raise typer.Exit(2)


@app.command()
def load(
    paths: Annotated[list[Path], typer.Argument(help="Files to load (.txt MetaQA, .tsv, .nt, .ttl; .gz too)")],
    kg: Annotated[str, typer.Option("--kg", help="KG name: its IRIs live under urn:kgqa:kg:<name>:")] = "default",
    store: StoreOpt = None,
    fmt: Annotated[Optional[str], typer.Option("--format", help="metaqa | tsv | nt | ttl | labels (id<TAB>label) (default: from the file name)")] = None,
    skip_bad: Annotated[bool, typer.Option("--skip-bad", help="Skip malformed lines and report how many")] = False,
    force: Annotated[bool, typer.Option("--force", help="Re-read a file that is already loaded completely")] = False,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1)] = 20_000,
) -> None:
    """Load triples into a store: batched, idempotent, resumable after a crash."""
    from kgqa.loaders import load_file

    url = store or default_store_url()
    try:
        writer = open_writer(url, kg)
        for path in paths:
            with Progress(
                TextColumn("[bold]{task.description}"), BarColumn(), DownloadColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
                console=err, transient=False,
            ) as bar:
                task = bar.add_task(f"load {path.name}", total=path.stat().st_size if path.is_file() else None)
                report = load_file(
                    writer, path, fmt, batch_size=batch_size, skip_bad=skip_bad, force=force,
                    progress=lambda done, total: bar.update(task, completed=done, total=total),
                )
            if report.already_complete:
                out.print(f"{path}: already loaded completely ({report.facts_in_store:,} facts in KG {kg!r}); --force re-reads it")
                continue
            rate = report.facts_written / report.seconds if report.seconds else 0.0
            resumed = f", resumed after record {report.resumed_from:,}" if report.resumed_from else ""
            out.print(
                f"{path}: {report.facts_written:,} facts written in {report.seconds:.1f}s ({rate:,.0f}/s){resumed}; "
                f"KG {kg!r} now holds {report.facts_in_store:,} facts"
            )
            if report.skipped:
                shown = ", ".join(str(n) for n in report.skipped_lines)
                out.print(f"{path}: skipped {report.skipped:,} malformed lines (first: {shown})")
        writer.close()
    except (KGQAError, ValueError, OSError) as exc:
        _fail(str(exc))


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
        _fail(str(exc))
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
        _fail(str(exc))
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


def main() -> None:
    app()
