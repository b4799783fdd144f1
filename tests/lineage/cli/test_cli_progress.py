"""Progress bars: total, percentage, done/total, rate and ETA where the total is known; count and rate
where it is not; a finished bar's clock stops (elapsed frozen, the rate its average). Rendered by rich
on a recording console with a clock the test moves."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.progress import Progress

from lineage.cli.progress import RunProgress, bars, columns, finish
from lineage.service.core import Service
from lineage.settings import Settings


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _progress(clock: Clock, *, unit_bytes: bool = False) -> tuple[Progress, Console]:
    console = Console(record=True, force_terminal=True, width=200, color_system=None)
    return Progress(*columns(unit_bytes=unit_bytes), console=console, get_time=clock), console


def _shown(progress: Progress, console: Console) -> list[str]:
    console.print(progress.make_tasks_table(progress.tasks))
    return [" ".join(line.split()) for line in console.export_text().splitlines() if line.strip()]


def _advance(progress: Progress, clock: Clock, task: int, *steps: int) -> None:
    for n in steps:
        clock.now += 1
        progress.advance(task, n)


def test_a_known_total_shows_bar_percentage_count_rate_and_eta() -> None:
    clock = Clock()
    progress, console = _progress(clock)
    task = progress.add_task("export clean@v1", total=1000)
    _advance(progress, clock, task, 250, 250)
    (line,) = _shown(progress, console)
    assert "━" in line  # the bar
    assert line.endswith("50% 500/1,000 250/s 0:00:02 eta 0:00:02"), line


def test_an_unknown_total_shows_count_and_rate_only() -> None:
    clock = Clock()
    progress, console = _progress(clock)
    task = progress.add_task("records", total=None)
    _advance(progress, clock, task, 250, 250)
    (line,) = _shown(progress, console)
    assert line == "records 500 250/s 0:00:02", line  # no bar (it would pulse forever), no %, no ETA


def test_bytes_are_shown_as_sizes() -> None:
    clock = Clock()
    progress, console = _progress(clock, unit_bytes=True)
    task = progress.add_task("copy clean@v1 → cold", total=4_000_000)
    _advance(progress, clock, task, 1_000_000, 1_000_000)
    (line,) = _shown(progress, console)
    assert line.endswith("50% 2.0 MB/4.0 MB 1.0 MB/s 0:00:02 eta 0:00:02"), line


def test_a_finished_bar_stops_its_clock() -> None:
    clock = Clock()
    progress, console = _progress(clock)
    counted = progress.add_task("records", total=None)
    bounded = progress.add_task("files", total=2)
    _advance(progress, clock, counted, 300)
    _advance(progress, clock, bounded, 1, 1)  # reaches its total at 0:00:03
    finish(progress, counted)
    clock.now = 60
    assert _shown(progress, console) == [
        "records 300 100/s 0:00:03",  # the average over its 3 s, not a rate decaying to 0
        "files ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 100% 2/2 1/s 0:00:03",
    ]


def test_a_runs_first_step_finishes_the_reading_counters_and_closing_finishes_every_bar() -> None:
    clock = Clock()
    progress, _ = _progress(clock)
    update = RunProgress(progress)
    update("files.total", 2)  # what a run declares before it reads (pipelines.progress)
    update("files", 1)
    update("records", 40)
    clock.now = 5
    update("files", 1)
    update("step1.minhash_dedupe.sketch", 40)
    files, records, sketch = progress.tasks
    assert (files.total, files.finished) == (2, True)
    assert records.stop_time == 5 and sketch.stop_time is None
    update("step1.minhash_dedupe", 40)
    assert progress.tasks[2].stop_time == 5

    console = Console(record=True, force_terminal=True)
    with bars(console) as live:
        running = live.add_task("export", total=None)
    assert [t.stop_time is not None for t in live.tasks] == [True] and live.tasks[0].id == running


def test_a_run_declares_the_totals_it_knows_before_counting(settings: Settings, corpus: Path) -> None:
    """Raw inputs: the files (2 in the corpus) before the first one is read. Dataset-version inputs: their
    rows. The bars then show a percentage and an ETA (on the old code a run never sent a total)."""
    heard: list[tuple[str, int]] = []
    service = Service(settings)
    try:
        ingested = service.ingest(str(corpus), "raw", progress=lambda name, n: heard.append((name, n)))
        assert heard[0] == ("files.total", 2) and sum(n for name, n in heard if name == "files") == 2
        heard.clear()
        spec = {"name": "again", "inputs": [{"dataset": "raw"}], "operators": [], "output": {"dataset": "again"}}
        service.run_pipeline(spec, progress=lambda name, n: heard.append((name, n)))
        assert heard[0] == ("records.total", ingested.row_count)
        assert sum(n for name, n in heard if name == "records") == ingested.row_count
    finally:
        service.close()
