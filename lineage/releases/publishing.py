"""Publishing: ``name@tag`` pinned to one dataset version, with a manifest, immutable once published.

States: ``draft`` (recorded, not readable as published) → ``published`` → ``deprecated`` (still
readable). Publishing the same content again is a no-op; other content under a recorded tag is
refused (:class:`ReleaseConflict`).

The publish gate (:func:`gate_record`) is applied whenever a release becomes published: by
:func:`publish`, and when a draft is published (by :func:`publish_draft`, or by :func:`publish` of
the same content). Every surface (CLI, HTTP, SDK) reaches it through these functions, so the
conditions, the list of failed ones and the override record are the same everywhere.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from lineage.catalog import Catalog, DatasetVersion, Release, Replica, ReplicaFile, Run
from lineage.catalog.models import utcnow
from lineage.catalog.queries import dataset_version, get_release, parse_ref, require_data
from lineage.errors import DataPurged, GateFailed, ReleaseConflict, ReleaseWithdrawn
from lineage.releases.contamination import check_version, record_hits, resolve_sources
from lineage.releases.manifest import build_manifest, content_digest
from lineage.releases.qc import GateConfig, build_report, evaluate_gate
from lineage.settings import Settings

log = logging.getLogger(__name__)


DRAFT, PUBLISHED, DEPRECATED, WITHDRAWN = "draft", "published", "deprecated", "withdrawn"
# A live release may still be read: its files and pinned Delta versions are never deleted.
LIVE_STATES = (PUBLISHED, DEPRECATED)


def gate_record(
    report: dict[str, Any],
    gate: GateConfig | None,
    *,
    ref: str,
    actor: str,
    override_reason: str | None = None,
    enforce: bool = True,
) -> dict[str, Any] | None:
    """What a release records of its gate: the conditions, each with its measured value and limit, and the
    override (who, when, why) if failed conditions were overridden. None without a gate.

    With ``enforce`` (a release becoming published), failed conditions refuse it (:class:`GateFailed`,
    each named with its measured value) unless ``override_reason`` is given. A draft is recorded with
    its results unenforced: the gate applies when it is published.
    """
    if gate is None:
        return None
    results = evaluate_gate(report, gate)
    failures = [r for r in results if not r["passed"]]
    # where the check ran is not a condition (every engine gives the same report)
    conditions = gate.model_dump(exclude={"check_engine"})
    record: dict[str, Any] = {"conditions": conditions, "results": results, "override": None}
    if not enforce or not failures:
        return record
    if not override_reason:
        raise GateFailed.of(failures)
    record["override"] = {"by": actor, "at": utcnow().isoformat(), "reason": override_reason}
    log.warning("release %s published over a failed gate by %s: %s", ref, actor, override_reason)
    return record


def contamination_report(
    session: Session, dv: DatasetVersion, settings: Settings, gate: GateConfig | None
) -> dict[str, Any]:
    """The release checked against the eval sets the gate names (``check_evalsets``; none named: every
    active eval set at its latest version), and those it limits (:mod:`lineage.releases.contamination`), on
    the gate's ``check_engine``; every hit is recorded for :func:`~lineage.releases.contamination.item_samples`."""
    refs = list(gate.check_evalsets or []) if gate is not None else []
    sources = resolve_sources(session, settings, refs)
    if gate is not None:  # a limited version is checked even if not named (or not the latest, or deprecated)
        have = {src["evalset"] for src in sources}
        extra = [ref for ref in gate.max_contaminated_items if ref not in have]
        if extra:
            sources += [src for src in resolve_sources(session, settings, extra) if src["evalset"] not in have]
    checked = check_version(dv, settings, sources, engine=gate.check_engine if gate is not None else "local")
    record_hits(session, dv, sources, checked)
    return checked.report


def measured(manifest: dict[str, Any]) -> dict[str, Any]:
    """What the gate measures: the QC report, and the contamination report (None before issue #19)."""
    return {**manifest["qc"], "contamination": manifest.get("contamination")}


def publish(
    catalog: Catalog,
    settings: Settings,
    ref: str,
    *,
    dataset: str | None = None,
    version: int | None = None,
    created_by: str = "local",
    gate: GateConfig | None = None,
    override_reason: str | None = None,
    draft: bool = False,
    qc_report: Callable[[Session, DatasetVersion], dict[str, Any] | None] | None = None,
    shares_files_of: str | None = None,
) -> tuple[Release, bool]:
    """Publish ``ref``; returns (release, changed). Same content again: no-op. Different: refused.

    With a ``gate``, failed conditions refuse the release (:class:`GateFailed` names each one with its
    measured value) unless ``override_reason`` is given: the override is recorded with who and when.
    ``draft=True`` records the release (pinned version, manifest, digest, the gate's results) without
    publishing it; publishing the same content later turns the draft into a published release, through
    the gate given then or else the draft's. ``qc_report`` may give the QC report from what the caller
    knows (a takedown's successor: :func:`~lineage.releases.qc.successor_report`); None from it, or no
    ``qc_report``, builds it from the data. ``shares_files_of`` names a release on the same table whose
    checksums of the files both hold are taken over (:func:`~lineage.releases.manifest.build_manifest`).
    """
    name, tag = parse_ref(ref)
    again = {"draft": draft, "created_by": created_by, "gate": gate, "override_reason": override_reason}
    try:
        with catalog.session() as s:
            dv = require_data(dataset_version(s, dataset or name, version))
            known = None
            if shares_files_of is not None:
                prior = get_release(s, shares_files_of)
                if (prior.dataset_version.tier, prior.dataset_version.data_path) == (dv.tier, dv.data_path):
                    known = {f["path"]: f for f in prior.manifest["files"]}
            manifest = build_manifest(dv, s.get(Run, dv.run_id), settings, known)
            digest = content_digest(manifest)
            existing = s.scalars(select(Release).where(Release.name == name, Release.tag == tag)).first()
            if existing is not None:
                return _publish_again(existing, digest, **again)
            manifest["qc"] = (qc_report and qc_report(s, dv)) or build_report(s, dv, settings)
            manifest["contamination"] = contamination_report(s, dv, settings, gate)
            record = gate_record(
                measured(manifest), gate, ref=ref, actor=created_by, override_reason=override_reason, enforce=not draft
            )
            release = Release(
                name=name,
                tag=tag,
                dataset_version_id=dv.id,
                content_digest=digest,
                manifest=manifest,
                created_by=created_by,
                gate=record,
                state=DRAFT if draft else PUBLISHED,
            )
            release.dataset_version = dv
            s.add(release)
            s.flush()
            s.add(primary_replica(release, dv))
    except IntegrityError:
        # Another publisher recorded NAME@TAG between our look and our insert, and the unique
        # constraint on (name, tag) chose it: answer as if it had been there when we looked.
        with catalog.session() as s:
            existing = s.scalars(select(Release).where(Release.name == name, Release.tag == tag)).first()
            if existing is None:
                raise  # another constraint: a bug, not this race
            log.info("release %s was recorded by a concurrent publish", ref)
            return _publish_again(existing, digest, **again)
    return release, True


def _publish_again(
    existing: Release,
    digest: str,
    *,
    draft: bool,
    created_by: str,
    gate: GateConfig | None,
    override_reason: str | None,
) -> tuple[Release, bool]:
    """``publish`` of a release already recorded: same content is a no-op (or publishes the draft),
    other content is refused."""
    ref = existing.ref
    if existing.content_digest == digest:
        if existing.state == DRAFT and not draft:
            _publish_recorded_draft(existing, gate, override_reason, created_by)
            return existing, True
        log.info("release %s already recorded with the same content", ref)
        return existing, False
    pinned = existing.dataset_version
    raise ReleaseConflict(
        f"release {ref} is already {'recorded' if existing.state == DRAFT else 'published'} with different "
        f"content ({pinned.dataset.name} v{pinned.version}, digest {existing.content_digest[:12]}); "
        f"releases are immutable: publish a new tag"
    )


def _publish_recorded_draft(
    release: Release, gate: GateConfig | None, override_reason: str | None, created_by: str
) -> None:
    """A draft becomes published through the gate given now, or else the conditions recorded with it,
    measured by the QC report recorded with it (its content was checked against the digest)."""
    if gate is None and release.gate is not None:
        gate = GateConfig.model_validate(release.gate["conditions"])
    release.gate = gate_record(
        measured(release.manifest), gate, ref=release.ref, actor=created_by, override_reason=override_reason
    )
    release.state, release.published_at, release.created_by = PUBLISHED, utcnow(), created_by
    log.info("release %s: draft published", release.ref)


def primary_replica(release: Release, dv: DatasetVersion) -> Replica:
    """The release's original table as its first replica (checksums were just read back)."""
    now = utcnow()
    files = [
        ReplicaFile(path=f["path"], size=f["size"], xxh3_128=f["xxh3_128"], verified_at=now)
        for f in release.manifest["files"]
    ]
    return Replica(
        release_id=release.id,
        tier=dv.tier,
        table_path=dv.data_path,
        delta_version=dv.data_delta_version,
        primary=True,
        state="verified",
        files=files,
        verified_at=now,
    )


def publish_draft(
    catalog: Catalog,
    settings: Settings,
    ref: str,
    *,
    created_by: str = "local",
    gate: GateConfig | None = None,
    override_reason: str | None = None,
) -> tuple[Release, bool]:
    """Publish an existing draft after checking its files still have the recorded content, through the
    gate (``gate``, else the draft's own conditions; see :func:`gate_record`)."""
    with catalog.session() as s:
        release = get_release(s, ref)
        if release.state != DRAFT:
            if release.state == PUBLISHED:
                return release, False
            raise ReleaseConflict(f"release {ref} is {release.state}; only a draft can be published")
        dv = release.dataset_version
        digest = content_digest(build_manifest(dv, s.get(Run, dv.run_id), settings))
        if digest != release.content_digest:
            raise ReleaseConflict(f"release {ref}: its files changed since the draft was recorded; refusing to publish")
        _publish_recorded_draft(release, gate, override_reason, created_by)
        return release, True


def check_servable(release: Release, override_reason: str | None) -> None:
    """Data of a withdrawn release is served (read, exported, copied) only with a reason, which the caller
    records; without one the refusal names the successor to use instead. A purged one is refused always."""
    if release.dataset_version.purged_by is not None:
        successor = f": use its successor {release.successor}" if release.successor else ""
        raise DataPurged(
            f"release {release.ref} is a tombstone: takedown request {release.dataset_version.purged_by} purged "
            f"its files, and no override reads it{successor}"
        )
    if release.state == WITHDRAWN and not override_reason:
        raise ReleaseWithdrawn(
            f"release {release.ref} was withdrawn by takedown request {release.withdrawn_by}: use its successor "
            f"{release.successor}, or give an override reason (it is recorded)"
        )


def withdraw(catalog: Catalog, ref: str, *, successor: str, request_id: int) -> tuple[Release, bool]:
    """Withdraw a live release in favour of ``successor`` (a takedown request's doing): it is no longer
    served (readers, exports and tier copies refuse it, naming the successor). Again: a no-op."""
    with catalog.session() as s:
        release = get_release(s, ref)
        if release.state == WITHDRAWN:
            return release, False
        if release.state not in LIVE_STATES:
            raise ReleaseConflict(f"release {ref} is a {release.state}; only a live release can be withdrawn")
        release.state, release.withdrawn_at = WITHDRAWN, utcnow()
        release.withdrawn_by, release.successor = request_id, successor
        return release, True


def deprecate(catalog: Catalog, ref: str, *, reason: str = "") -> tuple[Release, bool]:
    """Mark a published release deprecated (it stays readable). Deprecating again is a no-op."""
    with catalog.session() as s:
        release = get_release(s, ref)
        if release.state == DEPRECATED:
            return release, False
        if release.state != PUBLISHED:
            raise ReleaseConflict(f"release {ref} is a {release.state}; only a published release can be deprecated")
        release.state, release.deprecated_at, release.deprecation_reason = DEPRECATED, utcnow(), reason or None
        return release, True
