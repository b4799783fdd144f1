"""Release replicas across tiers: copy, move and verify, with a truthful catalog at every step.

Protocol for ``copy`` (each step is durable before the next starts):

1. the replica row is created in state ``copying``;
2. each file is copied and read back; once verified it is recorded in the row's ``files``;
3. a Delta log is written on the destination whose version 0 is exactly the release's files;
4. the row becomes ``verified``.

A killed copy leaves a ``copying`` row listing the files it proved; rerunning skips those. The
source is only read. ``move`` then marks the source ``removing``, deletes the source files that no
other published release on that tier needs, and marks it ``removed``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from deltalake import DeltaTable
from sqlalchemy import select
from sqlalchemy.orm import Session

from lineage.catalog import Catalog, Release, Replica, ReplicaFile
from lineage.catalog.models import utcnow
from lineage.catalog.queries import get_release, replicas_of
from lineage.errors import ConfigError, Conflict, Invalid, LineageError, NotFound
from lineage.releases.publishing import LIVE_STATES
from lineage.releases.transfers import CopyEngine, copy_on_engine
from lineage.settings import Settings
from operators.schema import SAMPLE_SCHEMA
from pipelines.engines import check_engine
from pipelines.faults import checkpoint
from storage.delta import commit_snapshot, describe_file
from storage.tier import get_tier
from storage.transfer import FileSpec, TransferError, copy_verified, verify_files
from storage.verified import VerifiedMarkers

log = logging.getLogger(__name__)


class ReplicaError(LineageError, RuntimeError):
    """A replica request that cannot be done: the base of the refusals below, which callers catch."""


class ReplicaConflict(ReplicaError, Conflict):
    """The request contradicts what the tier holds (no verified source, a foreign Delta log)."""


class ReplicaNotFound(ReplicaError, NotFound):
    """The release has no replica on the tier named."""


@dataclass
class ReplicaOutcome:
    release: str
    tier: str
    table_path: str
    state: str
    copied: int = 0
    skipped: int = 0
    bytes_copied: int = 0
    seconds: float = 0.0
    removed_from: str | None = None
    deleted_files: int = 0
    problems: dict[str, str] | None = None


def replica_table_path(release: Release) -> str:
    """Where a self-contained replica of a release lives on a tier."""
    return f"releases/{release.name}/{release.tag}/data"


def _specs(release: Release) -> list[FileSpec]:
    return [FileSpec(f["path"], f["size"], f["xxh3_128"]) for f in release.manifest["files"]]


def verified_locations(session: Session, release: Release) -> list[Replica]:
    return [r for r in replicas_of(session, release) if r.state == "verified"]


def _record_verified(catalog: Catalog, replica_id: int, spec: FileSpec) -> None:
    """One row per proven file, committed at once: a crash later never costs this file again."""
    with catalog.session() as s:
        row = ReplicaFile(path=spec.path, size=spec.size, xxh3_128=spec.xxh3_128)
        row.replica_id = replica_id
        s.add(row)
    checkpoint("replica.file_verified")


def _write_log(settings: Settings, tier_name: str, table_path: str, release: Release) -> int:
    """A Delta log on the replica whose version 0 holds exactly the release's files."""
    tier = get_tier(tier_name, settings)
    uri = tier.uri(table_path)
    expected = {f["path"] for f in release.manifest["files"]}
    if DeltaTable.is_deltatable(uri, storage_options=tier.storage_options):
        existing = DeltaTable(uri, version=0, storage_options=tier.storage_options)
        found = {p.removeprefix(uri + "/") for p in existing.file_uris()}
        if found != expected:
            raise ReplicaConflict(f"{tier_name}:{table_path} already has a Delta log with other files")
        return 0
    files = [describe_file(tier, table_path, f["path"]) for f in release.manifest["files"]]
    meta = {"lineage.release": release.ref, "lineage.content_digest": release.content_digest}
    return commit_snapshot(tier, table_path, files, SAMPLE_SCHEMA, meta)


def copy_release(
    catalog: Catalog,
    settings: Settings,
    ref: str,
    to_tier: str,
    *,
    workers: int = 4,
    bytes_per_s: float | None = None,
    on_bytes: Callable[[int], None] = lambda _n: None,
    engine: CopyEngine = "local",
) -> ReplicaOutcome:
    """Make (or finish) a verified replica of ``ref`` on ``to_tier``.

    ``engine="local"`` copies with a thread pool in this process; ``"spark"`` or ``"ray"`` runs the
    same per-file copy on a cluster (:mod:`lineage.releases.transfers`). Either way this process decides
    what to copy and records each verified file, the Delta log and the final state.
    """
    check_engine(engine)  # an unknown engine or a missing extra fails before any catalog row
    try:
        settings.tier_config(to_tier)
    except ConfigError as exc:  # the caller named this tier (``--to``): a bad argument, not a server fault
        raise Invalid(str(exc)) from None
    dst = get_tier(to_tier, settings)
    with catalog.session() as s:
        release = get_release(s, ref)
        replicas = replicas_of(s, release)
        existing = next((r for r in replicas if r.tier == to_tier), None)
        if existing is not None and existing.state == "verified":
            return ReplicaOutcome(ref, to_tier, existing.table_path, "verified", skipped=len(existing.files))
        sources = [r for r in replicas if r.state == "verified" and r.tier != to_tier]
        if not sources:
            raise ReplicaConflict(f"{ref} has no verified replica to copy from")
        source = sorted(sources, key=lambda r: not r.primary)[0]
        if existing is None:
            existing = Replica(release_id=release.id, tier=to_tier, table_path=replica_table_path(release))
            s.add(existing)
        if existing.state != "copying":  # a fresh attempt: nothing on the destination is proven yet
            existing.files.clear()
        existing.state, existing.detail = "copying", None
        s.flush()
        replica_id, table_path = existing.id, existing.table_path
        already = {f.path for f in existing.files}
        specs, src_tier, src_path = _specs(release), source.tier, source.table_path
    copy_kwargs: dict[str, Any] = {
        "skip": already,
        "workers": workers,
        "bytes_per_s": bytes_per_s,
        "on_verified": lambda spec: _record_verified(catalog, replica_id, spec),
        "on_bytes": on_bytes,
    }
    src = get_tier(src_tier, settings)
    try:
        if engine == "local":
            report = copy_verified(src, src_path, dst, table_path, specs, **copy_kwargs)
        else:
            report = copy_on_engine(engine, settings, src, src_path, dst, table_path, specs, **copy_kwargs)
    except TransferError as exc:  # the row stays `copying` with the files proven; say why it stopped
        with catalog.session() as s:
            replica = s.get(Replica, replica_id)
            assert replica is not None
            replica.detail = str(exc)
        raise
    with catalog.session() as s:
        release = get_release(s, ref)
        version = _write_log(settings, to_tier, table_path, release)
        checkpoint("replica.log_written")
        replica = s.get(Replica, replica_id)
        assert replica is not None
        replica.state, replica.delta_version, replica.verified_at = "verified", version, utcnow()
    log.info(
        "replica of %s on %s verified (%d copied, %d already there)",
        ref,
        to_tier,
        len(report.copied),
        len(report.skipped),
    )
    return ReplicaOutcome(
        ref,
        to_tier,
        table_path,
        "verified",
        len(report.copied),
        len(report.skipped),
        report.bytes_copied,
        report.seconds,
    )


def _needed_elsewhere(session: Session, release: Release, tier: str, table_path: str) -> set[str]:
    """Files under ``table_path`` on ``tier`` that another live (published or deprecated) release's
    replica uses: a deprecated release stays readable, so its files stay too."""
    needed: set[str] = set()
    others = session.scalars(
        select(Replica)
        .join(Release, Release.id == Replica.release_id)
        .where(
            Replica.tier == tier,
            Replica.table_path == table_path,
            Replica.release_id != release.id,
            Replica.state.in_(("verified", "copying")),
            Release.state.in_(LIVE_STATES),
        )
    )
    for other in others:
        needed.update(f.path for f in other.files)
    return needed


def move_release(catalog: Catalog, settings: Settings, ref: str, to_tier: str, **kwargs: Any) -> ReplicaOutcome:
    """Copy to ``to_tier``, then remove the copy the data came from (the other verified replicas stay)."""
    outcome = copy_release(catalog, settings, ref, to_tier, **kwargs)
    with catalog.session() as s:
        release = get_release(s, ref)
        candidates = [r for r in replicas_of(s, release) if r.tier != to_tier and r.state in ("verified", "removing")]
        if not candidates:
            return outcome
        source = sorted(candidates, key=lambda r: (r.state != "removing", not r.primary))[0]
        source.state = "removing"
        source_id, tier_name, table_path = source.id, source.tier, source.table_path
        keep = _needed_elsewhere(s, release, tier_name, table_path)
        paths = [f.path for f in source.files if f.path not in keep]
    checkpoint("replica.before_delete")
    tier = get_tier(tier_name, settings)
    deleted = 0
    for path in paths:
        try:
            tier.filesystem.delete_file(tier.path(table_path, path))
            deleted += 1
        except FileNotFoundError:
            pass  # a rerun after a crash mid-delete
    with catalog.session() as s:
        source = s.get(Replica, source_id)
        assert source is not None
        source.state = "removed"
    outcome.removed_from, outcome.deleted_files = tier_name, deleted
    return outcome


def verify_release(catalog: Catalog, settings: Settings, ref: str, tier_name: str) -> ReplicaOutcome:
    """Read every file of the replica on ``tier_name`` back; mark it verified or corrupt.

    This host's verified markers of those files are cleared (see :mod:`storage.verified`):
    verify is what catches bytes that changed under an unchanged file identity.
    """
    with catalog.session() as s:
        release = get_release(s, ref)
        replica = next((r for r in replicas_of(s, release) if r.tier == tier_name), None)
        if replica is None or replica.state in ("removed", "removing"):
            raise ReplicaNotFound(f"{ref} has no replica on tier {tier_name!r}")
        replica_id, table_path, specs = replica.id, replica.table_path, _specs(release)
    tier = get_tier(tier_name, settings)
    problems = verify_files(tier, table_path, specs)
    # this host's readers must hash these files again, not trust what they verified before
    forgotten = VerifiedMarkers.in_home(settings.home).forget(tier, table_path, ((f.path, f.xxh3_128) for f in specs))
    log.info("verify of %s on %s: %d problems, %d verified markers cleared", ref, tier_name, len(problems), forgotten)
    now = utcnow()
    with catalog.session() as s:
        replica = s.get(Replica, replica_id)
        assert replica is not None
        if problems:
            replica.state, replica.detail = "corrupt", "; ".join(f"{p}: {m}" for p, m in sorted(problems.items()))
        elif replica.state in ("verified", "corrupt"):
            replica.state, replica.verified_at, replica.detail = "verified", now, None
            for f in replica.files:
                f.verified_at = now
        state = replica.state
    return ReplicaOutcome(ref, tier_name, table_path, state, problems=problems or None)
