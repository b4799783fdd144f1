"""``lineage release publish/deprecate/report/list/show/pin/pins/record-read/reads``: releases (NAME@TAG), their
manifests and QC, pins and usage records.

Publishing, deprecating, listing and showing are the service's operations (:mod:`lineage.service.core`),
the ones the HTTP API and the SDK call: the same gate, the same refusals, the same models (``--json``
prints them as the HTTP API answers them).
"""

from __future__ import annotations

import getpass
import socket
import tomllib
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from lineage.cli.app import AsJson, console, every, guard, open_service, print_json, print_list_json
from lineage.cli.render import show_release, write_report
from lineage.errors import Invalid, NotFound
from storage.names import parse_release_ref

if TYPE_CHECKING:
    from lineage.releases.qc import GateConfig
    from lineage.service.core import Service
    from lineage.service.schemas import ReleaseResult


def read_gate(path: Path) -> GateConfig:
    """The ``[gate]`` table of a release config (or the whole file, if it has none); a file that does not
    parse, or conditions the gate refuses, are :class:`~lineage.errors.Invalid` naming the file."""
    from lineage.releases.qc import GateConfig  # start-up: the QC module loads deltalake and DuckDB

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        return GateConfig.model_validate(data.get("gate", data))
    except tomllib.TOMLDecodeError as exc:
        raise Invalid(f"release config {path} does not parse: {' '.join(str(exc).split())}") from None
    except Invalid as exc:
        raise Invalid(f"release config {path}: {exc}") from None


def _is_draft(service: Service, ref: str) -> bool:
    try:
        return service.get_release(ref).state == "draft"
    except NotFound:
        return False


def _publish(
    service: Service,
    ref: str,
    *,
    dataset: str | None,
    version: int | None,
    draft: bool,
    gate: GateConfig | None,
    override_reason: str | None,
) -> ReleaseResult:
    """A recorded draft is published (through ``gate``, else its own conditions); anything else is created."""
    name, tag = parse_release_ref(ref)
    actor = getpass.getuser()
    conditions: dict[str, Any] = {"gate": gate, "override_reason": override_reason}
    if not draft and dataset is None and version is None and _is_draft(service, ref):
        return service.publish_release(ref, conditions, actor=actor)
    body = {"name": name, "tag": tag, "dataset": dataset, "version": version, "draft": draft, **conditions}
    return service.create_release(body, actor=actor)


def release_publish(
    ref: Annotated[str, typer.Argument(help="NAME@TAG")],
    dataset: Annotated[str | None, typer.Option(help="Dataset to release (default: NAME).")] = None,
    version: Annotated[int | None, typer.Option(help="Dataset version (default: latest).")] = None,
    gate: Annotated[
        Path | None,
        typer.Option(
            exists=True, dir_okay=False, help="Release config (TOML) whose [gate] table lists publish conditions."
        ),
    ] = None,
    override: Annotated[str | None, typer.Option(help="Publish despite failed gate conditions; the reason.")] = None,
    draft: Annotated[bool, typer.Option(help="Only record the release (and its gate's results).")] = False,
    as_json: AsJson = False,
) -> None:
    """Publish a dataset version as NAME@TAG (immutable; same content again is a no-op). Publishing a
    recorded draft publishes it, through --gate or else the conditions recorded with it."""
    config = guard(lambda: read_gate(gate), as_json=as_json) if gate is not None else None
    with open_service() as service:
        result = guard(
            lambda: _publish(
                service, ref, dataset=dataset, version=version, draft=draft, gate=config, override_reason=override
            ),
            as_json=as_json,
        )
    if as_json:
        print_json(result)
        return
    release = result.release
    if not result.changed:
        verb = f"already {'recorded' if release.state == 'draft' else release.state} (same content), nothing to do:"
    else:
        verb = "recorded draft" if release.state == "draft" else "published"
    console.print(
        f"[green]{verb}[/] {release.ref} -> {release.dataset} v{release.dataset_version} "
        f"({release.row_count:,} samples, digest {release.content_digest[:12]})"
    )
    if result.changed and release.gate is not None and release.gate.override is not None:
        console.print(f"[yellow]gate overridden[/]: {release.gate.override.reason}")


def release_deprecate(
    ref: Annotated[str, typer.Argument(help="NAME@TAG")],
    reason: Annotated[str, typer.Option(help="Why (shown with the release).")] = "",
    as_json: AsJson = False,
) -> None:
    """Deprecate a published release: it stays readable, and placement may move it to a cold tier."""
    with open_service() as service:
        result = guard(lambda: service.deprecate_release(ref, reason, actor=getpass.getuser()), as_json=as_json)
    if as_json:
        print_json(result)
        return
    ref = result.release.ref
    console.print(f"deprecated {ref}" if result.changed else f"{ref} is already deprecated")


def release_report(
    ref: Annotated[str, typer.Argument(help="NAME@TAG")],
    out: Annotated[Path, typer.Option("--out", help="HTML file to write.")],
) -> None:
    """Write the release's QC report as a self-contained HTML page with charts."""
    with open_service() as service:
        write_report(service, ref, out)
    console.print(f"wrote {out}")


def release_list(
    name: Annotated[str | None, typer.Option(help="Only releases named NAME.")] = None,
    state: Annotated[str | None, typer.Option(help="draft, published, deprecated or withdrawn: only those.")] = None,
    as_json: AsJson = False,
) -> None:
    """List releases."""
    with open_service() as service:
        page = every(service.list_releases, name=name, state=state)
    if as_json:
        print_json(page)
        return
    table = Table(title="Releases")
    for col in ("release", "dataset", "version", "samples", "state", "published"):
        table.add_column(col)
    for r in page.items:
        table.add_row(
            r.ref,
            r.dataset,
            str(r.dataset_version),
            f"{r.row_count:,}",
            f"{r.state} → {r.successor}" if r.successor else r.state,  # a withdrawn release names its successor
            r.published_at.strftime("%Y-%m-%d %H:%M"),
        )
    console.print(table)


def release_show(ref: Annotated[str, typer.Argument(help="NAME@TAG")], as_json: AsJson = False) -> None:
    """Show a release's manifest, replicas, last use and quality summary."""
    with open_service() as service:
        if as_json:
            print_json(guard(lambda: service.get_release(ref), as_json=as_json))
            return
        show_release(service, ref)


def release_pin(
    ref: Annotated[str, typer.Argument(help="NAME@TAG")],
    until: Annotated[datetime, typer.Option(help="Keep the release hot until this time (ISO 8601, UTC).")],
    reason: Annotated[str, typer.Option(help="Why (e.g. the training job).")] = "",
    as_json: AsJson = False,
) -> None:
    """Pin a release (hot placement) until a time; training jobs pin what they use."""
    body = {"until": until, "reason": reason}
    with open_service() as service:
        pin = guard(lambda: service.pin_release(ref, body, actor=getpass.getuser()), as_json=as_json)
    if as_json:
        print_json(pin)
        return
    console.print(f"pinned {pin.release} until {pin.until.isoformat()}")


def release_pins(ref: Annotated[str, typer.Argument(help="NAME@TAG")], as_json: AsJson = False) -> None:
    """List a release's pins, oldest first, expired ones included."""
    with open_service() as service:
        pins = guard(lambda: service.list_pins(ref), as_json=as_json)
    if as_json:
        print_list_json(pins)
        return
    table = Table(title=f"Pins of {ref}")
    for col in ("until", "active", "by", "when", "reason"):
        table.add_column(col, overflow="fold")
    for p in pins:
        table.add_row(
            f"{p.until:%Y-%m-%d %H:%M}",
            "yes" if p.active else "expired",
            p.pinned_by,
            f"{p.created_at:%Y-%m-%d %H:%M}",
            escape(p.reason),
        )
    console.print(table)


def release_record_read(
    ref: Annotated[str, typer.Argument(help="NAME@TAG")],
    job: Annotated[str, typer.Option(help="The training job (e.g. its run name).")],
    world_size: Annotated[int, typer.Option(help="How many ranks the job has.")] = 1,
    rank: Annotated[int, typer.Option(help="This rank: 0 .. world_size - 1.")] = 0,
    host: Annotated[str, typer.Option(help="The host the rank runs on (default: this one).")] = "",
    override: Annotated[
        str | None, typer.Option(help="A withdrawn release: serve it anyway, for this reason (it is recorded).")
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Record that one rank of a training job read the release (the training reader does this itself)."""
    body = {"job": job, "world_size": world_size, "rank": rank, "host": host or socket.gethostname()}
    body["override_reason"] = override
    with open_service() as service:
        read = guard(lambda: service.record_read(ref, body, actor=getpass.getuser()), as_json=as_json)
    if as_json:
        print_json(read)
        return
    console.print(f"recorded: {read.job} rank {read.rank}/{read.world_size} on {read.host} read {read.release}")


def release_reads(
    ref: Annotated[str, typer.Argument(help="NAME@TAG")],
    job: Annotated[str | None, typer.Option(help="Only this training job.")] = None,
    as_json: AsJson = False,
) -> None:
    """Which training jobs read the release (one record per rank), newest first."""
    with open_service() as service:
        guard(lambda: service.get_release(ref), as_json=as_json)  # an unknown release is refused, not empty
        page = every(service.list_reads, ref, job=job)
    if as_json:
        print_json(page)
        return
    table = Table(title=f"Reads of {ref}")
    for col in ("job", "rank", "world size", "host", "opened", "recorded by"):
        table.add_column(col, overflow="fold")
    for r in page.items:
        table.add_row(
            escape(r.job),
            str(r.rank),
            str(r.world_size),
            escape(r.host),
            f"{r.opened_at:%Y-%m-%d %H:%M}",
            escape(r.recorded_by),
        )
    console.print(table)
