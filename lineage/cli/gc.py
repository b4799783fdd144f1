"""``lineage gc``: reclaim the space of runs that never committed (the service's ``collect_garbage``)."""

from __future__ import annotations

from typing import Annotated

import typer

from lineage.cli.app import AsJson, console, guard, open_service, print_json


def gc(
    dry_run: Annotated[bool, typer.Option(help="Only list what would be deleted.")] = False,
    as_json: AsJson = False,
) -> None:
    """Delete files of runs that never committed: the supported way to reclaim space (not Delta's
    VACUUM, which these tables' retention keeps from deleting anything). Never touches what a
    dataset version needs; gives any table that lacks them its retention properties back."""
    with open_service() as service:
        report = guard(lambda: service.collect_garbage(dry_run=dry_run), as_json=as_json)
    if as_json:
        print_json(report)
        return
    verb = "would delete" if dry_run else "deleted"
    console.print(
        f"abandoned runs marked failed: {len(report.abandoned_runs)}; {verb} "
        f"{len(report.deleted_files)} files; kept {report.kept_files} committed files"
    )
    for table in report.retention_set:
        console.print(f"{'would set' if dry_run else 'set'} retention properties on {table}")
