"""The ``lineage`` command line."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from lineage.settings import Settings, get_settings

app = typer.Typer(no_args_is_help=True, help="Versioned LLM training data with sample-level lineage.")
release_app = typer.Typer(no_args_is_help=True, help="Publish, list and inspect releases (NAME@TAG).")
app.add_typer(release_app, name="release")
# Logs and CI output are not terminals: give tables room instead of rich's 80-column default.
console = Console(width=None if sys.stdout.isatty() else 140)
err = Console(stderr=True)


def _settings() -> Settings:
    return get_settings()


def _catalog():  # type: ignore[no-untyped-def]
    from lineage.catalog import Catalog

    return Catalog(_settings().catalog_url or "")


@app.callback()
def main_callback(verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log at INFO level.")] = False) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )


def _fail(message: str) -> None:
    err.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(1)


# -- running pipelines -------------------------------------------------------------------------
def _run_spec(spec: Any, engine: str | None) -> Any:
    from lineage.progress import run_progress
    from pipelines.runner import Runner

    runner = Runner(_settings())
    with run_progress(console) as progress:
        outcome = runner.run(spec, engine=engine, progress=progress)
    print_counts(outcome.counts)
    console.print(
        f"[green]committed[/] {outcome.dataset} v{outcome.version}: "
        f"{outcome.row_count:,} samples (run {outcome.run_id})"
    )
    return outcome


@app.command()
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
    from pipelines.spec import PipelineSpec

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
    _guard(lambda: _run_spec(spec, engine))


@app.command()
def run(
    pipeline_file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="Pipeline TOML or YAML.")],
    engine: Annotated[str | None, typer.Option(help="Override the pipeline's engine: local, spark, ray.")] = None,
) -> None:
    """Run a pipeline file and commit its output as a new dataset version."""
    from pipelines.spec import PipelineSpec

    _guard(lambda: _run_spec(PipelineSpec.load(pipeline_file), engine))


def _guard(action: Any) -> Any:
    """Turn expected user-facing errors into one clear line instead of a traceback."""
    from pydantic import ValidationError

    from lineage.releases import ReleaseError
    from pipelines.runner import RunError

    try:
        return action()
    except (ReleaseError, RunError, KeyError, FileNotFoundError, ValueError, ValidationError) as exc:
        _fail(str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc))


def print_counts(counts: dict[str, Any]) -> None:
    table = Table(title="Samples per step")
    for col in ("step", "operator", "in", "kept", "dropped", "modified"):
        table.add_column(col, justify="right" if col != "operator" else "left", no_wrap=True)
    table.add_column("reasons", overflow="fold", min_width=24)
    for st in counts.get("steps", []):
        reasons = "\n".join(f"{k}={v:,}" for k, v in sorted(st["reasons"].items()))
        table.add_row(
            str(st["step"]),
            st["operator"],
            f"{st['in']:,}",
            f"{st['kept']:,}",
            f"{st['dropped']:,}",
            f"{st['modified']:,}",
            reasons,
        )
    console.print(table)
    quarantine = counts.get("quarantine") or {}
    total = sum(quarantine.values())
    detail = ", ".join(f"{k}={v:,}" for k, v in sorted(quarantine.items()))
    console.print(f"quarantined records: {total:,}" + (f" ({detail})" if detail else ""))
    if counts.get("blank_lines"):
        console.print(f"blank lines skipped: {counts['blank_lines']:,}")


# -- releases ---------------------------------------------------------------------------------
@release_app.command("publish")
def release_publish(
    ref: Annotated[str, typer.Argument(help="NAME@TAG")],
    dataset: Annotated[str | None, typer.Option(help="Dataset to release (default: NAME).")] = None,
    version: Annotated[int | None, typer.Option(help="Dataset version (default: latest).")] = None,
) -> None:
    """Publish a dataset version as NAME@TAG (immutable; same content again is a no-op)."""
    from lineage.releases import publish

    release, created = _guard(lambda: publish(_catalog(), _settings(), ref, dataset=dataset, version=version))
    verb = "published" if created else "already published (same content), nothing to do:"
    console.print(
        f"[green]{verb}[/] {release.ref} -> {release.manifest['dataset']} "
        f"v{release.manifest['dataset_version']} ({release.manifest['row_count']:,} samples, "
        f"digest {release.content_digest[:12]})"
    )


@release_app.command("list")
def release_list() -> None:
    """List releases."""
    from sqlalchemy import select

    from lineage.catalog import Release

    table = Table(title="Releases")
    for col in ("release", "dataset", "version", "samples", "state", "published"):
        table.add_column(col)
    with _catalog().session() as s:
        for r in s.scalars(select(Release).order_by(Release.published_at)):
            m = r.manifest
            table.add_row(
                r.ref,
                m["dataset"],
                str(m["dataset_version"]),
                f"{m['row_count']:,}",
                r.state,
                r.published_at.strftime("%Y-%m-%d %H:%M"),
            )
    console.print(table)


@release_app.command("show")
def release_show(ref: Annotated[str, typer.Argument(help="NAME@TAG")]) -> None:
    """Show a release's manifest and quality summary."""
    from lineage.releases import get_release

    with _catalog().session() as s:
        release = _guard(lambda: get_release(s, ref))
        m = release.manifest
        console.print(f"[bold]{release.ref}[/] ({release.state}) digest {release.content_digest}")
        console.print(
            f"dataset {m['dataset']} v{m['dataset_version']} on tier {m['tier']}: "
            f"{m['row_count']:,} samples, {m['bytes']:,} bytes in {len(m['files'])} files"
        )
        files = Table(title="Files")
        for col in ("path", "rows", "bytes", "xxh3-128"):
            files.add_column(col)
        for f in m["files"]:
            files.add_row(f["path"], f"{f['rows']:,}", f"{f['size']:,}", f["xxh3_128"])
        console.print(files)
        print_counts(m["quality"])


# -- inspection -------------------------------------------------------------------------------
@app.command()
def sample(
    sample_id: Annotated[str, typer.Argument(help="The sample's id.")],
    dataset: Annotated[str | None, typer.Option(help="Only look in this dataset.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """The whole lineage of a sample: source file and row, every operator's verdict, duplicates."""
    from lineage.query import sample_lineage

    found = sample_lineage(_catalog(), _settings(), sample_id, dataset)
    if not found.found:
        _fail(f"sample {sample_id} is in no dataset version's lineage")
    if as_json:
        console.print_json(
            json.dumps(
                {"sample_id": sample_id, "source": found.source, "versions": [v.__dict__ for v in found.versions]},
                default=str,
            )
        )
        return
    print_sample_lineage(found)


def print_sample_lineage(found: Any) -> None:
    src = found.source or {}
    console.print(f"[bold]sample {found.sample_id}[/]")
    console.print(
        f"  source: {src.get('uri')} (dataset {src.get('dataset')}, path {src.get('path')}, "
        f"row {src.get('row')}, byte offset {src.get('offset')})"
    )
    for v in found.versions:
        state = "[green]in output[/]" if v.in_output else "[red]not in output[/]"
        console.print(f"  {v.dataset} v{v.version} (run {v.run_id[:8]}): {state}")
        for rec in v.records:
            line = f"    step {rec['step']} {rec['operator']}@{rec['operator_version']}: {rec['verdict']}"
            if rec["reason"]:
                line += f" ({rec['reason']})"
            dup = (rec["detail"] or {}).get("duplicate")
            if dup:
                line += (
                    f" duplicate of {dup['kept_id']} [{dup['method']}, cluster {dup['cluster_id'][:12]}, "
                    f"size {dup['cluster_size']}, jaccard {dup['jaccard']:.3f}]"
                )
            console.print(escape(line))
            for rule in (rec["detail"] or {}).get("rules") or []:
                if not rule["passed"]:
                    console.print(
                        f"      rule {rule['rule_set']}:{rule['rule']} value {rule['value']:.4g} "
                        f"{rule['comparison']} {rule['threshold']:.4g} failed"
                    )


@app.command()
def export(
    ref: Annotated[str, typer.Argument(help="NAME@TAG")],
    out: Annotated[Path, typer.Option("--out", help="Output folder.")],
    fmt: Annotated[str, typer.Option("--format", help="jsonl or parquet.")] = "jsonl",
) -> None:
    """Export a release's samples as JSONL or Parquet."""
    from rich.progress import Progress

    from lineage.export import export_release

    with Progress(console=console, disable=not console.is_terminal) as progress:
        task = progress.add_task(f"export {ref}", total=None)
        path, rows = _guard(
            lambda: export_release(_catalog(), _settings(), ref, out, fmt, lambda n: progress.advance(task, n))
        )
    console.print(f"wrote {rows:,} samples to {path}")


@app.command()
def gc(dry_run: Annotated[bool, typer.Option(help="Only list what would be deleted.")] = False) -> None:
    """Delete files of runs that never committed. Never touches what a dataset version needs."""
    from lineage.gc import collect_garbage

    report = collect_garbage(_catalog(), _settings(), dry_run=dry_run)
    verb = "would delete" if dry_run else "deleted"
    console.print(
        f"abandoned runs marked failed: {len(report.abandoned_runs)}; {verb} "
        f"{len(report.deleted_files)} files; kept {report.kept_files} committed files"
    )


@app.command()
def datasets() -> None:
    """List datasets and their versions."""
    from sqlalchemy import select

    from lineage.catalog import Dataset

    table = Table(title="Datasets")
    for col in ("dataset", "version", "samples", "quarantined", "run", "created"):
        table.add_column(col)
    with _catalog().session() as s:
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


@app.command()
def demo(
    data_dir: Annotated[Path | None, typer.Option(help="Folder with debian_en/zh.jsonl.gz.")] = None,
) -> None:
    """Run the whole path on the bundled Debian corpus and show lineage of two samples."""
    from lineage.demo import run_demo

    run_demo(console, _settings(), data_dir)


import lineage.cli_service  # noqa: E402,F401  (registers `serve` and `token`)


def main() -> None:
    app()
