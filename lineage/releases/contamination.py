"""Contamination of releases by eval sets (issue #19, item 2): which eval items a release's samples contain.

:func:`resolve_sources` turns eval set references (``NAME:vN``, ``NAME``, collections; none: every active
eval set at its latest version) into the pinned Delta versions of their items, as the ``decontaminate``
operator and :func:`check_version` read them. :func:`check_version` is one streaming pass over a dataset
version's texts on an engine (local, Spark or Ray: :mod:`lineage.releases.contamination_jobs`), batch by
batch, probing the eval n-grams (:mod:`operators.contamination.index`): the release is never loaded
whole, and never changed. Its report, per eval set version: the items contaminated (with the first
100 samples containing each), the samples involved, and the share of the set. :func:`record_hits`
stores every (item, sample) hit in the catalog, so each eval item has the full list of samples that
contain it (``Service.evalset_item_samples``), whatever its length.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, insert, select
from sqlalchemy.orm import Session

from lineage.catalog import Catalog, DatasetVersion, EvalSet, Release
from lineage.catalog.models import ContaminationHit, ContaminationScan, utcnow
from lineage.catalog.queries import evalset_leaves, evalset_version, get_release
from lineage.errors import NotFound
from lineage.releases.contamination_jobs import Hit, ScanTask, check_engine_name, scan
from lineage.settings import Settings
from operators.contamination.params import NgramParams
from storage.delta import version_files
from storage.tier import get_tier
from storage.transfer_task import TierAccess

log = logging.getLogger(__name__)

SAMPLES_LISTED = 100  # sample ids an item lists (the count is complete)
BATCH_ROWS = 8192


def resolve_sources(session: Session, settings: Settings, refs: list[str] | tuple[str, ...]) -> list[dict[str, Any]]:
    """The item tables of the eval set versions ``refs`` stand for (none: every active eval set)."""
    if not refs:
        active = session.scalars(select(EvalSet).where(EvalSet.state == "active").order_by(EvalSet.name))
        refs = [evalset_version(session, es.name, None).ref for es in active if _has_versions(session, es)]
    sources: dict[str, dict[str, Any]] = {}
    for ref in refs:
        for leaf in evalset_leaves(session, ref):
            dv = leaf.dataset_version
            assert dv is not None
            tier = get_tier(dv.tier, settings)
            sources[leaf.ref] = {
                "evalset": leaf.ref,
                "items": leaf.item_count,
                "tier": json.dumps(tier.config.model_dump(by_alias=True), sort_keys=True),
                "path": dv.data_path,
                "version": dv.data_delta_version,
            }
    return list(sources.values())


def _has_versions(session: Session, es: EvalSet) -> bool:
    try:
        evalset_version(session, es.name, None)
    except NotFound:
        return False
    return True


@dataclass(frozen=True)
class Checked:
    """A check's report (what the manifest or the release stores) and every hit behind it."""

    report: dict[str, Any]
    hits: list[Hit]


def check_version(
    dv: DatasetVersion,
    settings: Settings,
    sources: list[dict[str, Any]],
    params: NgramParams | None = None,
    *,
    threshold: float = 0.0,
    coverage: str = "item",
    engine: str = "local",
) -> Checked:
    """The contamination report of ``dv`` against ``sources`` (see the module), checked on ``engine``."""
    params = params or NgramParams()
    tier = get_tier(dv.tier, settings)
    # nothing to look for: no pass, and not even the version's file list (a takedown's successor, no eval sets)
    files = [f["path"] for f in version_files(tier, dv.data_path, dv.data_delta_version)] if sources else []
    task = ScanTask(
        TierAccess.of(tier),
        dv.data_path,
        tuple(sources),
        params,
        threshold,
        coverage,
        min(settings.batch_rows, BATCH_ROWS),
    )
    checked, hits = 0, []
    for result in scan(engine, settings, task, files) if sources else []:
        checked += result.rows
        hits += result.hits
    checked = checked if sources else dv.row_count
    hits.sort(key=lambda h: (h.evalset, h.item_id, h.sample_id))
    items: dict[str, dict[str, list[str]]] = {s["evalset"]: defaultdict(list) for s in sources}
    samples: dict[str, set[str]] = {s["evalset"]: set() for s in sources}
    for hit in hits:
        items[hit.evalset][hit.item_id].append(hit.sample_id)
        samples[hit.evalset].add(hit.sample_id)
    report: dict[str, Any] = {
        "checked_samples": checked,
        "threshold": threshold,
        "coverage": coverage,
        "ngrams": {"word": params.word_ngram, "char": params.char_ngram},
        "evalsets": {},
    }
    for src in sources:
        ref, found = src["evalset"], items[src["evalset"]]
        report["evalsets"][ref] = {
            "items": src["items"],
            "contaminated_items": len(found),
            "share": len(found) / src["items"] if src["items"] else 0.0,
            "samples": len(samples[ref]),
            "item_samples": {item: ids[:SAMPLES_LISTED] for item, ids in sorted(found.items())},
        }
    log.info(
        "contamination of %s v%d on %s: %s",
        dv.dataset.name,
        dv.version,
        engine,
        {ref: r["contaminated_items"] for ref, r in report["evalsets"].items()},
    )
    return Checked(report, hits)


def record_hits(session: Session, dv: DatasetVersion, sources: list[dict[str, Any]], checked: Checked) -> None:
    """Store every (item, sample) hit of the check, by eval set version, replacing an earlier check of the
    same version by the same eval set version: what :func:`item_samples` pages through."""
    by_ref = {leaf.ref: leaf for src in sources for leaf in evalset_leaves(session, src["evalset"])}
    report = checked.report
    for ref, leaf in by_ref.items():
        old = session.scalars(
            select(ContaminationScan).where(
                ContaminationScan.dataset_version_id == dv.id, ContaminationScan.eval_set_version_id == leaf.id
            )
        ).first()
        if old is not None:
            session.execute(delete(ContaminationHit).where(ContaminationHit.scan_id == old.id))
            session.delete(old)
            session.flush()
        scan_row = ContaminationScan(
            dataset_version_id=dv.id,
            eval_set_version_id=leaf.id,
            threshold=report["threshold"],
            coverage=report["coverage"],
            checked_samples=report["checked_samples"],
            contaminated_items=report["evalsets"][ref]["contaminated_items"],
        )
        session.add(scan_row)
        session.flush()
        rows = [
            {
                "scan_id": scan_row.id,
                "item_id": h.item_id,
                "sample_id": h.sample_id,
                "matched_item_ngrams": h.matched_item_ngrams,
                "item_ngrams": h.item_ngrams,
                "matched_sample_ngrams": h.matched_sample_ngrams,
                "sample_ngrams": h.sample_ngrams,
            }
            for h in checked.hits
            if h.evalset == ref
        ]
        for i in range(0, len(rows), 5000):
            session.execute(insert(ContaminationHit), rows[i : i + 5000])


def check_releases(
    catalog: Catalog, settings: Settings, ref: str, releases: list[str] | None = None, *, engine: str = "local"
) -> list[tuple[str, dict[str, Any]]]:
    """Check published releases (``releases``; None: every published one) against eval set ``ref`` (a
    collection: each member) and record each result on the release, by eval set version. The releases'
    files and manifests are not changed. Returns (release, {NAME:vN: result}) per release."""
    check_engine_name(engine)  # an unknown engine or a missing extra fails before any work
    with catalog.session() as s:
        sources = resolve_sources(s, settings, [ref])
        if releases is None:
            query = select(Release).where(Release.state == "published").order_by(Release.name, Release.tag)
            refs = [r.ref for r in s.scalars(query)]
        else:
            refs = [get_release(s, r).ref for r in releases]
    done = []
    for release_ref in refs:
        with catalog.session() as s:
            release = get_release(s, release_ref)
            checked = check_version(release.dataset_version, settings, sources, engine=engine)
            record_hits(s, release.dataset_version, sources, checked)
            report = checked.report
            at = utcnow().isoformat()
            results = {
                key: {**value, "checked_at": at, "threshold": report["threshold"], "ngrams": report["ngrams"]}
                for key, value in report["evalsets"].items()
            }
            release.contamination_checks = {**(release.contamination_checks or {}), **results}
        done.append((release_ref, results))
    return done
