"""``lineage tier copy/move/verify/plan/apply``: release replicas across storage tiers, and the moves the
placement rules want."""

from __future__ import annotations

from typing import Annotated

import typer

from lineage.cli.app import console, err, fail, guard, load_settings, open_catalog, open_service
from lineage.cli.progress import transfer_progress
from lineage.errors import Corrupt, NotFound

ENGINE_HELP = "local (threads in this process), spark or ray (a copy job on the configured cluster)."


def _release_bytes(ref: str) -> int | None:
    """The bar's total: the bytes of the release's files. None for a release the service does not find:
    the copy then refuses it, after its own checks (the engine's extra first)."""
    with open_service() as service:
        try:
            return service.get_manifest(ref).bytes
        except NotFound:
            return None


def _replica_command(
    action: str, ref: str, to: str, workers: int, bandwidth_mb: float | None, engine: str = "local"
) -> None:
    from lineage.releases import replicas  # start-up: SQLAlchemy, deltalake, DuckDB

    catalog, settings = open_catalog(), load_settings()
    limit = bandwidth_mb * 1e6 if bandwidth_mb else None
    total = guard(lambda: _release_bytes(ref)) if action != "verify" else None
    with transfer_progress(console) as progress:
        where = "" if engine == "local" else f" on {engine}"
        task = progress.add_task(f"{action} {ref} → {to}{where}", total=total)
        advance = lambda n: progress.advance(task, n)  # noqa: E731
        kwargs = {"workers": workers, "bytes_per_s": limit, "on_bytes": advance, "engine": engine}
        if action == "copy":
            out = guard(lambda: replicas.copy_release(catalog, settings, ref, to, **kwargs))
        elif action == "move":
            out = guard(lambda: replicas.move_release(catalog, settings, ref, to, **kwargs))
        else:
            out = guard(lambda: replicas.verify_release(catalog, settings, ref, to))
        if action != "verify":  # files verified by an earlier copy were skipped: the bar ends at what was copied
            progress.update(task, total=out.bytes_copied)
    if action == "verify":
        if out.problems:
            for path, problem in sorted(out.problems.items()):
                err.print(f"[red]{path}[/]: {problem}")
            fail(Corrupt(f"replica of {ref} on {to} is corrupt ({len(out.problems)} files)"))
        console.print(f"replica of {ref} on {to} ({out.table_path}): every file read back and verified")
        return
    console.print(
        f"{ref} on {to}: {out.state}; copied {out.copied} files ({out.bytes_copied:,} bytes), "
        f"{out.skipped} already verified"
        + (f"; removed {out.deleted_files} files from {out.removed_from}" if out.removed_from else "")
    )


def tier_copy(
    ref: Annotated[str, typer.Argument(help="NAME@TAG")],
    to: Annotated[str, typer.Option("--to", help="Destination tier.")],
    workers: Annotated[int, typer.Option(help="Files copied in parallel (with --engine: per task).")] = 4,
    bandwidth: Annotated[float | None, typer.Option(help="Bandwidth limit in MB/s (for the whole job).")] = None,
    engine: Annotated[str, typer.Option(help=ENGINE_HELP)] = "local",
) -> None:
    """Copy a release to a tier; each file is read back and checked. Resumes after a crash."""
    _replica_command("copy", ref, to, workers, bandwidth, engine)


def tier_move(
    ref: Annotated[str, typer.Argument(help="NAME@TAG")],
    to: Annotated[str, typer.Option("--to", help="Destination tier.")],
    workers: Annotated[int, typer.Option(help="Files copied in parallel (with --engine: per task).")] = 4,
    bandwidth: Annotated[float | None, typer.Option(help="Bandwidth limit in MB/s (for the whole job).")] = None,
    engine: Annotated[str, typer.Option(help=ENGINE_HELP)] = "local",
) -> None:
    """Copy, verify, then remove the source files no other published release needs."""
    _replica_command("move", ref, to, workers, bandwidth, engine)


def tier_verify(
    ref: Annotated[str, typer.Argument(help="NAME@TAG")],
    to: Annotated[str, typer.Option("--to", help="The tier whose replica to check.")],
) -> None:
    """Read a replica's files back and check sizes and checksums against the manifest."""
    _replica_command("verify", ref, to, 4, None)


def tier_plan() -> None:
    """Show the moves the placement rules want (pinned stay hot, idle or deprecated go cold)."""
    from lineage.releases.placement import plan_moves  # start-up: SQLAlchemy, deltalake, DuckDB

    plan = plan_moves(open_catalog(), load_settings())
    if not plan:
        console.print("nothing to move")
    for move in plan:
        console.print(f"move {move.release}: {move.from_tier} → {move.to_tier} ({move.reason})")


def tier_apply(
    workers: Annotated[int, typer.Option(help="Files copied in parallel (with --engine: per task).")] = 4,
    engine: Annotated[str, typer.Option(help=ENGINE_HELP)] = "local",
) -> None:
    """Carry out `lineage tier plan`."""
    from lineage.releases.placement import plan_moves  # start-up: SQLAlchemy, deltalake, DuckDB

    for move in plan_moves(open_catalog(), load_settings()):
        console.print(f"move {move.release}: {move.from_tier} → {move.to_tier} ({move.reason})")
        _replica_command("move", move.release, move.to_tier, workers, None, engine)
