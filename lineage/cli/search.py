"""``lineage search TEXT``: the web view's search box on the command line, one table per kind."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from lineage.cli.app import AsJson, console, guard, open_service, print_json


def search(
    text: Annotated[str, typer.Argument(help="A dataset or release name, run id, sample id, source URI or eval set.")],
    limit: Annotated[int, typer.Option(help="At most this many hits per kind, 1-100.")] = 20,
    as_json: AsJson = False,
) -> None:
    """Search names and ids; the hits are grouped by kind."""
    with open_service() as service:
        found = guard(lambda: service.search(text, limit=limit), as_json=as_json)
    if as_json:
        print_json(found)
        return
    if not found.groups:
        console.print(f"nothing matches {escape(found.query)!r}")
        return
    for group in found.groups:
        table = Table(title=f"{group.kind} ({group.total})")
        table.add_column("id", overflow="fold")
        table.add_column("detail", overflow="fold")
        for hit in group.hits:
            table.add_row(escape(hit.id), escape(hit.detail))
        console.print(table)
