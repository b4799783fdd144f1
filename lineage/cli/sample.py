"""``lineage sample ID``: the whole lineage of one sample, as the service answers it."""

from __future__ import annotations

from typing import Annotated

import typer

from lineage.cli.app import console, fail, guard, load_settings
from lineage.cli.render import print_sample_lineage
from lineage.errors import NotFound


def sample(
    sample_id: Annotated[str, typer.Argument(help="The sample's id.")],
    dataset: Annotated[str | None, typer.Option(help="Only look in this dataset.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """The whole lineage of a sample: source file and row, every operator's verdict, duplicates."""
    from lineage.client import Client  # start-up: the in-process service (SQLAlchemy, DuckDB, deltalake)

    found = guard(lambda: Client(settings=load_settings()).sample_lineage(sample_id, dataset=dataset))
    if not found.found:
        fail(NotFound(f"sample {sample_id} is in no dataset version's lineage"))
    if as_json:
        console.print_json(found.model_dump_json())
        return
    print_sample_lineage(found)
