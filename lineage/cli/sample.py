"""``lineage sample ID``: the whole lineage of one sample, as the service answers it."""

from __future__ import annotations

from typing import Annotated

import typer

from lineage.cli.app import AsJson, fail, guard, open_service, print_json
from lineage.cli.render import print_sample_lineage
from lineage.errors import NotFound


def sample(
    sample_id: Annotated[str, typer.Argument(help="The sample's id.")],
    dataset: Annotated[str | None, typer.Option(help="Only look in this dataset.")] = None,
    as_json: AsJson = False,
) -> None:
    """The whole lineage of a sample: source file and row, every operator's verdict, duplicates."""
    with open_service() as service:
        found = guard(lambda: service.sample_lineage(sample_id, dataset=dataset), as_json=as_json)
    if not found.found:
        fail(NotFound(f"sample {sample_id} is in no dataset version's lineage"), as_json=as_json)
    if as_json:
        print_json(found)
        return
    print_sample_lineage(found)
