"""Progress bars for long CLI work (rich), behind the engines' plain ``(name, n)`` callback."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from pipelines.engines.base import ProgressFn


@contextmanager
def run_progress(console: Console, total_files: int | None = None) -> Iterator[ProgressFn]:
    """A live display with one line per counter the engine reports (files, records, steps)."""
    columns = [
        SpinnerColumn(),
        TextColumn("{task.description:<28}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    ]
    with Progress(*columns, console=console, transient=False, disable=not console.is_terminal) as progress:
        tasks: dict[str, int] = {}

        def update(name: str, n: int) -> None:
            if name not in tasks:
                total = total_files if name == "files" else None
                tasks[name] = progress.add_task(name, total=total)
            progress.advance(tasks[name], n)

        yield update
