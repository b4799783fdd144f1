"""Contamination of releases by eval sets (issue #19, item 2): which eval items a release's samples contain.

:func:`resolve_sources` turns eval set references (``NAME:vN``, ``NAME``, collections; none: every active
eval set at its latest version) into the pinned Delta versions of their items, as the ``decontaminate``
operator and :func:`check_version` read them. :func:`check_version` is one streaming pass over a dataset
version's texts, batch by batch, probing the eval n-grams (:mod:`operators.contamination.index`): the
release is never loaded whole, and never changed. Its report, per eval set version: the items
contaminated (with the samples containing each), the samples involved, and the share of the set.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from lineage.catalog import Catalog, DatasetVersion, EvalSet, Release
from lineage.catalog.models import utcnow
from lineage.catalog.queries import evalset_leaves, evalset_version, get_release
from lineage.errors import NotFound
from lineage.settings import Settings
from operators.contamination.params import NgramParams
from storage.delta import version_dataset
from storage.tier import get_tier

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


def check_version(
    dv: DatasetVersion,
    settings: Settings,
    sources: list[dict[str, Any]],
    params: NgramParams | None = None,
    *,
    threshold: float = 0.0,
    coverage: str = "item",
) -> dict[str, Any]:
    """The contamination report of ``dv`` against ``sources`` (see the module)."""
    from operators.contamination.operator import is_contaminated, load_index  # start-up: numba kernels

    index = load_index(tuple(sources), params or NgramParams())
    items: dict[str, dict[str, list[str]]] = {s["evalset"]: defaultdict(list) for s in sources}
    samples: dict[str, set[str]] = {s["evalset"]: set() for s in sources}
    checked = 0 if len(index) else dv.row_count  # nothing to look for: no pass over the texts
    batches = (
        version_dataset(get_tier(dv.tier, settings), dv.data_path, dv.data_delta_version).to_batches(
            columns=["sample_id", "text"], batch_size=BATCH_ROWS
        )
        if len(index)
        else []
    )
    for batch in batches:
        checked += batch.num_rows
        ids = batch.column("sample_id").to_pylist()
        for sample, probe in zip(ids, index.probe(batch.column("text")), strict=True):
            for m in probe.matches:
                one = type(probe)(probe.sample_ngrams, [m])
                if is_contaminated(one, threshold, coverage):
                    items[m.item.evalset][m.item.item_id].append(sample)
                    samples[m.item.evalset].add(sample)
    report = {
        "checked_samples": checked,
        "threshold": threshold,
        "coverage": coverage,
        "ngrams": {"word": index.params.word_ngram, "char": index.params.char_ngram},
        "evalsets": {},
    }
    for src in sources:
        ref, found = src["evalset"], items[src["evalset"]]
        report["evalsets"][ref] = {
            "items": src["items"],
            "contaminated_items": len(found),
            "share": len(found) / src["items"] if src["items"] else 0.0,
            "samples": len(samples[ref]),
            "item_samples": {item: sorted(ids)[:SAMPLES_LISTED] for item, ids in sorted(found.items())},
        }
    log.info(
        "contamination of %s v%d: %s",
        dv.dataset.name,
        dv.version,
        {ref: r["contaminated_items"] for ref, r in report["evalsets"].items()},
    )
    return report


def check_releases(
    catalog: Catalog, settings: Settings, ref: str, releases: list[str] | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """Check published releases (``releases``; None: every published one) against eval set ``ref`` (a
    collection: each member) and record each result on the release, by eval set version. The releases'
    files and manifests are not changed. Returns (release, {NAME:vN: result}) per release."""
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
            report = check_version(release.dataset_version, settings, sources)
            at = utcnow().isoformat()
            results = {
                key: {**value, "checked_at": at, "threshold": report["threshold"], "ngrams": report["ngrams"]}
                for key, value in report["evalsets"].items()
            }
            release.contamination_checks = {**(release.contamination_checks or {}), **results}
        done.append((release_ref, results))
    return done
