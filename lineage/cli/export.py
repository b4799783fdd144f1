"""``lineage export NAME@TAG``: a release's samples as JSONL or Parquet files (the service's ``export_release``)."""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import Annotated

import typer

from lineage.cli.app import console, guard, open_service
from lineage.cli.progress import bars


def export(
    ref: Annotated[str, typer.Argument(help="NAME@TAG")],
    out: Annotated[Path, typer.Option("--out", help="Output folder.")],
    fmt: Annotated[str, typer.Option("--format", help="jsonl or parquet.")] = "jsonl",
    override: Annotated[
        str | None, typer.Option(help="A withdrawn release: serve it anyway, for this reason (it is recorded).")
    ] = None,
) -> None:
    """Export a release's samples as JSONL or Parquet."""
    with open_service() as service, bars(console) as progress:
        total = guard(lambda: service.get_release(ref)).row_count  # the bar's total: the release's rows
        task = progress.add_task(f"export {ref}", total=total)
        advance = lambda n: progress.advance(task, n)  # noqa: E731
        result = guard(
            lambda: service.export_release(ref, out, fmt, advance, override_reason=override, actor=getpass.getuser())
        )
    console.print(f"wrote {result.rows:,} samples to {result.path}")
