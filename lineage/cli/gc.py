"""``lineage gc``: reclaim the space of runs that never committed."""

from __future__ import annotations

from typing import Annotated

import typer

from lineage.cli.app import console, load_settings, open_catalog


def gc(dry_run: Annotated[bool, typer.Option(help="Only list what would be deleted.")] = False) -> None:
    """Delete files of runs that never committed: the supported way to reclaim space (not Delta's
    VACUUM, which these tables' retention keeps from deleting anything). Never touches what a
    dataset version needs; gives any table that lacks them its retention properties back."""
    from lineage.gc import collect_garbage  # start-up: SQLAlchemy, deltalake

    report = collect_garbage(open_catalog(), load_settings(), dry_run=dry_run)
    verb = "would delete" if dry_run else "deleted"
    console.print(
        f"abandoned runs marked failed: {len(report.abandoned_runs)}; {verb} "
        f"{len(report.deleted_files)} files; kept {report.kept_files} committed files"
    )
    for table in report.retention_set:
        console.print(f"{'would set' if dry_run else 'set'} retention properties on {table}")
