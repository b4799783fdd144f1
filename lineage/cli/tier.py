"""``lineage tier copy/move/verify/plan/apply``: release replicas across storage tiers, and the moves the
placement rules want (the service's ``copy_release``, ``move_release``, ``verify_release``,
``plan_placement``; ``tier apply`` makes the planned moves one by one, each with its bar)."""

from __future__ import annotations

import getpass
from typing import TYPE_CHECKING, Annotated

import typer

from lineage.cli.app import AsJson, console, err, fail, guard, open_service, print_list_json
from lineage.cli.progress import transfer_progress
from lineage.errors import Corrupt, NotFound

if TYPE_CHECKING:
    from rich.progress import TaskID

    from lineage.service.core import Service
    from lineage.service.schemas import PlannedMove, ReplicaResult

ENGINE_HELP = "local (threads in this process), spark or ray (a copy job on the configured cluster)."


def _release_bytes(service: Service, ref: str) -> int | None:
    """The bar's total: the bytes of the release's files. None for a release the service does not find:
    the copy then refuses it, after its own checks (the engine's extra first)."""
    try:
        return service.get_manifest(ref).bytes
    except NotFound:
        return None


def _replica_command(
    service: Service,
    action: str,
    ref: str,
    to: str,
    workers: int,
    bandwidth_mb: float | None,
    engine: str = "local",
    override: str | None = None,
) -> None:
    """A copy, move or verify through the service, with a bar of the bytes copied."""
    options = {"workers": workers, "bytes_per_s": bandwidth_mb * 1e6 if bandwidth_mb else None, "engine": engine}
    total = guard(lambda: _release_bytes(service, ref)) if action != "verify" else None
    with transfer_progress(console) as progress:
        where = "" if engine == "local" else f" on {engine}"
        task = progress.add_task(f"{action} {ref} → {to}{where}", total=total)
        advance = lambda n: progress.advance(task, n)  # noqa: E731
        if action == "copy":
            who = {"override_reason": override, "actor": getpass.getuser()}
            out = guard(lambda: service.copy_release(ref, to, on_bytes=advance, **options, **who))
        elif action == "move":
            out = guard(lambda: service.move_release(ref, to, on_bytes=advance, **options))
        else:
            out = guard(lambda: service.verify_release(ref, to))
        if action != "verify":  # files verified by an earlier copy were skipped: the bar ends at what was copied
            progress.update(task, total=out.bytes_copied)
    if action == "verify":
        if out.problems:
            for path, problem in sorted(out.problems.items()):
                err.print(f"[red]{path}[/]: {problem}")
            fail(Corrupt(f"replica of {ref} on {to} is corrupt ({len(out.problems)} files)"))
        console.print(f"replica of {ref} on {to} ({out.table_path}): every file read back and verified")
        return
    _print_copied(out)


def _print_copied(out: ReplicaResult) -> None:
    console.print(
        f"{out.release} on {out.tier}: {out.state}; copied {out.copied} files ({out.bytes_copied:,} bytes), "
        f"{out.skipped} already verified"
        + (f"; removed {out.deleted_files} files from {out.removed_from}" if out.removed_from else "")
    )


def tier_copy(
    ref: Annotated[str, typer.Argument(help="NAME@TAG")],
    to: Annotated[str, typer.Option("--to", help="Destination tier.")],
    workers: Annotated[int, typer.Option(help="Files copied in parallel (with --engine: per task).")] = 4,
    bandwidth: Annotated[float | None, typer.Option(help="Bandwidth limit in MB/s (for the whole job).")] = None,
    engine: Annotated[str, typer.Option(help=ENGINE_HELP)] = "local",
    override: Annotated[
        str | None, typer.Option(help="A withdrawn release: serve it anyway, for this reason (it is recorded).")
    ] = None,
) -> None:
    """Copy a release to a tier; each file is read back and checked. Resumes after a crash."""
    with open_service() as service:
        _replica_command(service, "copy", ref, to, workers, bandwidth, engine, override)


def tier_move(
    ref: Annotated[str, typer.Argument(help="NAME@TAG")],
    to: Annotated[str, typer.Option("--to", help="Destination tier.")],
    workers: Annotated[int, typer.Option(help="Files copied in parallel (with --engine: per task).")] = 4,
    bandwidth: Annotated[float | None, typer.Option(help="Bandwidth limit in MB/s (for the whole job).")] = None,
    engine: Annotated[str, typer.Option(help=ENGINE_HELP)] = "local",
) -> None:
    """Copy, verify, then remove the source files no other published release needs."""
    with open_service() as service:
        _replica_command(service, "move", ref, to, workers, bandwidth, engine)


def tier_verify(
    ref: Annotated[str, typer.Argument(help="NAME@TAG")],
    to: Annotated[str, typer.Option("--to", help="The tier whose replica to check.")],
) -> None:
    """Read a replica's files back and check sizes and checksums against the manifest."""
    with open_service() as service:
        _replica_command(service, "verify", ref, to, 4, None)


def _print_move(move: PlannedMove) -> None:
    console.print(f"move {move.release}: {move.from_tier} → {move.to_tier} ({move.reason})")


def tier_plan(as_json: AsJson = False) -> None:
    """Show the moves the placement rules want (pinned stay hot, idle or deprecated go cold)."""
    with open_service() as service:
        plan = guard(service.plan_placement, as_json=as_json)
    if as_json:
        print_list_json(plan)
        return
    if not plan:
        console.print("nothing to move")
    for move in plan:
        _print_move(move)


def tier_apply(
    workers: Annotated[int, typer.Option(help="Files copied in parallel (with --engine: per task).")] = 4,
    engine: Annotated[str, typer.Option(help=ENGINE_HELP)] = "local",
) -> None:
    """Carry out `lineage tier plan`: the moves one after another, each with its bar."""
    with open_service() as service, transfer_progress(console) as progress:
        tasks: list[TaskID] = []

        def on_move(move: PlannedMove) -> None:
            _print_move(move)
            total = _release_bytes(service, move.release)
            tasks.append(progress.add_task(f"move {move.release} → {move.to_tier}", total=total))

        applied = guard(
            lambda: service.apply_placement(
                workers=workers, engine=engine, on_move=on_move, on_bytes=lambda n: progress.advance(tasks[-1], n)
            )
        )
        for task, done in zip(tasks, applied, strict=True):  # skipped files: each bar ends at what was copied
            progress.update(task, total=done.result.bytes_copied)
    if not applied:
        console.print("nothing to move")
    for done in applied:
        _print_copied(done.result)
