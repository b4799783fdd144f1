"""``lineage ingest`` and ``lineage run``: run a pipeline (one made from the options, or a file) and
commit its output as a new dataset version (the service's ``ingest`` and ``run_pipeline``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from lineage.cli.app import console, guard, open_service
from lineage.cli.progress import run_progress
from lineage.cli.render import print_counts, print_mixture, print_plan, print_stages

if TYPE_CHECKING:
    from lineage.service.core import Service
    from lineage.service.schemas import RunResult
    from pipelines.engines.base import ProgressFn


def _run(start: Callable[[Service, ProgressFn], RunResult]) -> None:
    """Run with a live progress display, then print the stages (ran or skipped), the last one's counts
    and the committed version."""
    with open_service() as service, run_progress(console) as progress:
        result = guard(lambda: start(service, progress))
    if result.pipeline_run is not None:
        print_stages(result.pipeline_run.stages)
    print_counts(result.run.counts)
    resumed = result.run.counts.get("resumed")
    if resumed:
        console.print(
            f"resumed interrupted run {result.run.id} (attempt {resumed['attempts'] + 1}): reused "
            f"{resumed.get('reused_partitions', 0):,} of {resumed.get('partitions', 0):,} input partitions"
        )
    if result.run.counts.get("mixture"):
        from lineage.service.schemas import Mixture  # start-up: only when a run has a mixture to print

        print_mixture(Mixture.model_validate(result.run.counts["mixture"]))
    console.print(
        f"[green]committed[/] {result.dataset} v{result.version}: {result.row_count:,} samples (run {result.run.id})"
    )


def ingest(
    path: Annotated[str, typer.Argument(help="File, folder or glob of raw data.")],
    dataset: Annotated[str, typer.Option("--dataset", "-d", help="Name of the source dataset.")],
    tier: Annotated[str | None, typer.Option(help="Read PATH on this tier instead of the local disk.")] = None,
    fmt: Annotated[str, typer.Option("--format", help="auto, jsonl, parquet, csv or text.")] = "auto",
    text_field: Annotated[str, typer.Option(help="Field holding the text.")] = "text",
    id_field: Annotated[str | None, typer.Option(help="Field holding a stable record id.")] = None,
    text_mode: Annotated[str, typer.Option(help="Plain text: 'file' or 'line' per document.")] = "file",
    engine: Annotated[str, typer.Option(help="local, spark or ray.")] = "local",
) -> None:
    """Convert raw files into a new version of a source dataset."""
    _run(
        lambda service, progress: service.ingest(
            path,
            dataset,
            tier=tier,
            fmt=fmt,
            text_field=text_field,
            id_field=id_field,
            text_mode=text_mode,
            engine=engine,
            base_dir=Path.cwd(),
            progress=progress,
        )
    )


def run(
    pipeline_file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="Pipeline TOML or YAML.")],
    engine: Annotated[str | None, typer.Option(help="Override the pipeline's engine: local, spark, ray.")] = None,
    plan: Annotated[
        bool, typer.Option("--plan", help="Print which stages would run or be skipped, and why; change nothing.")
    ] = False,
    from_stage: Annotated[
        str | None, typer.Option("--from", help="Rerun this stage and everything downstream of it.")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Rerun every stage, changed or not.")] = False,
) -> None:
    """Run a pipeline file and commit its output as a new dataset version.

    A pipeline of stages ([[stages]]) skips each stage whose cache key (inputs, operators and their
    versions and params, code version, mixture) is unchanged since its last succeeded run, reusing its
    version; --from and --force override that."""
    if plan:
        with open_service() as service:
            found = guard(lambda: service.plan_pipeline(pipeline_file, from_stage=from_stage, force=force))
        print_plan(found)
        return
    _run(
        lambda service, progress: service.run_pipeline(
            pipeline_file, engine=engine, progress=progress, from_stage=from_stage, force=force
        )
    )
