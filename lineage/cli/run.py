"""``lineage ingest`` and ``lineage run``: run a pipeline (one made from the options, or a file) and
commit its output as a new dataset version."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from lineage.cli.app import console, guard, load_settings
from lineage.cli.progress import run_progress
from lineage.cli.render import print_counts

if TYPE_CHECKING:
    from lineage.runs import RunOutcome
    from pipelines.spec import PipelineSpec


def _run_spec(spec: PipelineSpec, engine: str | None) -> RunOutcome:
    from lineage.runs import Runner  # start-up: SQLAlchemy, deltalake, DuckDB, numba (the operators)

    runner = Runner(load_settings())
    with run_progress(console) as progress:
        outcome = runner.run(spec, engine=engine, progress=progress)
    print_counts(outcome.counts)
    console.print(
        f"[green]committed[/] {outcome.dataset} v{outcome.version}: "
        f"{outcome.row_count:,} samples (run {outcome.run_id})"
    )
    return outcome


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
    from pipelines.spec import PipelineSpec  # start-up: PyYAML

    spec = PipelineSpec.model_validate(
        {
            "name": f"ingest-{dataset}",
            "inputs": [
                {
                    "dataset": dataset,
                    "path": path,
                    "tier": tier,
                    "format": fmt,
                    "text_field": text_field,
                    "id_field": id_field,
                    "convert": {"text_mode": text_mode},
                }
            ],
            "output": {"dataset": dataset},
        }
    )
    spec.base_dir = Path.cwd()
    guard(lambda: _run_spec(spec, engine))


def run(
    pipeline_file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="Pipeline TOML or YAML.")],
    engine: Annotated[str | None, typer.Option(help="Override the pipeline's engine: local, spark, ray.")] = None,
) -> None:
    """Run a pipeline file and commit its output as a new dataset version."""
    from pipelines.spec import PipelineSpec  # start-up: PyYAML

    guard(lambda: _run_spec(PipelineSpec.load(pipeline_file), engine))
