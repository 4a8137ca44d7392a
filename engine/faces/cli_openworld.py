"""`kgqa openworld build`: an open-world benchmark (GLOW §4) from a KG's fact files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kgqa.faces.cli_common import err, fail, out

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Open-world benchmarks: questions whose answering facts are deleted from the KG.")


@app.command("build")
def build_command(
    facts: Annotated[list[Path], typer.Argument(help="The KG's facts: subject<TAB>relation<TAB>object files (.gz too)")],
    kg: Annotated[str, typer.Option("--kg", help="The KG's name (kept in the benchmark and the checkpoint trained on it)")],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder to write: kg.tsv, labels.tsv, deleted.tsv, questions.jsonl, patterns.json, manifest.json")],
    patterns: Annotated[str, typer.Option("--patterns", help="A pattern file, the name of a shipped one (fb15k237, countries), or `discover`")] = "discover",
    labels: Annotated[Optional[Path], typer.Option("--labels", help="Entity labels: id<TAB>label lines, or entity2wikidata.json(.gz)")] = None,
    held_out: Annotated[Optional[list[Path]], typer.Option("--held-out", help="Facts the KG already lacks (e.g. Countries test.txt): "
                                                           "the questions ask for these instead of drawing entities")] = None,
    per_pattern: Annotated[int, typer.Option("--per-pattern", min=0, help="Entities drawn per pattern (0: none deleted, e.g. to train on a whole KG)")] = 100,
    seed: Annotated[int, typer.Option("--seed")] = 11,
) -> None:
    """Draw entities per pattern, delete the facts that answer them, and write the template questions."""
    from kgqa.methods.glow.openworld import build, check_absent, read_facts, read_labels
    from kgqa.methods.glow.patterns import discover_patterns, load_patterns

    try:
        triples = [f for path in facts for f in read_facts(path)]
        pattern_set = discover_patterns(triples, kg) if patterns == "discover" else load_patterns(patterns)
        if not pattern_set.patterns:
            fail("no relation of the KG looks like a small class set: declare the patterns in a file (--patterns FILE)")
        missing = [f for path in held_out or [] for f in read_facts(path)]
        world = build(kg, triples, pattern_set, per_pattern, seed, read_labels(labels) if labels else None, missing,
                      [str(p) for p in [*facts, *(held_out or [])]])
        problems = check_absent(world)
        if problems:
            fail("the benchmark would leak answers: " + "; ".join(problems[:5]))
        world.write(out_dir)
    except (ValueError, OSError) as exc:
        fail(str(exc))
        return
    m = world.manifest
    err.print(f"{m['facts']:,} facts, {m['deleted']:,} deleted; questions per pattern: "
              + ", ".join(f"{k} {v}" for k, v in m["questions"].items()), highlight=False)
    load_labels = f" {out_dir / 'labels.tsv'} --format tsv --format labels" if world.labels else ""
    out.print(f"benchmark in {out_dir}\nnext: kgqa load {out_dir / 'kg.tsv'}{load_labels} --kg {kg}\n"
              f"      kgqa train --method glow --openworld {out_dir} --out CHECKPOINT\n"
              f"      kgqa eval {out_dir / 'questions.jsonl'} --method glow --kg {kg} --checkpoint CHECKPOINT", highlight=False)
