"""What the CLI's commands share: the app's consoles, the store and KG options, errors, progress bars."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Optional

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
CheckpointOpt = Annotated[Optional[Path], typer.Option("--checkpoint", help="The method's checkpoint folder (default: its bundled one; one of another method is left to that method)")]


def fail(message: str) -> None:
    err.print(f"[bold red]error:[/] {message}", highlight=False)
    raise typer.Exit(2)


class LineProgress:
    """Progress as plain lines, for a stderr that is not a terminal (a log file, CI), where a live bar
    would print only when it ends: one line on the first update, then at most one per `every` seconds,
    one when a task completes and one when its description changes (a new epoch). The part of rich's
    Progress that the commands use."""

    def __init__(self, write: Callable[[str], None], every: float = 30.0, clock: Callable[[], float] = time.monotonic):
        self.write, self.every, self.clock = write, every, clock
        self.tasks: list[dict[str, Any]] = []

    def __enter__(self) -> "LineProgress":
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def add_task(self, description: str, total: float | None = None) -> int:
        self.tasks.append({"description": description, "total": total, "completed": 0, "started": self.clock(), "said": None, "finished": False})
        return len(self.tasks) - 1

    def update(self, task: int, *, completed: float | None = None, total: float | None = None, description: str | None = None) -> None:
        state = self.tasks[task]
        renamed = description is not None and description != state["description"]
        for key, value in (("completed", completed), ("total", total), ("description", description)):
            if value is not None:
                state[key] = value
        now, done = self.clock(), state["total"] is not None and state["completed"] >= state["total"]
        if state["said"] is not None and now - state["said"] < self.every and not done and not renamed:
            return
        if done and state["finished"] and not renamed:
            return
        state["said"], state["finished"] = now, done
        elapsed, share = now - state["started"], state["completed"] / state["total"] if state["total"] else 0.0
        left = f", ~{elapsed / share - elapsed:.0f} s left" if 0 < share < 1 else ""
        of = f"/{state['total']:g} ({share:.0%})" if state["total"] else ""
        self.write(f"{state['description']}: {state['completed']:g}{of}, {elapsed:.0f} s{left}")


def progress_bar(description: str, total: int) -> Progress | LineProgress:
    """A live bar on a terminal; elsewhere progress lines (see LineProgress)."""
    if not err.is_terminal:
        return LineProgress(lambda line: err.print(line, highlight=False))
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                    TimeElapsedColumn(), TimeRemainingColumn(), console=err, transient=False)
