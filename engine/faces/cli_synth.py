"""`kgqa synth`: questions generated from a loaded KG, as JSONL for `kgqa eval` and `kgqa train`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kgqa.core.errors import KGQAError
from kgqa.faces.cli_common import KgOpt, StoreOpt, err, fail, out, progress_bar
from kgqa.retrieval.store_url import default_store_url, open_store


def synth(
    out_file: Annotated[Path, typer.Option("--out", help="JSONL file to write (question, answers, topics, hop, shape, path)")],
    count: Annotated[int, typer.Option("--count", min=1, help="How many questions")] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="The same seed and KG give the same questions")] = 0,
    hops: Annotated[str, typer.Option("--hops", help="Path lengths to draw from, evenly: e.g. 1,2,3")] = "1,2,3",
    conjunctions: Annotated[float, typer.Option("--conjunctions", min=0.0, max=1.0, help="Share of two-topic questions")] = 0.15,
    max_answers: Annotated[int, typer.Option("--max-answers", min=1, help="Drop questions with more answers than this")] = 20,
    store: StoreOpt = None,
    kg: KgOpt = None,
) -> None:
    """Generate questions from a loaded KG: relation paths of 1–3 hops and two-topic questions,
    answered by walking the graph, phrased from the relations' readable names in many ways."""
    from kgqa.eval.synth import synthesise, write_jsonl

    try:
        lengths = tuple(int(h) for h in hops.split(","))
    except ValueError:
        fail(f"--hops {hops!r}: expected numbers among 1, 2, 3 separated by commas")
        return
    try:
        graph = open_store(store or default_store_url(), kg)
        with progress_bar("questions", count) as bar:
            task = bar.add_task(f"questions from {graph.kg}", total=count)
            questions = synthesise(graph, count, seed, lengths, conjunctions, max_answers, progress=lambda n: bar.update(task, completed=n))
        write_jsonl(questions, out_file)
    except (KGQAError, ValueError, OSError) as exc:
        fail(str(exc))
        return
    if len(questions) < count:
        err.print(f"the KG gave {len(questions):,} distinct questions of the {count:,} asked", highlight=False)
    by_hop = {h: sum(q.hop == h and q.shape == "path" for q in questions) for h in lengths}
    out.print(f"{len(questions):,} questions → {out_file} (paths by hop {by_hop}, two-topic {sum(q.shape == 'and' for q in questions)})", highlight=False)
