"""``lineage export NAME@TAG``: a release's samples as JSONL or Parquet files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lineage.cli.app import console, guard, load_settings, open_catalog, open_service
from lineage.cli.progress import bars


def export(
    ref: Annotated[str, typer.Argument(help="NAME@TAG")],
    out: Annotated[Path, typer.Option("--out", help="Output folder.")],
    fmt: Annotated[str, typer.Option("--format", help="jsonl or parquet.")] = "jsonl",
) -> None:
    """Export a release's samples as JSONL or Parquet."""
    from lineage.releases.export import export_release  # start-up: SQLAlchemy, deltalake, DuckDB

    with open_service() as service:  # the bar's total: the release's rows
        total = guard(lambda: service.get_release(ref)).row_count
    with bars(console) as progress:
        task = progress.add_task(f"export {ref}", total=total)
        path, rows = guard(
            lambda: export_release(open_catalog(), load_settings(), ref, out, fmt, lambda n: progress.advance(task, n))
        )
    console.print(f"wrote {rows:,} samples to {path}")
