"""The ``lineage`` command line."""

from __future__ import annotations

import getpass
import logging
import sys
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from lineage.settings import Settings, get_settings

app = typer.Typer(
    no_args_is_help=True,
    help="Versioned LLM training data with sample-level lineage.",
    pretty_exceptions_enable=False,  # an unexpected error prints a plain traceback, not pages of locals
)
release_app = typer.Typer(no_args_is_help=True, help="Publish, list and inspect releases (NAME@TAG).")
tier_app = typer.Typer(no_args_is_help=True, help="Copy, move and verify releases across storage tiers.")
app.add_typer(release_app, name="release")
app.add_typer(tier_app, name="tier")
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
    err.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)  # one line, for logs and grep
    raise typer.Exit(1)


# -- running pipelines -------------------------------------------------------------------------
def _run_spec(spec: Any, engine: str | None) -> Any:
    from lineage.cli.progress import run_progress
    from lineage.runs import Runner

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
    """Turn expected user-facing errors into one clear line instead of a traceback: the errors tree
    (classified by :func:`lineage.errors.translate`, as the API and the SDK do), plus the CLI-only
    errors not yet in the tree. Anything else is a bug and prints its traceback."""
    from lineage.errors import translate
    from lineage.releases.replicas import ReplicaError
    from pipelines.integrity import RunError
    from storage.transfer import TransferError

    try:
        return action()
    except Exception as exc:
        error = translate(exc, builtins=True)
        if error is None and not isinstance(exc, ReplicaError | TransferError | RunError | FileNotFoundError):
            raise
        _fail(str(exc if error is None else error))


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
    gate: Annotated[
        Path | None, typer.Option(help="Release config (TOML) whose [gate] table lists publish conditions.")
    ] = None,
    override: Annotated[str | None, typer.Option(help="Publish despite failed gate conditions; the reason.")] = None,
) -> None:
    """Publish a dataset version as NAME@TAG (immutable; same content again is a no-op)."""
    from lineage.releases import publish
    from lineage.releases.qc import GateConfig

    config = None
    if gate is not None:
        import tomllib

        data = tomllib.loads(gate.read_text(encoding="utf-8"))
        config = _guard(lambda: GateConfig.model_validate(data.get("gate", data)))
    release, created = _guard(
        lambda: publish(
            _catalog(),
            _settings(),
            ref,
            dataset=dataset,
            version=version,
            gate=config,
            override_reason=override,
            created_by=getpass.getuser(),
        )
    )
    verb = "published" if created else "already published (same content), nothing to do:"
    console.print(
        f"[green]{verb}[/] {release.ref} -> {release.manifest['dataset']} "
        f"v{release.manifest['dataset_version']} ({release.manifest['row_count']:,} samples, "
        f"digest {release.content_digest[:12]})"
    )
    if created and release.gate and release.gate.get("override"):
        console.print(f"[yellow]gate overridden[/]: {release.gate['override']['reason']}")


@release_app.command("report")
def release_report(
    ref: Annotated[str, typer.Argument(help="NAME@TAG")],
    out: Annotated[Path, typer.Option("--out", help="HTML file to write.")],
) -> None:
    """Write the release's QC report as a self-contained HTML page with charts."""
    from lineage.catalog.queries import get_release
    from lineage.releases.qc import report_html

    with _catalog().session() as s:
        release = _guard(lambda: get_release(s, ref))
        html = report_html(release.ref, release.manifest["qc"], release.gate)
    out.write_text(html, encoding="utf-8")
    console.print(f"wrote {out}")


def print_qc(qc: dict[str, Any], gate: dict[str, Any] | None) -> None:
    rules = Table(title="Quality rules")
    for col in ("operator", "rule", "dropped", "modified", "failed"):
        rules.add_column(col, justify="left" if col in ("operator", "rule") else "right")
    for r in qc["rules"]:
        rules.add_row(r["operator"], r["rule"], f"{r['dropped']:,}", f"{r['modified']:,}", f"{r['failed']:,}")
    console.print(rules)
    sources = Table(title="Drop rate per source")
    for col in ("source", "kept", "dropped", "drop rate"):
        sources.add_column(col, justify="left" if col == "source" else "right")
    for src in qc["sources"]:
        sources.add_row(src["source"], f"{src['kept']:,}", f"{src['dropped']:,}", f"{100 * src['drop_rate']:.2f}%")
    console.print(sources)
    lengths = ", ".join(
        f"{b['from']}{'+' if b['to'] is None else '-' + str(b['to'])}: {b['count']:,}"
        for b in qc["length_histogram"]
        if b["count"]
    )
    console.print(f"length (chars): {lengths}")
    console.print("scripts: " + ", ".join(f"{k} {100 * v:.1f}%" for k, v in qc["scripts"].items()))
    console.print(
        f"exact-duplicate rate: {100 * qc['exact_duplicate_rate']:.3f}%; rule sets: "
        f"{', '.join(qc['rule_sets']) or 'none'}"
    )
    if gate:
        for g in gate["results"]:
            mark = "[green]pass[/]" if g["passed"] else "[red]FAIL[/]"
            console.print(f"gate {escape(g['condition'])}: {g['measured']} (limit {g['limit']}) {mark}")
        if gate.get("override"):
            o = gate["override"]
            console.print(f"gate overridden by {o['by']} at {o['at']}: {o['reason']}")


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
    from lineage.catalog.queries import get_release

    with _catalog().session() as s:
        release = _guard(lambda: get_release(s, ref))
        m = release.manifest
        console.print(f"[bold]{release.ref}[/] ({release.state}) digest {release.content_digest}")
        console.print(
            f"dataset {m['dataset']} v{m['dataset_version']} on tier {m['tier']}: "
            f"{m['row_count']:,} samples, {m['bytes']:,} bytes in {len(m['files'])} files"
        )
        for kind, (path, version) in release.dataset_version.pinned_tables.items():
            console.print(f"{kind} table {path} at Delta version {version}")
        files = Table(title="Files")
        for col in ("path", "rows", "bytes", "xxh3-128"):
            files.add_column(col)
        for f in m["files"]:
            files.add_row(f["path"], f"{f['rows']:,}", f"{f['size']:,}", f["xxh3_128"])
        console.print(files)
        from lineage.catalog.queries import replicas_of
        from lineage.releases.usage import last_used

        for r in replicas_of(s, release):
            when = r.verified_at.strftime("%Y-%m-%d %H:%M") if r.verified_at else "-"
            console.print(
                f"replica on {r.tier}: {r.state}{' (primary)' if r.primary else ''}, {r.table_path}, verified {when}"
            )
        used = last_used(s, release)
        console.print(f"last used: {used:%Y-%m-%d %H:%M}" if used else "last used: never")
        print_counts(m["quality"])
        print_qc(m["qc"], release.gate)


@release_app.command("pin")
def release_pin(
    ref: Annotated[str, typer.Argument(help="NAME@TAG")],
    until: Annotated[datetime, typer.Option(help="Keep the release hot until this time (ISO 8601, UTC).")],
    reason: Annotated[str, typer.Option(help="Why (e.g. the training job).")] = "",
) -> None:
    """Pin a release (hot placement) until a time; training jobs pin what they use."""
    from lineage.releases.placement import pin_release

    _guard(lambda: pin_release(_catalog(), ref, until, reason=reason))
    console.print(f"pinned {ref} until {until.isoformat()}")


# -- tiers ------------------------------------------------------------------------------------
def _transfer_progress(ref: str, total: int | None = None) -> Any:
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    return Progress(
        "{task.description}",
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        console=console,
        disable=not console.is_terminal,
    )


def _replica_command(
    action: str, ref: str, to: str, workers: int, bandwidth_mb: float | None, engine: str = "local"
) -> None:
    from lineage.releases import replicas

    catalog, settings = _catalog(), _settings()
    limit = bandwidth_mb * 1e6 if bandwidth_mb else None
    with _transfer_progress(ref) as progress:
        where = "" if engine == "local" else f" on {engine}"
        task = progress.add_task(f"{action} {ref} → {to}{where}", total=None)
        advance = lambda n: progress.advance(task, n)  # noqa: E731
        kwargs = {"workers": workers, "bytes_per_s": limit, "on_bytes": advance, "engine": engine}
        if action == "copy":
            out = _guard(lambda: replicas.copy_release(catalog, settings, ref, to, **kwargs))
        elif action == "move":
            out = _guard(lambda: replicas.move_release(catalog, settings, ref, to, **kwargs))
        else:
            out = _guard(lambda: replicas.verify_release(catalog, settings, ref, to))
    if action == "verify":
        if out.problems:
            for path, problem in sorted(out.problems.items()):
                err.print(f"[red]{path}[/]: {problem}")
            _fail(f"replica of {ref} on {to} is corrupt ({len(out.problems)} files)")
        console.print(f"replica of {ref} on {to} ({out.table_path}): every file read back and verified")
        return
    console.print(
        f"{ref} on {to}: {out.state}; copied {out.copied} files ({out.bytes_copied:,} bytes), "
        f"{out.skipped} already verified"
        + (f"; removed {out.deleted_files} files from {out.removed_from}" if out.removed_from else "")
    )


@tier_app.command("copy")
def tier_copy(
    ref: Annotated[str, typer.Argument(help="NAME@TAG")],
    to: Annotated[str, typer.Option("--to", help="Destination tier.")],
    workers: Annotated[int, typer.Option(help="Files copied in parallel (with --engine: per task).")] = 4,
    bandwidth: Annotated[float | None, typer.Option(help="Bandwidth limit in MB/s (for the whole job).")] = None,
    engine: Annotated[
        str, typer.Option(help="local (threads in this process), spark or ray (a copy job on the configured cluster).")
    ] = "local",
) -> None:
    """Copy a release to a tier; each file is read back and checked. Resumes after a crash."""
    _replica_command("copy", ref, to, workers, bandwidth, engine)


@tier_app.command("move")
def tier_move(
    ref: Annotated[str, typer.Argument(help="NAME@TAG")],
    to: Annotated[str, typer.Option("--to", help="Destination tier.")],
    workers: Annotated[int, typer.Option(help="Files copied in parallel (with --engine: per task).")] = 4,
    bandwidth: Annotated[float | None, typer.Option(help="Bandwidth limit in MB/s (for the whole job).")] = None,
    engine: Annotated[
        str, typer.Option(help="local (threads in this process), spark or ray (a copy job on the configured cluster).")
    ] = "local",
) -> None:
    """Copy, verify, then remove the source files no other published release needs."""
    _replica_command("move", ref, to, workers, bandwidth, engine)


@tier_app.command("verify")
def tier_verify(
    ref: Annotated[str, typer.Argument(help="NAME@TAG")],
    to: Annotated[str, typer.Option("--to", help="The tier whose replica to check.")],
) -> None:
    """Read a replica's files back and check sizes and checksums against the manifest."""
    _replica_command("verify", ref, to, 4, None)


@tier_app.command("plan")
def tier_plan() -> None:
    """Show the moves the placement rules want (pinned stay hot, idle or deprecated go cold)."""
    from lineage.releases.placement import plan_moves

    plan = plan_moves(_catalog(), _settings())
    if not plan:
        console.print("nothing to move")
    for move in plan:
        console.print(f"move {move.release}: {move.from_tier} → {move.to_tier} ({move.reason})")


@tier_app.command("apply")
def tier_apply(
    workers: Annotated[int, typer.Option(help="Files copied in parallel (with --engine: per task).")] = 4,
    engine: Annotated[
        str, typer.Option(help="local (threads in this process), spark or ray (a copy job on the configured cluster).")
    ] = "local",
) -> None:
    """Carry out `lineage tier plan`."""
    from lineage.releases.placement import plan_moves

    for move in plan_moves(_catalog(), _settings()):
        console.print(f"move {move.release}: {move.from_tier} → {move.to_tier} ({move.reason})")
        _replica_command("move", move.release, move.to_tier, workers, None, engine)


# -- inspection -------------------------------------------------------------------------------
@app.command()
def sample(
    sample_id: Annotated[str, typer.Argument(help="The sample's id.")],
    dataset: Annotated[str | None, typer.Option(help="Only look in this dataset.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """The whole lineage of a sample: source file and row, every operator's verdict, duplicates."""
    from lineage.client import Client

    found = _guard(lambda: Client(settings=_settings()).sample_lineage(sample_id, dataset=dataset))
    if not found.found:
        _fail(f"sample {sample_id} is in no dataset version's lineage")
    if as_json:
        console.print_json(found.model_dump_json())
        return
    print_sample_lineage(found)


def print_sample_lineage(found: Any) -> None:
    """Render a ``SampleLineage`` (the service's model, the same one the HTTP API returns)."""
    src = found.source
    console.print(f"[bold]sample {found.sample_id}[/]")
    if src is not None:
        console.print(
            escape(
                f"  source: {src.uri} (dataset {src.dataset}, path {src.path}, row {src.row}, byte offset {src.offset})"
            )
        )
    for v in found.versions:
        state = "[green]in output[/]" if v.in_output else "[red]not in output[/]"
        releases = f"; this version is released as {', '.join(v.releases)}" if v.releases else ""
        console.print(f"  {v.dataset} v{v.version} (run {v.run_id[:8]}): {state}{escape(releases)}")
        for rec in v.records:
            line = f"    step {rec.step} {rec.operator}@{rec.operator_version}: {rec.verdict}"
            if rec.reason:
                line += f" ({rec.reason})"
            dup = (rec.detail or {}).get("duplicate")
            if dup and rec.verdict == "dropped":
                line += (
                    f" duplicate of {dup['kept_id']} [{dup['method']}, cluster {(dup['cluster_id'] or '')[:12]}, "
                    f"size {dup['cluster_size']}, jaccard {dup['jaccard']:.3f}]"
                )
            console.print(escape(line))
            for rule in (rec.detail or {}).get("rules") or []:
                if not rule["passed"]:
                    console.print(
                        escape(
                            f"      rule {rule['rule_set']}:{rule['rule']} value {rule['value']:.4g} "
                            f"{rule['comparison']} {rule['threshold']:.4g} failed"
                        )
                    )


@app.command()
def export(
    ref: Annotated[str, typer.Argument(help="NAME@TAG")],
    out: Annotated[Path, typer.Option("--out", help="Output folder.")],
    fmt: Annotated[str, typer.Option("--format", help="jsonl or parquet.")] = "jsonl",
) -> None:
    """Export a release's samples as JSONL or Parquet."""
    from rich.progress import Progress

    from lineage.releases.export import export_release

    with Progress(console=console, disable=not console.is_terminal) as progress:
        task = progress.add_task(f"export {ref}", total=None)
        path, rows = _guard(
            lambda: export_release(_catalog(), _settings(), ref, out, fmt, lambda n: progress.advance(task, n))
        )
    console.print(f"wrote {rows:,} samples to {path}")


@app.command()
def dedupe(
    inputs: Annotated[list[Path], typer.Argument(help="JSONL (plain or .gz) or Parquet files.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Output file (one input) or folder.")],
    threshold: Annotated[float, typer.Option(help="Jaccard similarity that counts as a duplicate.")] = 0.8,
    num_perm: Annotated[int, typer.Option(help="MinHash permutations.")] = 128,
    ngram: Annotated[int, typer.Option(help="Shingle size: words, or characters for CJK text.")] = 5,
    script: Annotated[
        str,
        typer.Option(help="auto (characters for a text with any CJK character, else words), latin (words) or cjk."),
    ] = "auto",
    bands: Annotated[int | None, typer.Option(help="LSH bands (with --rows; default: from the threshold).")] = None,
    rows: Annotated[int | None, typer.Option(help="Signature rows per LSH band (with --bands).")] = None,
    verify: Annotated[str, typer.Option(help="Check candidates: exact (shingle sets), estimate or none.")] = "exact",
    engine: Annotated[str, typer.Option(help="local, spark or ray.")] = "local",
    text_field: Annotated[str, typer.Option(help="Field holding the text.")] = "text",
    id_field: Annotated[str | None, typer.Option(help="Field whose values name records in the report.")] = None,
) -> None:
    """Remove near-duplicates from files: kept records in the input's format, plus a report."""
    from lineage.cli.dedupe_files import dedupe_files

    summary = _guard(
        lambda: dedupe_files(
            inputs,
            output,
            settings=_settings(),
            threshold=threshold,
            num_perm=num_perm,
            ngram=ngram,
            script=script,
            bands=bands,
            rows=rows,
            verify=verify,
            engine=engine,
            text_field=text_field,
            id_field=id_field,
        )
    )
    console.print(f"settings: {summary.settings()}", highlight=False, soft_wrap=True)
    console.print(
        f"{summary.records:,} records in {summary.inputs} file(s): kept {summary.kept:,}, dropped "
        f"{summary.dropped:,} near-duplicates, quarantined {summary.quarantined:,}"
    )
    for path in summary.outputs:
        console.print(f"wrote {path}")
    console.print(f"duplicates report: {summary.report}")


@app.command()
def gc(dry_run: Annotated[bool, typer.Option(help="Only list what would be deleted.")] = False) -> None:
    """Delete files of runs that never committed: the supported way to reclaim space (not Delta's
    VACUUM, which these tables' retention keeps from deleting anything). Never touches what a
    dataset version needs; gives any table that lacks them its retention properties back."""
    from lineage.gc import collect_garbage

    report = collect_garbage(_catalog(), _settings(), dry_run=dry_run)
    verb = "would delete" if dry_run else "deleted"
    console.print(
        f"abandoned runs marked failed: {len(report.abandoned_runs)}; {verb} "
        f"{len(report.deleted_files)} files; kept {report.kept_files} committed files"
    )
    for table in report.retention_set:
        console.print(f"{'would set' if dry_run else 'set'} retention properties on {table}")


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
    from lineage.cli.demo import run_demo

    run_demo(console, _settings(), data_dir)


import lineage.cli.serve  # noqa: E402,F401  (registers `serve` and `token`)


def main() -> None:
    app()
