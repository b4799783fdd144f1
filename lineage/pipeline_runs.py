"""A pipeline of stages (:mod:`pipelines.dag`) run and recorded in the catalog: order, skipping, grouping.

Protocol:

1. the stages in topological order (:meth:`~pipelines.dag.DagSpec.order`);
2. insert the ``pipeline_runs`` row with status ``running``, before any stage;
3. per stage, once every stage it reads is done (see "Engines" below): derive its single-stage spec,
   each ``stage =`` input pinned at the version the upstream stage committed (or reused) in this
   pipeline run; resolve its inputs and compute its cache key (:mod:`lineage.run_key`); then decide:

   - **run** when forced (``force``, or it is ``from_stage`` or downstream of it), when the stage has
     no earlier succeeded run (same ``PIPELINE.STAGE``), when that run's key differs (the parts that
     changed are named), or when that run's output version is gone (no row, or purged);
   - **skip** otherwise, reusing that run's committed version.

   A stage that runs is one :meth:`lineage.runs.Runner.run` of the derived spec, so the whole commit
   protocol of a run holds for it: its output is one dataset version, committed atomically, and its
   run row records the pipeline run and the stage (``StageOf``) and, as every run's does, its key.
   When a stage ends, the pipeline run's ``stages`` list gains its entry (its own transaction), then
   the crash point ``pipeline.stage_done.STAGE`` (:mod:`pipelines.faults`);
4. all stages done: the pipeline run is ``succeeded``, and its OpenLineage events are emitted: the
   pipeline's own job, the parent of every stage's job (``ParentRunFacet``).

A failing stage marks its run ``failed`` (the runner does) and the pipeline run ``failed``, and the
error is raised again. The stages committed before it stay committed; a rerun skips them, since
their keys still match, and so resumes from the first unfinished stage. A killed process leaves its
pipeline run ``running``; the rerun is a new pipeline run, which resumes the same way and marks the
killed one ``failed``, naming itself (as ``lineage gc`` does for one whose process is gone).

Engines: on Spark and Ray every stage whose inputs are ready runs at once, each on a thread of this
process submitting its jobs to the one session or runtime the pipeline run holds (their schedulers
share the cluster between them); in process they run one after another, in the order above, since one
stage already uses every core. Either way a stage's decision is recorded when it ends, in that order.

:meth:`PipelineRunner.plan` makes the same decisions without running anything or writing the catalog:
a stage downstream of one that would run would run too, since its input version would be new.
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ThreadPoolExecutor, as_completed, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from lineage.catalog import Catalog, DatasetVersion, PipelineRun, Run
from lineage.catalog.models import utcnow
from lineage.openlineage import emit_pipeline_after_commit
from lineage.resume import process_alive
from lineage.run_key import resolve_inputs, run_key
from lineage.runs import Runner, StageOf
from lineage.settings import Settings
from lineage.version import code_version
from pipelines.dag import DagSpec
from pipelines.engines import check_engine, get_engine
from pipelines.engines.base import ProgressFn, _no_progress
from pipelines.faults import checkpoint
from pipelines.spec import PipelineSpec

log = logging.getLogger(__name__)

RUN, SKIP = "run", "skip"
CONCURRENT_ENGINES = frozenset({"spark", "ray"})  # their schedulers share the cluster between jobs run at once


@dataclass
class StageDecision:
    """Whether a stage runs or is skipped, and why; for a skipped stage, the version it reuses."""

    stage: str
    action: str  # RUN or SKIP
    reason: str
    changed: list[str] = field(default_factory=list)  # the key's parts that differ from the last run
    last_run_id: str | None = None  # the stage's last succeeded run
    dataset: str = ""
    version: int | None = None  # the reused version (skip), or the committed one once it ran
    run_id: str | None = None  # the run that made ``version``
    cache_key: str | None = None  # None in a plan when an upstream stage would run first

    def record(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "action": self.action,
            "reason": self.reason,
            "changed": self.changed,
            "last_run_id": self.last_run_id,
            "dataset": self.dataset,
            "version": self.version,
            "run_id": self.run_id,
            "cache_key": self.cache_key,
        }


@dataclass
class PipelineOutcome:
    pipeline_run_id: str
    stages: list[StageDecision]

    @property
    def last(self) -> StageDecision:
        return self.stages[-1]


class PipelineRunner:
    def __init__(self, settings: Settings, catalog: Catalog) -> None:
        self.settings = settings
        self.catalog = catalog
        self.runner = Runner(settings, catalog)

    # -- deciding ---------------------------------------------------------------------------
    def _forced(self, dag: DagSpec, from_stage: str | None, force: bool) -> set[str]:
        if force:
            return set(dag.order())
        return set(dag.downstream(from_stage)) if from_stage is not None else set()

    def _decide(
        self, dag: DagSpec, name: str, versions: dict[str, int], forced: bool
    ) -> tuple[StageDecision, PipelineSpec, list[dict[str, Any]]]:
        """The decision for stage ``name`` with its upstream stages at ``versions``, its spec, and its inputs
        as resolved for the key (handed to the run, so raw files are fingerprinted once)."""
        spec = dag.stage_spec(name, versions)
        resolved = self.runner.resolve_evalsets(spec)  # the eval set versions a decontaminate step pins
        with self.catalog.session() as s:
            inputs = resolve_inputs(resolved, s, self.settings)
            key = run_key(resolved, inputs, code_version())
            last = s.scalars(
                select(Run)
                .where(Run.pipeline == dag.job_name(name), Run.stage == name, Run.status == "succeeded")
                .order_by(Run.ended_at.desc(), Run.started_at.desc())
                .limit(1)
            ).first()
            dv = None
            if last is not None:
                dv = s.scalars(select(DatasetVersion).where(DatasetVersion.run_id == last.id)).first()
            decision = StageDecision(name, RUN, "", dataset=spec.output.dataset, cache_key=key.digest)
            if last is not None:
                decision.last_run_id = last.id
                decision.changed = key.changed(last.cache_parts)
            if forced:
                decision.reason = "forced"
            elif last is None:
                decision.reason = "no earlier succeeded run"
            elif last.cache_key != key.digest:
                decision.reason = "changed: " + ", ".join(decision.changed or ["key"])
            elif dv is None or dv.purged_by is not None:
                decision.reason = f"its output of run {last.id} is gone"
            else:
                decision.action, decision.reason = SKIP, f"unchanged since run {last.id}"
                decision.version, decision.run_id = dv.version, last.id
        return decision, spec, inputs

    def plan(self, dag: DagSpec, *, from_stage: str | None = None, force: bool = False) -> list[StageDecision]:
        """What :meth:`run` would do, changing nothing."""
        forced = self._forced(dag, from_stage, force)
        versions: dict[str, int] = {}
        running: list[str] = []
        found = []
        for name in dag.order():
            waiting = [up for up in dag.stage(name).upstream if up in running]
            if waiting:
                out = dag.stage(name).output.dataset
                why = "forced" if name in forced else f"upstream stage {waiting[0]} runs"
                found.append(StageDecision(name, RUN, why, dataset=out))
                running.append(name)
                continue
            decision, _, _ = self._decide(dag, name, versions, name in forced)
            if decision.action == SKIP and decision.version is not None:
                versions[name] = decision.version
            else:
                running.append(name)
            found.append(decision)
        return found

    # -- running ----------------------------------------------------------------------------
    def run(
        self,
        dag: DagSpec,
        *,
        engine: str | None = None,
        from_stage: str | None = None,
        force: bool = False,
        progress: ProgressFn = _no_progress,
    ) -> PipelineOutcome:
        engine_name = engine or dag.engine
        check_engine(engine_name)
        forced = self._forced(dag, from_stage, force)
        pipeline_run_id = str(uuid.uuid4())
        with self.catalog.session() as s:
            _close_interrupted(s, dag.name, pipeline_run_id)
            s.add(
                PipelineRun(
                    id=pipeline_run_id,
                    pipeline=dag.name,
                    engine=engine_name,
                    spec=dag.model_dump(mode="json"),
                    options={"from_stage": from_stage, "force": force},
                    code_version=code_version(),
                    host=socket.gethostname(),
                    pid=os.getpid(),
                )
            )
        log.info("pipeline run %s: %s, stages %s on %s", pipeline_run_id, dag.name, dag.order(), engine_name)
        try:
            with self._engine_held(engine_name):
                done = self._run_stages(dag, forced, engine_name, pipeline_run_id, progress)
        except BaseException as exc:
            self._finish(pipeline_run_id, "failed", f"{type(exc).__name__}: {exc}"[:4000])
            raise
        self._finish(pipeline_run_id, "succeeded", None)
        emit_pipeline_after_commit(self.catalog, self.settings, pipeline_run_id)
        return PipelineOutcome(pipeline_run_id, done)

    @contextmanager
    def _engine_held(self, engine: str) -> Iterator[None]:
        """On Spark and Ray the session or runtime is started once for the pipeline run, and stopped at its end
        if this started it: the stages running at once then share it, and none of them stops it."""
        if engine not in CONCURRENT_ENGINES:
            yield
            return
        held = get_engine(engine, self.settings.execution())
        try:
            yield
        finally:
            held.close()

    def _run_stages(
        self, dag: DagSpec, forced: set[str], engine: str, pipeline_run_id: str, progress: ProgressFn
    ) -> list[StageDecision]:
        """Start each stage once every stage it reads is done: every ready one at once on Spark and Ray (on
        threads), one at a time in process. A stage's decision is recorded when it ends, the list kept in
        topological order. When a stage fails, the others already running end and are recorded, and then
        its error is raised."""
        order = dag.order()
        at_once = len(order) if engine in CONCURRENT_ENGINES else 1
        pool: Executor = ThreadPoolExecutor(at_once, "stage") if at_once > 1 else _InPlace()
        versions: dict[str, int] = {}
        done: list[StageDecision] = []
        running: dict[Future[tuple[int, str]], StageDecision] = {}
        failure: BaseException | None = None

        def ended(decision: StageDecision) -> None:
            assert decision.version is not None
            versions[decision.stage] = decision.version
            done.append(decision)
            done.sort(key=lambda d: order.index(d.stage))
            self._record(pipeline_run_id, done)
            checkpoint(f"pipeline.stage_done.{decision.stage}")

        with pool:
            while failure is None and len(done) < len(order):
                for name in order:
                    if len(running) >= at_once:
                        break
                    started = name in versions or any(d.stage == name for d in running.values())
                    if started or any(up not in versions for up in dag.stage(name).upstream):
                        continue
                    decision, spec, inputs = self._decide(dag, name, versions, name in forced)
                    if decision.action == RUN:
                        log.info("stage %s runs: %s", name, decision.reason)
                        work = (spec, inputs, engine, pipeline_run_id, name, progress)
                        running[pool.submit(self._run_stage, *work)] = decision
                    else:
                        log.info("stage %s skipped: %s (v%s)", name, decision.reason, decision.version)
                        ended(decision)
                if running:  # wait for a stage to end: others may be ready then
                    finished, _ = wait(running, return_when=FIRST_COMPLETED)
                    for future in finished:
                        decision = running.pop(future)
                        try:
                            decision.version, decision.run_id = future.result()
                        except BaseException as exc:
                            failure = failure or exc
                        else:
                            ended(decision)
            for future in as_completed(running):  # after a failure: the stages still running end
                decision = running[future]
                if future.exception() is None:
                    decision.version, decision.run_id = future.result()
                    ended(decision)
        if failure is not None:
            raise failure
        return done

    def _run_stage(
        self,
        spec: PipelineSpec,
        inputs: list[dict[str, Any]],
        engine: str,
        pipeline_run_id: str,
        name: str,
        progress: ProgressFn,
    ) -> tuple[int, str]:
        stage = StageOf(pipeline_run_id, name)
        outcome = self.runner.run(spec, engine=engine, progress=progress, stage=stage, described=inputs)
        return outcome.version, outcome.run_id

    def _record(self, pipeline_run_id: str, done: list[StageDecision]) -> None:
        with self.catalog.session() as s:
            prun = s.get(PipelineRun, pipeline_run_id)
            assert prun is not None
            prun.stages = [d.record() for d in done]

    def _finish(self, pipeline_run_id: str, status: str, error: str | None) -> None:
        try:
            with self.catalog.session() as s:
                prun = s.get(PipelineRun, pipeline_run_id)
                if prun is not None and prun.status == "running":
                    prun.status, prun.ended_at, prun.error = status, utcnow(), error
        except Exception:
            if status != "failed":
                raise
            log.exception("could not mark pipeline run %s as failed", pipeline_run_id)  # the stage's error matters more


def _close_interrupted(s: Session, pipeline: str, rerun_id: str) -> None:
    """Earlier pipeline runs of ``pipeline`` left ``running`` by a process that is gone become ``failed``, naming
    the pipeline run that takes over: otherwise a killed pipeline run would be listed as running for ever.
    (Its stages are runs of their own: an interrupted stage is resumed or started over by its own rerun.)"""
    stale = s.scalars(select(PipelineRun).where(PipelineRun.pipeline == pipeline, PipelineRun.status == "running"))
    for prun in stale:
        if not process_alive(prun):
            prun.status, prun.ended_at = "failed", utcnow()
            prun.error = f"interrupted: its process ({prun.host}, pid {prun.pid}) is gone; {rerun_id} reran it"
            log.info("pipeline run %s was interrupted: %s takes over", prun.id, rerun_id)


class _InPlace(Executor):
    """Runs a stage where it is submitted: in process, one stage already uses every core, and Ctrl-C reaches
    the stage's own thread."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # re-raised by the caller, from the future, like a thread's
            future.set_exception(exc)
        return future
