"""What the CLI's commands share: the app's consoles, the store and KG options, errors, progress bars."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

StoreOpt = Annotated[
    Optional[str],
    typer.Option("--store", help="Store URL: oxigraph:///abs/path or oxigraph://rel/path [env KGQA_STORE; default oxigraph://.kgqa/store]"),
]
KgOpt = Annotated[Optional[str], typer.Option("--kg", envvar="KGQA_KG", help="KG name inside the store (optional when it holds one KG) [env KGQA_KG]")]
CheckpointOpt = Annotated[Optional[Path], typer.Option("--checkpoint", help="KGFR checkpoint folder (default: the bundled one, kgfr-multikg)")]


def fail(message: str) -> None:
    err.print(f"[bold red]error:[/] {message}", highlight=False)
    raise typer.Exit(2)


def progress_bar(description: str, total: int) -> Progress:
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                    TimeElapsedColumn(), TimeRemainingColumn(), console=err, transient=False)
