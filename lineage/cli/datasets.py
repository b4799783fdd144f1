"""``lineage datasets``: every dataset and its versions."""

from __future__ import annotations

from rich.table import Table

from lineage.cli.app import console, open_catalog


def datasets() -> None:
    """List datasets and their versions."""
    # start-up: SQLAlchemy
    from sqlalchemy import select

    from lineage.catalog import Dataset

    table = Table(title="Datasets")
    for col in ("dataset", "version", "samples", "quarantined", "run", "created"):
        table.add_column(col)
    with open_catalog().session() as s:
        for ds in s.scalars(select(Dataset).order_by(Dataset.name)):
            for v in ds.versions:
                table.add_row(
                    ds.name,
                    str(v.version),
                    f"{v.row_count:,}",
                    f"{v.quarantine_count:,}",
                    v.run_id[:8],
                    v.created_at.strftime("%Y-%m-%d %H:%M"),
                )
    console.print(table)
