"""``lineage sample``, ``samples``, ``why-not`` and ``source-releases``: sample-level lineage, as the service
answers it (``--json``: its models, the HTTP API's bodies)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from lineage.cli.app import AsJson, console, every, fail, guard, open_service, print_json
from lineage.cli.render import print_sample_lineage
from lineage.errors import NotFound

if TYPE_CHECKING:
    from lineage.service.core import Service


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


def samples(
    dataset: Annotated[str, typer.Argument(help="The dataset.")],
    version: Annotated[int | None, typer.Option(help="Its version (default: the latest).")] = None,
    operator: Annotated[str | None, typer.Option(help="Only this operator's records (e.g. minhash_dedupe).")] = None,
    verdict: Annotated[str | None, typer.Option(help="Only this verdict: kept, dropped or modified.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many records.", min=1)] = 20,
    as_json: AsJson = False,
) -> None:
    """What each step of the run that made a dataset version decided about each sample, by sample id."""
    with open_service() as service:
        number = version if version is not None else guard(lambda: _latest(service, dataset), as_json=as_json)
        page = every(service.list_samples, dataset, number, operator=operator, verdict=verdict, at_most=limit)
    if as_json:
        print_json(page)
        return
    shown = f", the first {len(page.items):,}" if len(page.items) < page.total else ""
    table = Table(title=f"{dataset} v{number}: {page.total:,} records{shown}")
    for col in ("sample", "step", "operator", "verdict", "reason"):
        table.add_column(col, overflow="fold")
    for r in page.items:
        table.add_row(r.sample_id, str(r.step), r.operator, r.verdict, escape(r.reason or ""))
    console.print(table)


def _latest(service: Service, dataset: str) -> int:
    latest = service.get_dataset(dataset).latest_version
    if latest is None:
        raise NotFound(f"dataset {dataset!r} has no versions")
    return int(latest)


def why_not(
    sample_id: Annotated[str, typer.Argument(help="The sample's id.")],
    release: Annotated[str, typer.Option("--release", "-r", help="NAME@TAG")],
    as_json: AsJson = False,
) -> None:
    """Why a sample is, or is not, in a release: the step that dropped it, its duplicate, or that its source
    was never an input."""
    with open_service() as service:
        found = guard(lambda: service.why_not(sample_id, release), as_json=as_json)
    if as_json:
        print_json(found)
        return
    colour = "green" if found.in_release else "yellow"
    console.print(f"[{colour}]{escape(found.cause.replace('_', ' '))}[/]: {escape(found.explanation)}")
    for where in found.found_in:
        console.print(
            f"  in {escape(where.ref)}" + (f" (released as {escape(where.release)})" if where.release else "")
        )


def source_releases(
    uri: Annotated[str | None, typer.Option(help="A source file's URI (as lineage records it).")] = None,
    dataset: Annotated[str | None, typer.Option(help="A dataset (with --version: that version).")] = None,
    version: Annotated[int | None, typer.Option(help="The dataset's version (default: the latest).")] = None,
    as_json: AsJson = False,
) -> None:
    """Which releases hold samples of a source file or of a dataset version, and how many."""
    with open_service() as service:
        found = guard(lambda: service.source_releases(uri=uri, dataset=dataset, version=version), as_json=as_json)
    if as_json:
        print_json(found)
        return
    if not found.releases:
        console.print(f"no release holds samples of {escape(found.source)}")
        return
    table = Table(title=f"Releases holding samples of {escape(found.source)}")
    for col in ("release", "state", "dataset", "version", "samples"):
        table.add_column(col, justify="right" if col in ("version", "samples") else "left")
    for r in found.releases:
        table.add_row(r.release, r.state, r.dataset, str(r.version), f"{r.samples:,}")
    console.print(table)
