"""Progress bars for long CLI work (rich): a run, behind the engines' plain ``(name, n)`` callback, a tier
copy (bytes) and an export (rows).

Every bar has the same columns. Where the total is known (the bytes of a release's files, the rows of a
release, a run's files or records when the run declares them) a bar shows the bar, the percentage, done/total, the
rate and the ETA; where it is not, the count and the rate. A finished bar stops its clock: its elapsed
time freezes and its rate becomes the average over the whole task. A bar finishes when it reaches its
total, or when :func:`finish` says so (a run's reading counters when its first step starts; every bar
when its display closes, also on a failure).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import timedelta
from typing import TYPE_CHECKING

from rich import filesize
from rich.console import Console
from rich.progress import BarColumn, Progress, ProgressColumn, Task, TaskID, TaskProgressColumn, TextColumn
from rich.text import Text

from pipelines.progress import TOTAL, ProgressFn

if TYPE_CHECKING:
    from rich.console import RenderableType


def _stopped(task: Task) -> bool:
    return task.finished or task.stop_time is not None


def _clock(seconds: float) -> str:
    return str(timedelta(seconds=max(0, int(seconds))))


class KnownBarColumn(BarColumn):
    """The bar, only where the total is known (a bar of an unknown total would pulse forever)."""

    def render(self, task: Task) -> RenderableType:
        return super().render(task) if task.total is not None else Text("")


class CountColumn(ProgressColumn):
    """``done/total`` (or ``done`` where the total is unknown), as counts or bytes."""

    def __init__(self, *, unit_bytes: bool = False) -> None:
        self.unit_bytes = unit_bytes
        super().__init__()

    def _format(self, n: float) -> str:
        return filesize.decimal(int(n)) if self.unit_bytes else f"{int(n):,}"

    def render(self, task: Task) -> Text:
        done = self._format(task.completed)
        return Text(done if task.total is None else f"{done}/{self._format(task.total)}", style="progress.download")


class RateColumn(ProgressColumn):
    """The rate: recent while the task runs, the average over the whole task once it stopped."""

    def __init__(self, *, unit_bytes: bool = False) -> None:
        self.unit_bytes = unit_bytes
        super().__init__()

    def render(self, task: Task) -> Text:
        if _stopped(task):
            elapsed = task.finished_time if task.finished else task.elapsed
            speed = task.completed / elapsed if elapsed else None
        else:
            speed = task.speed
        if speed is None:
            return Text("")
        shown = f"{filesize.decimal(int(speed))}/s" if self.unit_bytes else f"{speed:,.0f}/s"
        return Text(shown, style="progress.data.speed")


class ElapsedColumn(ProgressColumn):
    """Time spent; frozen once the task stopped."""

    def render(self, task: Task) -> Text:
        elapsed = task.finished_time if task.finished else task.elapsed
        return Text(_clock(elapsed) if elapsed is not None else "", style="progress.elapsed")


class EtaColumn(ProgressColumn):
    """Time left, where the total is known and the task still runs."""

    max_refresh = 0.5  # as rich's TimeRemainingColumn: an estimate that jitters less

    def render(self, task: Task) -> Text:
        if task.total is None or _stopped(task):
            return Text("")
        left = task.time_remaining
        return Text(f"eta {_clock(left) if left is not None else '-:--:--'}", style="progress.remaining")


def columns(*, unit_bytes: bool = False) -> list[ProgressColumn]:
    """Description, bar, percentage, done/total, rate, elapsed, ETA (the last four: of counts or bytes)."""
    return [
        TextColumn("{task.description:<28}"),
        KnownBarColumn(),
        TaskProgressColumn(),  # the percentage; empty where the total is unknown
        CountColumn(unit_bytes=unit_bytes),
        RateColumn(unit_bytes=unit_bytes),
        ElapsedColumn(),
        EtaColumn(),
    ]


def finish(progress: Progress, task: TaskID) -> None:
    """Stop the task's clock (a bar that reached its total has stopped already)."""
    if not any(t.id == task and t.finished for t in progress.tasks):
        progress.stop_task(task)


@contextmanager
def bars(console: Console, *, unit_bytes: bool = False) -> Iterator[Progress]:
    """A live display of bars of :func:`columns`, each finished when the display closes."""
    progress = Progress(*columns(unit_bytes=unit_bytes), console=console, disable=not console.is_terminal)
    with progress:
        try:
            yield progress
        finally:
            for task in progress.task_ids:
                finish(progress, task)


class RunProgress:
    """The engines' ``(name, n)`` callback as bars: one per counter (files, records, then each step in turn),
    with the total a run declares (``name + TOTAL``, :mod:`pipelines.progress`). A run reads
    its inputs (``files``, ``records``) before its first step counter and runs its steps one after another,
    so a step's counter starting finishes every counter before it."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.tasks: dict[str, TaskID] = {}

    def _task(self, name: str) -> TaskID:
        if name not in self.tasks:
            if name.startswith("step"):
                for earlier in self.tasks.values():
                    finish(self.progress, earlier)
            self.tasks[name] = self.progress.add_task(name, total=None)
        return self.tasks[name]

    def __call__(self, name: str, n: int) -> None:
        if name.endswith(TOTAL):
            self.progress.update(self._task(name.removesuffix(TOTAL)), total=n)
        else:
            self.progress.advance(self._task(name), n)


@contextmanager
def run_progress(console: Console) -> Iterator[ProgressFn]:
    """A live display of a run's counters (:class:`RunProgress`)."""
    with bars(console) as progress:
        yield RunProgress(progress)


def transfer_progress(console: Console) -> AbstractContextManager[Progress]:
    """Bytes copied, with the rate (and, given the task's total, percentage and ETA), for ``lineage tier``."""
    return bars(console, unit_bytes=True)
