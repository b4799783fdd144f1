"""Progress bars for long CLI work (rich): a run, behind the engines' plain ``(name, n)`` callback, and a
tier copy."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TransferSpeedColumn,
)

if TYPE_CHECKING:  # the engines' base module loads pyarrow: only its type is needed here
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


def transfer_progress(console: Console) -> Progress:
    """Bytes copied and the rate, for ``lineage tier copy/move``."""
    return Progress(
        "{task.description}",
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        console=console,
        disable=not console.is_terminal,
    )
