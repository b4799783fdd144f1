"""``lineage datasets``, ``dataset update``, ``runs``, ``pipeline-runs`` and ``diff``: what the catalog holds
(datasets and their versions, the runs that made them, the pipeline runs grouping stages, what changed between two
versions), as the service answers it (``--json``: its models, the HTTP API's bodies)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from lineage.cli.app import AsJson, console, every, guard, open_service, print_json
from lineage.cli.render import print_mixture_diff, print_stages


def _when(at: datetime | None) -> str:
    return at.strftime("%Y-%m-%d %H:%M") if at is not None else "-"


def datasets(
    name: Annotated[str | None, typer.Argument(help="Only this dataset (--json: its versions).")] = None,
    as_json: AsJson = False,
) -> None:
    """List datasets and their versions."""
    with open_service() as service:
        if name is not None:
            guard(lambda: service.get_dataset(name), as_json=as_json)  # an unknown NAME is refused, not empty
            versions = {name: every(service.list_versions, name)}
            if as_json:
                print_json(versions[name])
                return
        else:
            found = every(service.list_datasets)
            if as_json:
                print_json(found)
                return
            versions = {ds.name: every(service.list_versions, ds.name) for ds in found.items}
    table = Table(title="Datasets")
    for col in ("dataset", "version", "samples", "quarantined", "run", "created", "releases"):
        table.add_column(col)
    for ds_name, page in versions.items():
        for v in page.items:
            table.add_row(
                ds_name,
                str(v.version),
                f"{v.row_count:,}",
                f"{v.quarantine_count:,}",
                v.run_id[:8],
                _when(v.created_at),
                ", ".join(v.releases),
            )
    console.print(table)


def runs(
    dataset: Annotated[str | None, typer.Option(help="Only runs whose output is this dataset.")] = None,
    status: Annotated[str | None, typer.Option(help="Only runs in this state: running, succeeded, failed.")] = None,
    as_json: AsJson = False,
) -> None:
    """List pipeline runs, newest first: pipeline, engine, output, status, when, and why a run failed."""
    with open_service() as service:
        found = every(service.list_runs, dataset=dataset, status=status)
    if as_json:
        print_json(found)
        return
    table = Table(title="Runs")
    for col in ("run", "pipeline", "engine", "output", "status", "started", "ended", "error"):
        table.add_column(col, overflow="fold")
    for r in found.items:
        colour = {"succeeded": "green", "failed": "red"}.get(r.status, "yellow")
        error = (r.error or "").splitlines()[0] if r.error else ""
        table.add_row(
            r.id,
            r.pipeline,
            r.engine,
            r.output_dataset,
            f"[{colour}]{r.status}[/]",
            _when(r.started_at),
            _when(r.ended_at),
            escape(error),
        )
    console.print(table)


def pipeline_runs(
    pipeline_run_id: Annotated[str | None, typer.Argument(help="One pipeline run: its stages.")] = None,
    pipeline: Annotated[str | None, typer.Option(help="Only runs of this pipeline.")] = None,
    status: Annotated[str | None, typer.Option(help="Only runs in this state: running, succeeded, failed.")] = None,
    as_json: AsJson = False,
) -> None:
    """Runs of pipelines of stages, newest first; with an id, that run's stages: ran or skipped, why, version."""
    with open_service() as service:
        if pipeline_run_id is not None:
            one = guard(lambda: service.get_pipeline_run(pipeline_run_id), as_json=as_json)
            if as_json:
                print_json(one)
                return
            console.print(f"pipeline run {one.id}: {one.pipeline} on {one.engine}, {one.status}")
            print_stages(one.stages)
            return
        found = every(service.list_pipeline_runs, pipeline=pipeline, status=status)
    if as_json:
        print_json(found)
        return
    table = Table(title="Pipeline runs")
    for col in ("pipeline run", "pipeline", "engine", "status", "ran", "skipped", "started", "ended"):
        table.add_column(col, overflow="fold")
    for r in found.items:
        colour = {"succeeded": "green", "failed": "red"}.get(r.status, "yellow")
        ran = [st["stage"] for st in r.stages if st["action"] == "run"]
        skipped = [st["stage"] for st in r.stages if st["action"] == "skip"]
        table.add_row(
            r.id,
            r.pipeline,
            r.engine,
            f"[{colour}]{r.status}[/]",
            ", ".join(ran),
            ", ".join(skipped),
            _when(r.started_at),
            _when(r.ended_at),
        )
    console.print(table)


def diff(
    base: Annotated[str, typer.Argument(help="NAME@TAG (a release), DATASET:vN (a version) or DATASET (its latest).")],
    target: Annotated[str, typer.Argument(help="The same kinds of reference as BASE.")],
    as_json: AsJson = False,
) -> None:
    """What changed from BASE to TARGET: samples added, removed and changed per source, and the schema."""
    with open_service() as service:
        found = guard(lambda: service.diff(base, target), as_json=as_json)
    if as_json:
        print_json(found)
        return
    console.print(
        f"{escape(found.base.ref)} → {escape(found.target.ref)}: {found.added:,} added, {found.removed:,} removed, "
        f"{found.changed:,} changed"
    )
    if found.sources:
        table = Table(title="Samples per source")
        for col in ("source", "added", "removed", "changed"):
            table.add_column(col, justify="left" if col == "source" else "right")
        for src in found.sources:
            table.add_row(escape(src.source), f"{src.added:,}", f"{src.removed:,}", f"{src.changed:,}")
        console.print(table)
    for change in found.schema_changes:
        types = [str(f["type"]) for f in (change.before, change.after) if f and "type" in f]
        shown = f" ({' → '.join(types)})" if types else ""
        console.print(escape(f"schema: {change.field} {change.change.replace('_', ' ')}{shown}"))
    if not found.schema_changes:
        console.print("schema: unchanged")
    print_mixture_diff(found.mixture)


def dataset_update(
    name: Annotated[str, typer.Argument(help="The dataset.")],
    description: Annotated[str | None, typer.Option(help="A new description.")] = None,
    owner: Annotated[str | None, typer.Option(help="A new owner.")] = None,
    license: Annotated[str | None, typer.Option("--license", help="A new licence.")] = None,  # noqa: A002
    tag: Annotated[list[str] | None, typer.Option("--tag", help="The dataset's tags (repeat; replaces them).")] = None,
    as_json: AsJson = False,
) -> None:
    """Edit a dataset's owner, licence, description or tags (what is not given stays as it is)."""
    changes = {"description": description, "owner": owner, "license": license, "tags": tag}
    with open_service() as service:
        found = guard(
            lambda: service.update_dataset(name, {k: v for k, v in changes.items() if v is not None}), as_json=as_json
        )
    if as_json:
        print_json(found)
        return
    console.print(
        f"{escape(found.name)}: owner {escape(found.owner or '-')}, licence {escape(found.license or '-')}, "
        f"tags {escape(', '.join(found.tags or []) or '-')}"
    )
