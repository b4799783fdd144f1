"""The catalog's own entities as lineage-graph nodes, next to the OpenLineage jobs and datasets.

OpenLineage events name jobs and datasets only; dataset versions, the runs that made them, releases,
their exports, the training jobs that read them (recorded reads) and eval sets live in the catalog's
tables. :func:`load_overlay` reads those tables into keyed nodes and edges that
:mod:`lineage.openlineage` merges into the one graph ``GET /lineage`` answers from. Every node has the
time it was created (a run: started; a release: published; a reader: its first recorded read), so the
"as of" view hides what came later.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from lineage.catalog import Dataset, DatasetVersion, Release, Run
from lineage.catalog.models import (
    ContaminationScan,
    EvalSet,
    EvalSetVersion,
    Export,
    ReleaseRead,
    as_utc,
)

JOB = "JOB"  # lineage.openlineage's, whose nodes ours link to
DATASET, VERSION, RUN, RELEASE, EXPORT, MODEL = "DATASET", "VERSION", "RUN", "RELEASE", "EXPORT", "MODEL"
EVALSET, EVALSET_VERSION = "EVALSET", "EVALSET_VERSION"
KINDS = (DATASET, VERSION, RUN, RELEASE, EXPORT, MODEL, EVALSET, EVALSET_VERSION)  # JOB is OpenLineage's

Key = tuple[str, str, str]  # (kind, namespace, name), as GraphIndex.by_key


@dataclass
class CatalogNode:
    """A node row shaped like ``lineage_nodes``' (what :func:`lineage.openlineage._node_json` reads)."""

    id: int
    kind: str
    namespace: str
    name: str
    updated_at: datetime  # when it was created: the node's first-seen time
    facets_json: str = "{}"
    latest_run_id: str | None = None


@dataclass
class Overlay:
    """The catalog part of the graph: nodes by key, edges (origin key, destination key) with their time."""

    stamp: tuple[Any, ...]
    nodes: dict[Key, CatalogNode] = field(default_factory=dict)
    edges: dict[tuple[Key, Key], datetime] = field(default_factory=dict)
    # edges to or from OpenLineage nodes the catalog's events name (merged only where the node exists)
    links: dict[tuple[Key, Key], datetime] = field(default_factory=dict)

    def node(self, kind: str, namespace: str, name: str, when: datetime, facets: dict[str, Any]) -> Key:
        key = (kind, namespace, name)
        when = as_utc(when)
        have = self.nodes.get(key)
        if have is None:
            # ids below zero: never a lineage_nodes id; stable while the overlay lives
            self.nodes[key] = CatalogNode(-(len(self.nodes) + 1), kind, namespace, name, when, json.dumps(facets))
        elif when < have.updated_at:
            have.updated_at = when
        return key

    def edge(self, origin: Key, dest: Key, when: datetime | None = None) -> None:
        """An edge, first seen when both ends existed (or at ``when`` if later)."""
        at = max(self.nodes[origin].updated_at, self.nodes[dest].updated_at)
        if when is not None:
            at = max(at, as_utc(when))
        have = self.edges.get((origin, dest))
        if have is None or at < have:
            self.edges[(origin, dest)] = at

    def link(self, origin: Key, dest: Key) -> None:
        """An edge between one of ours and an OpenLineage node (kept only if the events made it)."""
        ours = self.nodes[origin] if origin in self.nodes else self.nodes[dest]
        self.links[(origin, dest)] = ours.updated_at


def catalog_stamp(session: Session) -> tuple[Any, ...]:
    """Changes whenever the catalog adds an entity the graph shows or changes a release's state: one
    query of maxima and counts (ids only grow)."""
    r = Release.__table__.c
    columns = (
        select(func.max(Dataset.id)).scalar_subquery(),
        select(func.max(DatasetVersion.id)).scalar_subquery(),
        select(func.max(r.id)).scalar_subquery(),
        select(func.max(r.published_at)).scalar_subquery(),
        select(func.max(r.deprecated_at)).scalar_subquery(),
        select(func.max(r.withdrawn_at)).scalar_subquery(),
        select(func.count()).where(r.state != "published").scalar_subquery(),
        select(func.max(Export.id)).scalar_subquery(),
        select(func.max(ReleaseRead.id)).scalar_subquery(),
        select(func.max(EvalSet.id)).scalar_subquery(),
        select(func.count()).where(EvalSet.state != "active").scalar_subquery(),
        select(func.max(EvalSetVersion.id)).scalar_subquery(),
        select(func.max(ContaminationScan.id)).scalar_subquery(),
    )
    row = session.execute(select(*columns)).one()
    return tuple(row)


def load_overlay(session: Session, namespace: str, stamp: tuple[Any, ...]) -> Overlay:
    """Every catalog entity the graph shows, and its edges: dataset -> version, the version's run ->
    version, a run's input version -> run, version -> release, release -> export, release -> the
    training jobs that read it, eval set -> eval set version, eval set version -> the releases it was
    checked against (at publish or by a later check), and the dataset version an eval set version was
    built from -> it."""
    ov = Overlay(stamp)
    ns = namespace
    datasets = {d.id: d for d in session.scalars(select(Dataset))}
    for d in datasets.values():
        ov.node(DATASET, ns, d.name, d.created_at, {"owner": d.owner, "tier": d.tier})
    versions: dict[int, Key] = {}
    by_ref: dict[tuple[str, int], Key] = {}
    rows = session.execute(select(DatasetVersion, Run).join(Run, Run.id == DatasetVersion.run_id))
    runs: list[Run] = []
    for dv, run in rows:
        ds = datasets[dv.dataset_id]
        facets = {
            "dataset": ds.name,
            "version": dv.version,
            "rows": dv.row_count,
            "bytes": dv.bytes,
            "runId": dv.run_id,
            "tier": dv.tier,
        }
        key = versions[dv.id] = ov.node(VERSION, ns, f"{ds.name}:v{dv.version}", dv.created_at, facets)
        by_ref[(ds.name, dv.version)] = key
        ov.edge((DATASET, ns, ds.name), key)
        run_facets = {"pipeline": run.pipeline, "engine": run.engine, "status": run.status}
        run_key = ov.node(RUN, ns, run.id, run.started_at, run_facets)
        ov.nodes[run_key].latest_run_id = run.id
        ov.edge(run_key, key)
        ov.link((JOB, ns, run.pipeline), run_key)  # the OpenLineage job (lineage.openlineage.run_events)
        runs.append(run)
    for run in runs:
        for inp in run.inputs:
            source = by_ref.get((inp.get("dataset"), inp.get("version"))) if inp.get("kind") == "dataset" else None
            if source is not None:
                ov.edge(source, (RUN, ns, run.id))
    releases: dict[int, Key] = {}
    checked: list[tuple[str, Key, str | None]] = []  # (eval set version NAME:vN, release, when)
    for rel in session.scalars(select(Release).order_by(Release.id)):
        facets = {
            "release": f"{rel.name}@{rel.tag}",
            "state": rel.state,
            "successor": rel.successor,
            "digest": rel.content_digest,
            "datasetVersionId": rel.dataset_version_id,
        }
        key = releases[rel.id] = ov.node(RELEASE, ns, f"{rel.name}@{rel.tag}", rel.published_at, facets)
        if rel.dataset_version_id in versions:
            ov.edge(versions[rel.dataset_version_id], key)
        at_publish = ((rel.manifest or {}).get("contamination") or {}).get("evalsets") or {}
        checked.extend((ref, key, None) for ref in at_publish)  # the publish report's checks
        for ref, check in (rel.contamination_checks or {}).items():  # later `evalset check`s
            checked.append((ref, key, check.get("checked_at") if isinstance(check, dict) else None))
    for ex in session.scalars(select(Export).order_by(Export.id)):
        if ex.release_id not in releases:
            continue
        facets = {"exportId": ex.export_id, "format": ex.format, "release": releases[ex.release_id][2]}
        facets |= {"sequences": ex.sequences, "tokens": ex.tokens}
        key = ov.node(EXPORT, ns, ex.export_id, ex.created_at, facets)
        ov.edge(releases[ex.release_id], key)
        # the dataset its OpenLineage event wrote (lineage.releases.exports: NAME@TAG/FORMAT/EXPORT_ID)
        ov.link(key, (DATASET, ns, f"{releases[ex.release_id][2]}/{ex.format}/{ex.export_id}"))
    reads = session.execute(
        select(ReleaseRead.release_id, ReleaseRead.job, func.min(ReleaseRead.opened_at), func.count())
        .group_by(ReleaseRead.release_id, ReleaseRead.job)
        .order_by(ReleaseRead.job)
    )
    readers: dict[str, list[tuple[int, datetime, int]]] = {}  # job -> (release id, first read, reads)
    for release_id, job, first, count in reads:
        if release_id in releases:
            readers.setdefault(job, []).append((release_id, first, count))
    for job, read in readers.items():
        first = min(as_utc(when) for _, when, _ in read)
        key = ov.node(MODEL, ns, job, first, {"job": job, "reads": sum(n for _, _, n in read)})
        for release_id, when, _ in read:
            ov.edge(releases[release_id], key, when)
        ov.link(key, (JOB, ns, job))  # the training job an eval run's events name (service.evalruns)
    eval_sets = {e.id: e for e in session.scalars(select(EvalSet))}
    for e in eval_sets.values():
        ov.node(EVALSET, ns, e.name, e.created_at, {"task": e.task, "state": e.state, "kind": e.kind})
    for ev in session.scalars(select(EvalSetVersion).order_by(EvalSetVersion.id)):
        es = eval_sets[ev.eval_set_id]
        facets = {"evalSet": es.name, "version": ev.version, "items": ev.item_count, "digest": ev.content_digest}
        key = ov.node(EVALSET_VERSION, ns, f"{es.name}:v{ev.version}", ev.created_at, facets)
        ov.edge((EVALSET, ns, es.name), key)
        ov.link(key, (DATASET, f"{ns}.evalsets", f"{es.name}:v{ev.version}"))  # as eval runs' events name it
        if ev.dataset_version_id in versions:
            ov.edge(versions[ev.dataset_version_id], key)
    for ref, release, when in checked:
        key = (EVALSET_VERSION, ns, ref)
        if key in ov.nodes:  # contamination_checks keys are NAME:vN, as the node names
            ov.edge(key, release, datetime.fromisoformat(when) if when else None)
    return ov
