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
    synonyms: Annotated[float, typer.Option("--synonyms", min=0.0, max=1.0, help="Share of relation mentions said with WordNet synonyms in the KG's sense (WordNet is fetched with apt-get download on first use)")] = 0.0,
    events: Annotated[float, typer.Option("--events", min=0.0, max=1.0, help="Share of paths steered to end in a relation with an event wording (place of birth: 'where was X's spouse born'); needs --synonyms")] = 0.0,
    wordnet: Annotated[Path | None, typer.Option("--wordnet", help="A folder with WordNet 3.0's index.*/data.*/*.exc files (default: the cache)")] = None,
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
        said_otherwise = _synonyms(graph, wordnet) if synonyms > 0 or events > 0 else None
        with progress_bar("questions", count) as bar:
            task = bar.add_task(f"questions from {graph.kg}", total=count)
            questions = synthesise(graph, count, seed, lengths, conjunctions, max_answers, progress=lambda n: bar.update(task, completed=n),
                                   synonyms=said_otherwise, synonym_share=synonyms, event_share=events)
        write_jsonl(questions, out_file)
    except (KGQAError, ValueError, OSError) as exc:
        fail(str(exc))
        return
    if len(questions) < count:
        err.print(f"the KG gave {len(questions):,} distinct questions of the {count:,} asked", highlight=False)
    by_hop = {h: sum(q.hop == h and q.shape == "path" for q in questions) for h in lengths}
    out.print(f"{len(questions):,} questions → {out_file} (paths by hop {by_hop}, two-topic {sum(q.shape == 'and' for q in questions)})", highlight=False)


def _synonyms(graph, folder: Path | None):
    from kgqa.eval.synth.synonyms import RelationSynonyms
    from kgqa.eval.synth.wordnet import open_wordnet
    from kgqa.retrieval.text import TextEncoder

    found = RelationSynonyms(open_wordnet(folder), [r.label for r in graph.relations()], TextEncoder().encode_bulk)
    said = ", ".join(f"{label}: {' / '.join(w for _, w in alternatives)}" for label, alternatives in found.alternatives.items())
    err.print(f"synonyms for {len(found.alternatives)} relations" + (f" ({said})" if said else ""), highlight=False)
    if found.events:
        events = ", ".join(f"{label}: {wh} … {words}" for label, (wh, words) in found.events.items())
        err.print(f"asked with an event's verb: {len(found.events)} relations ({events})", highlight=False)
    return found
