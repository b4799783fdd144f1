"""Which interrupted run a new run resumes, and how long an interrupted run stays resumable.

A run is *interrupted* when it never reached its commit point: its status is ``failed``, or
``running`` while its process is gone (same host, no such pid). An interrupted run stays
*resumable* while

* no run of the same output dataset has succeeded since it started (that output moved on);
* its staging folder, holding its partition records (:mod:`pipelines.partitions`), is still there
  (:func:`lineage.staging.staged`: ``Settings.staging_dir/<run id>`` for the local engine,
  ``_staging/run-<id>/partitions`` on the output tier for Spark and Ray). ``lineage gc`` keeps it
  for a resumable run until the run has been over for gc's grace period, then deletes it; a
  takedown purge deletes it at once (it may hold the bytes of taken-down records).

Every engine resumes: the identity includes the engine, so a run is resumed on the engine it
started on, whose output it then equals byte for byte.

``lineage run FILE`` resumes the latest resumable run whose identity (:func:`same_run`) equals its
own, keeping that run's id, so every lineage row it writes is the one an uninterrupted run writes.
Claiming it is one conditional update (:func:`claim`), so two reruns never resume the same run.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from lineage.catalog import Catalog, PipelineRun, Run
from lineage.catalog.models import utcnow

log = logging.getLogger(__name__)

Staged = Callable[[Run], bool]  # whether a run's staging folder is still there (lineage.staging.staged)


def process_alive(run: Run | PipelineRun) -> bool:
    """Whether a ``running`` run's (or pipeline run's) process may still run (another host's cannot be told)."""
    if run.host != socket.gethostname() or run.pid is None:
        return True  # cannot tell from here; a stale remote run is handled by the grace period
    try:
        os.kill(run.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def identity(pipeline: str, cache_key: str, engine: str) -> dict[str, Any]:
    """What makes two runs the same run: the pipeline's name, its cache key (:mod:`lineage.run_key`: the
    resolved inputs, with raw files' fingerprints, the operators and params, the code version, the
    mixture and the output) and the engine."""
    return {"pipeline": pipeline, "cache_key": cache_key, "engine": engine}


def same_run(run: Run, wanted: dict[str, Any]) -> bool:
    """THE comparison of a recorded run with a new one (the one place to change what "same" means)."""
    return run.cache_key is not None and identity(run.pipeline, run.cache_key, run.engine) == wanted


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=utcnow().tzinfo)


def _interrupted(run: Run) -> bool:
    return run.status == "failed" or (run.status == "running" and not process_alive(run))


def _superseded(s: Session, run: Run) -> bool:
    newer = select(Run.id).where(
        Run.output_dataset == run.output_dataset, Run.status == "succeeded", Run.started_at > run.started_at
    )
    return s.scalars(newer.limit(1)).first() is not None


def resumable(s: Session, run: Run, staged: Staged) -> bool:
    """Whether ``run`` can be resumed now (the rules in the module docstring)."""
    return _interrupted(run) and not _superseded(s, run) and staged(run)


def find_resumable(s: Session, output_dataset: str, wanted: dict[str, Any], staged: Staged) -> Run | None:
    """The latest resumable run of ``output_dataset`` that is the same run as ``wanted``."""
    candidates = select(Run).where(Run.output_dataset == output_dataset, Run.status.in_(("failed", "running")))
    for run in s.scalars(candidates.order_by(Run.started_at.desc())):
        if same_run(run, wanted) and resumable(s, run, staged):
            return run
    return None


def claim(catalog: Catalog, run: Run, *, pipeline_run_id: str | None = None) -> bool:
    """Make ``run`` this process's running run again, unless another process claimed it first.

    Its ``started_at`` becomes now (the attempt's start, which gc's grace counts from); the attempts
    are counted in ``counts["resumed"]``. A stage run resumed by a new pipeline run becomes that
    pipeline run's stage (``pipeline_run_id``)."""
    attempts = int((run.counts or {}).get("resumed", {}).get("attempts", 0)) + 1
    with catalog.session() as s:
        done = s.execute(
            update(Run)
            .where(Run.id == run.id, Run.status == run.status, Run.host == run.host, Run.pid == run.pid)
            .values(
                status="running",
                host=socket.gethostname(),
                pid=os.getpid(),
                started_at=utcnow(),
                ended_at=None,
                error=None,
                counts={"resumed": {"attempts": attempts}},
                pipeline_run_id=pipeline_run_id if pipeline_run_id is not None else run.pipeline_run_id,
            )
        )
        return done.rowcount == 1  # type: ignore[attr-defined]


def keep_staging(s: Session, staged: Staged, grace: timedelta) -> set[str]:
    """Ids of the runs whose staging folders gc keeps: resumable runs not over for ``grace`` yet."""
    kept = set()
    now = utcnow()
    for run in s.scalars(select(Run).where(Run.status.in_(("failed", "running")))):
        ended = _aware(run.ended_at or run.started_at)
        if now - ended <= grace and resumable(s, run, staged):
            kept.add(run.id)
    return kept
