"""Eval results traced to data (issue #19, item 3): record an eval run, and the two provenance queries.

Training jobs are linked to releases by their recorded reads (``release_reads.job``), so an eval run
that names its model's training jobs reaches the releases the model trained on; each release's
contamination for the eval set version is what its publish report (manifest) or a later ``evalset
check`` (``contamination_checks``) recorded, or unknown when neither checked it.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import inspect, select
from sqlalchemy.orm import Session

from lineage import openlineage
from lineage.catalog import EvalRun, Release, ReleaseRead, queries
from lineage.catalog.models import utcnow
from lineage.errors import NotFound
from lineage.openlineage import PRODUCER, SCHEMA_URL
from lineage.service import schemas as S


def _out(run: EvalRun) -> S.EvalRunOut:
    columns = {c.key: getattr(run, c.key) for c in inspect(EvalRun).column_attrs}
    return S.EvalRunOut.model_validate({**columns, "evalset": run.eval_set_version.ref})


def from_event(s: Session, event: openlineage.RunEvent, *, namespace: str) -> S.EvalRunOut | None:
    """An OpenLineage COMPLETE event whose inputs are one model (``NS.models``, ``MODEL@CHECKPOINT``) and one
    eval set version (``NS.evalsets``, ``NAME:vN``) is an eval run: its run facets ``metrics.metrics`` and
    ``trainingJobs.jobs`` are the metrics and the training jobs. Any other event is not (None)."""
    models = [d.name for d in event.inputs if d.namespace == f"{namespace}.models"]
    sets = [d.name for d in event.inputs if d.namespace == f"{namespace}.evalsets"]
    if event.eventType != "COMPLETE" or len(models) != 1 or len(sets) != 1 or "@" not in models[0]:
        return None
    model, _, checkpoint = models[0].rpartition("@")
    facets = event.run.facets or {}
    body = S.parse_input(
        S.EvalRunCreate,
        {
            "model": model,
            "checkpoint": checkpoint,
            "evalset": sets[0],
            "metrics": (facets.get("metrics") or {}).get("metrics", {}),
            "training_jobs": (facets.get("trainingJobs") or {}).get("jobs", []),
        },
    )
    return record(s, body, actor=event.producer or "openlineage", namespace=namespace, event=False)


def record(s: Session, body: S.EvalRunCreate, *, actor: str, namespace: str, event: bool = True) -> S.EvalRunOut:
    """The eval run, and its place in the lineage graph: the model and the eval set version are dataset
    nodes (namespaces ``NS.models`` and ``NS.evalsets``) read by an eval job, and each training job writes
    the model after reading the datasets of the releases it read (an OpenLineage event each)."""
    version = queries.resolve_evalset(s, body.evalset)
    run = EvalRun(
        model=body.model,
        checkpoint=body.checkpoint,
        eval_set_version_id=version.id,
        metrics=dict(body.metrics),
        training_jobs=list(dict.fromkeys(body.training_jobs)),
        recorded_by=actor,
    )
    run.eval_set_version = version
    s.add(run)
    s.flush()
    model = {"namespace": f"{namespace}.models", "name": f"{body.model}@{body.checkpoint}"}
    evalset = {"namespace": f"{namespace}.evalsets", "name": version.ref}
    at = utcnow().isoformat()
    common = {"eventType": "COMPLETE", "eventTime": at, "producer": PRODUCER, "schemaURL": SCHEMA_URL}
    if event:  # an eval run that came as an event is in the graph already
        openlineage.ingest(
            s,
            {
                **common,
                "run": {"runId": f"eval-run-{run.id}", "facets": {"metrics": {"metrics": run.metrics}}},
                "job": {"namespace": namespace, "name": f"eval/{model['name']}/{version.ref}"},
                "inputs": [model, evalset],
            },
        )
    for job in run.training_jobs:
        read = select(Release).join(ReleaseRead, ReleaseRead.release_id == Release.id).where(ReleaseRead.job == job)
        datasets = sorted({r.dataset_version.dataset.name for r in s.scalars(read)})
        openlineage.ingest(
            s,
            {
                **common,
                "run": {"runId": f"train-{job}"[:100]},
                "job": {"namespace": namespace, "name": job},
                "inputs": [{"namespace": namespace, "name": name} for name in datasets],
                "outputs": [model],
            },
        )
    return _out(run)


def _run(s: Session, run_id: int) -> EvalRun:
    run = s.get(EvalRun, run_id)
    if run is None:
        raise NotFound(f"eval run {run_id} does not exist")
    return run


def _contamination(release: Release, ref: str) -> S.ReleaseContamination:
    found: dict[str, Any] | None = (release.contamination_checks or {}).get(ref)
    if found is None:
        found = ((release.manifest or {}).get("contamination") or {}).get("evalsets", {}).get(ref)
    if found is None:
        return S.ReleaseContamination(evalset=ref, checked=False)
    return S.ReleaseContamination(
        evalset=ref, checked=True, contaminated_items=found["contaminated_items"], items=sorted(found["item_samples"])
    )


def provenance(s: Session, run_id: int) -> S.EvalRunProvenance:
    run = _run(s, run_id)
    leaves = [v.ref for v in queries.evalset_leaves(s, run.eval_set_version.ref)]
    by_release: dict[int, set[str]] = {}
    if run.training_jobs:
        for read in s.scalars(select(ReleaseRead).where(ReleaseRead.job.in_(run.training_jobs))):
            by_release.setdefault(read.release_id, set()).add(read.job)
    trained = []
    for release_id, jobs in sorted(by_release.items()):
        release = s.get(Release, release_id)
        assert release is not None
        trained.append(
            S.TrainedOn(
                release=release.ref, jobs=sorted(jobs), contamination=[_contamination(release, r) for r in leaves]
            )
        )
    states = [c for t in trained for c in t.contamination]
    contaminated = (
        True if any(c.contaminated_items for c in states) else None if any(not c.checked for c in states) else False
    )
    return S.EvalRunProvenance(eval_run=_out(run), releases=trained, contaminated=contaminated)


def release_evals(s: Session, ref: str) -> S.ReleaseEvals:
    release = queries.get_release(s, ref)
    jobs = sorted({r.job for r in s.scalars(select(ReleaseRead).where(ReleaseRead.release_id == release.id))})
    evals = []
    for run in s.scalars(select(EvalRun).order_by(EvalRun.id)):  # eval runs are few next to reads
        for job in run.training_jobs:
            if job in jobs:
                evals.append(S.ReleaseEval(job=job, eval_run=_out(run)))
    return S.ReleaseEvals(release=release.ref, jobs=jobs, evals=evals)
