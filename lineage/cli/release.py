"""``lineage release publish/report/list/show/pin``: releases (NAME@TAG), their manifests and QC."""

from __future__ import annotations

import getpass
import tomllib
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from lineage.cli.app import console, guard, load_settings, open_catalog
from lineage.cli.render import print_counts, print_qc


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
    # start-up: publishing and the gate load SQLAlchemy, deltalake and DuckDB
    from lineage.releases import publish
    from lineage.releases.qc import GateConfig

    config = None
    if gate is not None:
        data = tomllib.loads(gate.read_text(encoding="utf-8"))
        config = guard(lambda: GateConfig.model_validate(data.get("gate", data)))
    release, created = guard(
        lambda: publish(
            open_catalog(),
            load_settings(),
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


def release_report(
    ref: Annotated[str, typer.Argument(help="NAME@TAG")],
    out: Annotated[Path, typer.Option("--out", help="HTML file to write.")],
) -> None:
    """Write the release's QC report as a self-contained HTML page with charts."""
    # start-up: SQLAlchemy; the QC module loads deltalake and DuckDB
    from lineage.catalog.queries import get_release
    from lineage.releases.qc import report_html

    with open_catalog().session() as s:
        release = guard(lambda: get_release(s, ref))
        html = report_html(release.ref, release.manifest["qc"], release.gate)
    out.write_text(html, encoding="utf-8")
    console.print(f"wrote {out}")


def release_list() -> None:
    """List releases."""
    # start-up: SQLAlchemy
    from sqlalchemy import select

    from lineage.catalog import Release

    table = Table(title="Releases")
    for col in ("release", "dataset", "version", "samples", "state", "published"):
        table.add_column(col)
    with open_catalog().session() as s:
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


def release_show(ref: Annotated[str, typer.Argument(help="NAME@TAG")]) -> None:
    """Show a release's manifest and quality summary."""
    # start-up: SQLAlchemy
    from lineage.catalog.queries import get_release, replicas_of
    from lineage.releases.usage import last_used

    with open_catalog().session() as s:
        release = guard(lambda: get_release(s, ref))
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
        for r in replicas_of(s, release):
            when = r.verified_at.strftime("%Y-%m-%d %H:%M") if r.verified_at else "-"
            console.print(
                f"replica on {r.tier}: {r.state}{' (primary)' if r.primary else ''}, {r.table_path}, verified {when}"
            )
        used = last_used(s, release)
        console.print(f"last used: {used:%Y-%m-%d %H:%M}" if used else "last used: never")
        print_counts(m["quality"])
        print_qc(m["qc"], release.gate)


def release_pin(
    ref: Annotated[str, typer.Argument(help="NAME@TAG")],
    until: Annotated[datetime, typer.Option(help="Keep the release hot until this time (ISO 8601, UTC).")],
    reason: Annotated[str, typer.Option(help="Why (e.g. the training job).")] = "",
) -> None:
    """Pin a release (hot placement) until a time; training jobs pin what they use."""
    from lineage.releases.placement import pin_release  # start-up: SQLAlchemy, deltalake, DuckDB

    guard(lambda: pin_release(open_catalog(), ref, until, reason=reason))
    console.print(f"pinned {ref} until {until.isoformat()}")
