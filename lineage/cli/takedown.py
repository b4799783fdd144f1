"""``lineage takedown request/list/show/plan/apply``: takedown requests (opt-out, copyright, privacy), and the plan
of one: which live releases hold what it names, in which files and on which tiers, who trained on them, and
what was built from them (the service's ``create_takedown``, ``list_takedowns``, ``get_takedown``,
``plan_takedown``). Planning changes nothing."""

from __future__ import annotations

import getpass
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from lineage.cli.app import AsJson, console, every, guard, open_service, print_json
from lineage.errors import MissingFile

if TYPE_CHECKING:
    from lineage.service.schemas import TakedownPurged


def _lines(path: Path) -> list[str]:
    """Non-empty lines of ``path`` (``-``: standard input)."""
    if str(path) != "-" and not path.is_file():
        raise MissingFile(f"no such file: {path}")
    text = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip()]


def _selector(
    source: str | None,
    path: str | None,
    uri: str | None,
    sample_ids: Path | None,
    hashes: Path | None,
    where: str | None,
    op: str,
    value: list[str] | None,
) -> dict[str, Any]:
    """The options as the request's selector; the service checks that exactly one form is given."""
    selector: dict[str, Any] = {}
    if source is not None or path is not None or uri is not None:
        selector["source"] = {k: v for k, v in {"dataset": source, "path": path, "uri": uri}.items() if v is not None}
    if sample_ids is not None:
        selector["sample_ids"] = _lines(sample_ids)
    if hashes is not None:
        selector["content_hashes"] = _lines(hashes)
    if where is not None or value:
        values = value or []
        selector["where"] = {"field": where, "op": op, "value": values if op == "in" else (values or [None])[0]}
    return selector


def takedown_request(
    kind: Annotated[str, typer.Option(help="copyright, privacy, opt_out, quality or other.")],
    reason: Annotated[str, typer.Option(help="Why, as the requester put it.")],
    source: Annotated[str | None, typer.Option(help="Every sample read from this source dataset...")] = None,
    path: Annotated[
        str | None, typer.Option(help="... whose source path matches this glob (** crosses folders)")
    ] = None,
    uri: Annotated[str | None, typer.Option(help="... or read from this file URI (a trailing /: a folder).")] = None,
    sample_ids: Annotated[Path | None, typer.Option(help="A file of sample ids, one per line (- reads stdin).")] = None,
    hashes: Annotated[Path | None, typer.Option(help="A file of content hashes, one per line.")] = None,
    where: Annotated[str | None, typer.Option(help="A kept field: meta.KEY, source_uri, source_path ...")] = None,
    op: Annotated[str, typer.Option(help="How --where compares: eq, in, glob or regex.")] = "eq",
    value: Annotated[list[str] | None, typer.Option(help="The value for --where (repeat for --op in).")] = None,
    as_json: AsJson = False,
) -> None:
    """Record a takedown request (nothing is removed): exactly one of --source, --sample-ids, --hashes, --where."""
    selector = guard(lambda: _selector(source, path, uri, sample_ids, hashes, where, op, value), as_json=as_json)
    body = {"selector": selector, "kind": kind, "reason": reason}
    with open_service() as service:
        created = guard(lambda: service.create_takedown(body, actor=getpass.getuser()), as_json=as_json)
    if as_json:
        print_json(created)
        return
    console.print(f"takedown request {created.id} recorded ({created.kind}); see: lineage takedown plan {created.id}")


def takedown_list(
    state: Annotated[str | None, typer.Option(help="planned, applied or purged: only those.")] = None,
    as_json: AsJson = False,
) -> None:
    """List takedown requests, newest first."""
    with open_service() as service:
        page = every(service.list_takedowns, state=state)
    if as_json:
        print_json(page)
        return
    table = Table(title="Takedown requests")
    for col in ("id", "kind", "state", "what", "by", "when", "reason"):
        table.add_column(col, overflow="fold")
    for r in page.items:
        what = r.selector.model_dump_json(exclude_none=True)
        table.add_row(
            str(r.id),
            r.kind,
            r.state,
            escape(what[:120]),
            escape(r.requested_by),
            f"{r.created_at:%Y-%m-%d %H:%M}",
            escape(r.reason[:200]),
        )
    console.print(table)


def takedown_show(
    request_id: Annotated[int, typer.Argument(help="The request's id.")], as_json: AsJson = False
) -> None:
    """Show one takedown request."""
    with open_service() as service:
        found = guard(lambda: service.get_takedown(request_id), as_json=as_json)
    if as_json:
        print_json(found)
        return
    console.print(f"[bold]takedown request {found.id}[/] ({found.kind}, {found.state})")
    console.print(escape(f"what: {found.selector.model_dump_json(exclude_none=True)}"))
    console.print(escape(f"asked by {found.requested_by} at {found.created_at.isoformat()}: {found.reason}"))


def takedown_plan(
    request_id: Annotated[int, typer.Argument(help="The request's id.")],
    sample_limit: Annotated[int, typer.Option(help="Sample ids listed per release (--json).")] = 1000,
    as_json: AsJson = False,
) -> None:
    """What applying the request would touch, per live release; changes nothing."""
    with open_service() as service:
        plan = guard(lambda: service.plan_takedown(request_id, sample_limit=sample_limit), as_json=as_json)
    if as_json:
        print_json(plan)
        return
    console.print(
        f"takedown request {plan.request.id}: {len(plan.releases)} of {plan.releases_checked} live releases "
        f"hold {sum(r.samples for r in plan.releases):,} of the samples it names"
    )
    for r in plan.releases:
        console.rule(f"{r.release} ({r.state}): {r.dataset} v{r.version}")
        files = Table(title=f"{r.samples:,} samples in {len(r.files)} files (the rest stay shared)")
        for col in ("file", "affected", "rows", "bytes"):
            files.add_column(col, justify="left" if col == "file" else "right")
        for f in r.files:
            files.add_row(escape(f.path), f"{f.affected:,}", f"{f.rows:,}", f"{f.bytes:,}")
        console.print(files)
        for rep in r.replicas:
            console.print(f"bytes on {rep.tier}: {rep.state}{' (primary)' if rep.primary else ''}, {rep.table_path}")
        for job in r.jobs:
            console.print(
                f"read by {escape(job.job)}: {job.ranks}/{job.world_size} ranks, last {job.last_opened:%Y-%m-%d %H:%M}"
            )
        if not r.jobs:
            console.print("read by no recorded training job")
    for d in plan.downstream:
        console.print(f"downstream: {d.dataset} v{d.version} was built from {d.built_from} (run {d.run_id[:8]})")


def takedown_apply(
    request_id: Annotated[int, typer.Argument(help="The request's id.")],
    tag_suffix: Annotated[
        str | None, typer.Option(help="The successor releases' tag suffix (default -td<ID>).")
    ] = None,
    purge: Annotated[
        bool, typer.Option("--purge", help="Then delete the samples' bytes everywhere (see `takedown purge`).")
    ] = False,
    engine: Annotated[str, typer.Option(help="Rewrites the affected files: local, spark or ray.")] = "local",
    as_json: AsJson = False,
) -> None:
    """Re-issue every live release holding the request's samples without them (only the files holding them
    are rewritten) under a successor tag, and withdraw the old ones. Running it again finishes a killed apply."""
    with open_service() as service:
        applied = guard(
            lambda: service.apply_takedown(
                request_id, tag_suffix=tag_suffix, purge=purge, engine=engine, actor=getpass.getuser()
            ),
            as_json=as_json,
        )
    if as_json:
        print_json(applied)
        return
    for s in applied.successors:
        console.print(
            f"{s.release} withdrawn → {s.successor} ({s.dataset} v{s.version}): {s.samples_removed:,} samples removed, "
            f"{s.files_rewritten} files rewritten"
        )
    if not applied.successors:
        console.print("no live release holds the request's samples")
    if applied.purge is not None:
        _print_purged(applied.purge)
    console.print(f"takedown request {applied.request.id}: {applied.request.state}")


def takedown_purge(
    request_id: Annotated[int, typer.Argument(help="The request's id (applied).")],
    as_json: AsJson = False,
) -> None:
    """Delete the bytes of an applied request's samples on every tier and replica: data files, quarantine and
    signature rows, exports, staged files, and free-text statistics in Delta logs. It runs only after each
    successor's checksums pass on every tier its predecessor was on; withdrawn releases stay as tombstones
    (manifest, QC report, takedown record). Running it again finishes a killed purge."""
    with open_service() as service:
        purged = guard(lambda: service.purge_takedown(request_id), as_json=as_json)
    if as_json:
        print_json(purged)
        return
    _print_purged(purged)
    console.print(f"takedown request {purged.request.id}: {purged.request.state}")


def _print_purged(purged: TakedownPurged) -> None:
    for check in purged.successors_verified:
        console.print(f"verified before deleting: {escape(check)}")
    table = Table(title=f"purged: {purged.samples:,} samples")
    for col in ("tier", "files deleted", "bytes deleted"):
        table.add_column(col, justify="left" if col == "tier" else "right")
    for tier in sorted(purged.files_deleted):
        table.add_row(tier, f"{purged.files_deleted[tier]:,}", f"{purged.bytes_deleted[tier]:,}")
    console.print(table)
    console.print(
        f"quarantine rows removed: {purged.quarantine_rows:,}; signature rows removed: {purged.signature_rows:,}; "
        f"Delta log files rewritten: {purged.log_files_rewritten}"
    )
    for ref in purged.versions_tombstoned:
        console.print(f"tombstone: {ref} (its data can no longer be read)")
    for export in purged.exports_purged:
        console.print(f"export deleted: {export}")
