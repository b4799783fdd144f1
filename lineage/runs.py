"""A pipeline run, recorded in the catalog around :mod:`pipelines.execute`.

Protocol (README, "The commit protocol"):

1. plan the run (``pipelines.execute.plan``) and resolve its inputs: raw files are planned by
   ``pipelines.sources.plan_source``, dataset versions and the published releases a cluster step
   dedupes against come from the catalog (:mod:`lineage.catalog.queries`);
2. insert the run row with status ``running``, or, when an interrupted run of the same pipeline,
   inputs, code and engine can be resumed (:mod:`lineage.resume`), claim that run row back and keep
   its id: the engine then reuses the partitions it recorded (:mod:`pipelines.partitions`);
3. ``pipelines.execute.execute`` runs the engine, checks its output and commits the Delta tables,
   which nobody reads yet;
4. **one catalog transaction** records the dataset version pinning those Delta versions and marks
   the run ``succeeded``: the run's only commit point. Its staging folder (the recorded partitions:
   local, or on the output tier for Spark and Ray) is deleted right after;
5. emit the run's dataset-level lineage (OpenLineage), which never fails the run.

Any error from step 3 on marks the run ``failed`` and is raised again.
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from lineage import resume, staging
from lineage.catalog import Catalog, Dataset, DatasetVersion, Run
from lineage.catalog.models import utcnow
from lineage.catalog.queries import dataset_version, get_release, require_data
from lineage.errors import Invalid
from lineage.openlineage import emit_after_commit
from lineage.releases.contamination import resolve_sources
from lineage.run_key import run_key
from lineage.settings import Settings, get_settings
from lineage.version import code_version
from operators.base import ClusterOperator
from operators.convert import ConvertOperator
from operators.schema import SAMPLE_SCHEMA
from pipelines import execute
from pipelines.engines import DatasetInput, PublishedRelease, SourceInput, check_engine
from pipelines.engines.base import ProgressFn, _no_progress
from pipelines.sources import plan_source
from pipelines.spec import PipelineSpec
from storage.delta import version_dataset
from storage.layout import check_name, run_prefix, staging_prefix
from storage.tier import get_tier

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StageOf:
    """The run is stage ``stage`` of pipeline run ``pipeline_run_id`` (``lineage.pipeline_runs``). The run
    records its own cache key (:mod:`lineage.run_key`, from the inputs it resolved), every run does, so a
    rerun can tell whether it may reuse the output or resume the run."""

    pipeline_run_id: str
    stage: str


@dataclass
class RunOutcome:
    run_id: str
    dataset: str
    version: int
    row_count: int
    counts: dict[str, Any] = field(default_factory=dict)


class Runner:
    def __init__(self, settings: Settings | None = None, catalog: Catalog | None = None) -> None:
        self.settings = settings or get_settings()
        self.catalog = catalog or Catalog(self.settings.catalog_url or "")

    def run(
        self,
        spec: PipelineSpec,
        *,
        engine: str | None = None,
        progress: ProgressFn = _no_progress,
        stage: StageOf | None = None,
        described: list[dict[str, Any]] | None = None,
    ) -> RunOutcome:
        """Run ``spec`` once, committed atomically. ``described``: its inputs as
        :func:`lineage.run_key.resolve_inputs` found them moments ago (a pipeline run, deciding whether the
        stage runs), so raw files are fingerprinted once."""
        engine_name = engine or spec.engine
        check_engine(engine_name)  # an unknown engine or a missing extra fails before any work or catalog row
        run_id = str(uuid.uuid4())
        spec = self.resolve_evalsets(spec)
        sources, datasets, inputs, input_rows = self._resolve_inputs(spec, run_id, described)
        key = run_key(spec, inputs, code_version())
        plan = execute.plan(spec, run_id, self.settings, self._members(spec))
        published = self._resolve_published(plan.cluster) if plan.cluster else []
        if published and engine_name != "local":
            raise Invalid("deduplicating against published releases (against=) runs on the local engine only")
        resumed = self._resume(spec, resume.identity(spec.name, key.digest, engine_name), stage)
        if resumed is not None:  # the interrupted run's id: its recorded partitions and lineage rows are ours
            run_id = resumed
            plan = replace(plan, run_id=run_id)
            sources = [replace(src, convert=ConvertOperator(src.convert.params, run_id=run_id)) for src in sources]

        if resumed is None:
            with self.catalog.session() as s:
                s.add(
                    Run(
                        id=run_id,
                        pipeline=spec.name,
                        engine=engine_name,
                        output_dataset=spec.output.dataset,
                        spec=spec.model_dump(mode="json"),
                        operators=[src.convert.describe() for src in sources[:1]]
                        + [op.describe() for op in plan.operators],
                        inputs=inputs,
                        code_version=key.code_version,
                        host=socket.gethostname(),
                        pid=os.getpid(),
                        staging_prefix=run_prefix(run_id),
                        pipeline_run_id=stage.pipeline_run_id if stage else None,
                        stage=stage.stage if stage else None,
                        cache_key=key.digest,
                        cache_parts=key.model_dump(mode="json"),
                    )
                )
        log.info("run %s: %s -> %s on %s", run_id, spec.name, spec.output.dataset, engine_name)
        try:
            executed = execute.execute(
                plan,
                sources,
                datasets,
                published,
                engine=engine_name,
                config=self.settings.execution(),
                input_rows=input_rows,
                progress=progress,
            )
            return self._commit(spec, plan, executed)
        except BaseException as exc:
            self._fail(run_id, exc)
            raise

    def _resume(self, spec: PipelineSpec, wanted: dict[str, Any], stage: StageOf | None) -> str | None:
        """The id of the interrupted run this one resumes (:mod:`lineage.resume`), claimed (as a stage of this
        pipeline run, when it is one); None: a new run."""
        staged = staging.staged(self.settings)
        for _ in range(3):  # another rerun may claim the same run first: look again
            with self.catalog.session() as s:
                run = resume.find_resumable(s, spec.output.dataset, wanted, staged)
                if run is None:
                    return None
                s.expunge(run)
            if resume.claim(self.catalog, run, pipeline_run_id=stage.pipeline_run_id if stage else None):
                log.info("resuming interrupted run %s (%s since %s)", run.id, run.status, run.started_at)
                return run.id
        return None

    # -- inputs -----------------------------------------------------------------------------
    def _resolve_inputs(
        self, spec: PipelineSpec, run_id: str, described: list[dict[str, Any]] | None = None
    ) -> tuple[list[SourceInput], list[DatasetInput], list[dict[str, Any]], int]:
        """(raw sources, dataset versions, what the run records about them, rows of those versions)."""
        sources: list[SourceInput] = []
        datasets: list[DatasetInput] = []
        recorded: list[dict[str, Any]] = []
        input_rows = 0
        for position, inp in enumerate(spec.inputs):
            check_name(inp.dataset)
            if inp.is_raw:
                known = described[position] if described is not None else None
                source, record = plan_source(inp, position, spec.base_dir, run_id, self.settings, known)
                sources.append(source)
                recorded.append(record)
            else:
                with self.catalog.session() as s:
                    dv = require_data(dataset_version(s, inp.dataset, inp.version))
                    tier = get_tier(dv.tier, self.settings)
                    datasets.append(DatasetInput(tier, dv.data_path, dv.data_delta_version, position))
                    recorded.append({"kind": "dataset", "dataset": inp.dataset, "version": dv.version})
                    input_rows += dv.row_count
        return sources, datasets, recorded, input_rows

    def _members(self, spec: PipelineSpec) -> dict[str, list[str]]:
        """Each catalog input's source datasets, when a mixture or a dedupe priority needs them: its
        samples carry the names of the raw sources they came from, not the input's."""
        if spec.mixture is None and not any(inp.priority for inp in spec.inputs):
            return {}
        found: dict[str, list[str]] = {}
        for inp in spec.inputs:
            if inp.is_raw:
                continue
            with self.catalog.session() as s:
                dv = require_data(dataset_version(s, inp.dataset, inp.version))
                table = version_dataset(get_tier(dv.tier, self.settings), dv.data_path, dv.data_delta_version)
            names = table.to_table(columns=["source_dataset"]).column("source_dataset").unique()
            found[inp.dataset] = sorted(names.to_pylist())
        return found

    def resolve_evalsets(self, spec: PipelineSpec) -> PipelineSpec:
        """A ``decontaminate`` step gets the pinned item tables of the eval sets it names (none: every
        active one), so the run records exactly which versions it checked."""
        if not any(op.name == "decontaminate" for op in spec.operators):
            return spec
        spec = spec.model_copy(deep=True)
        with self.catalog.session() as s:
            for op in spec.operators:
                if op.name == "decontaminate":
                    if op.params.get("sources"):
                        raise Invalid("decontaminate: name its eval sets (evalsets = [...]), not their sources")
                    op.params["sources"] = resolve_sources(s, self.settings, list(op.params.get("evalsets", ())))
        return spec

    def _resolve_published(self, op: ClusterOperator) -> list[PublishedRelease]:
        """Releases a cluster step dedupes against, with their stored signatures."""
        found = []
        with self.catalog.session() as s:
            for ref in getattr(op.params, "against", ()):
                dv = get_release(s, ref).dataset_version
                if dv.signatures_path is None or dv.signatures_delta_version is None:
                    raise Invalid(f"release {ref} has no stored signatures (its pipeline ran no minhash_dedupe)")
                found.append(
                    PublishedRelease(
                        ref,
                        get_tier(dv.tier, self.settings),
                        dv.signatures_path,
                        dv.signatures_delta_version,
                        dv.data_path,
                        dv.data_delta_version,
                    )
                )
        return found

    # -- commit -----------------------------------------------------------------------------
    def _commit(self, spec: PipelineSpec, plan: execute.Plan, executed: execute.Executed) -> RunOutcome:
        """The run's commit point: the dataset version pinning the Delta versions, and the run's status."""
        tier, tables, versions, run_id = plan.tier, plan.tables, executed.versions, plan.run_id
        with self.catalog.session() as s:
            dataset = s.scalars(select(Dataset).where(Dataset.name == spec.output.dataset)).first()
            if dataset is None:
                out = spec.output
                dataset = Dataset(
                    name=out.dataset,
                    tier=tier.name,
                    description=out.description,
                    owner=out.owner,
                    license=out.license,
                    tags=list(out.tags),
                )
                s.add(dataset)
                s.flush()
            number = (
                s.scalar(select(func.max(DatasetVersion.version)).where(DatasetVersion.dataset_id == dataset.id)) or 0
            ) + 1
            dv = DatasetVersion(
                version=number,
                run_id=run_id,
                tier=tier.name,
                data_path=tables.data,
                data_delta_version=versions["data"],
                lineage_path=tables.lineage,
                lineage_delta_version=versions["lineage"],
                quarantine_path=tables.quarantine,
                quarantine_delta_version=versions["quarantine"],
                row_count=executed.row_count,
                bytes=executed.bytes,
                quarantine_count=executed.quarantine_count,
                signatures_path=tables.signatures if "signatures" in versions else None,
                signatures_delta_version=versions.get("signatures"),
                schema={
                    "fields": [{"name": f.name, "type": str(f.type), "nullable": f.nullable} for f in SAMPLE_SCHEMA]
                },
            )
            dv.dataset = dataset
            s.add(dv)
            run = s.get(Run, run_id)
            assert run is not None
            counts = dict(executed.counts)
            if run.counts.get("resumed"):  # what this attempt reused of the earlier ones'
                total, reused = executed.partitions
                counts["resumed"] = {
                    **run.counts["resumed"],
                    "partitions": total,
                    "reused_partitions": len(reused),
                    "reused": _ranges(reused),
                }
            run.status, run.ended_at, run.counts = "succeeded", utcnow(), counts
            engine = run.engine
        staging.remove_run(Path(self.settings.staging_dir), run_id)  # committed: its partitions are garbage now
        if engine != "local":  # a Spark or Ray run's partitions are on the output tier
            try:
                staging.remove_tier(tier, staging_prefix(run_id))
            except OSError as exc:  # committed all the same; gc removes it later (the run is not resumable)
                log.warning("run %s: could not remove its staging: %s", run_id, exc)
        log.info("run %s committed %s v%d (%d samples)", run_id, spec.output.dataset, number, executed.row_count)
        emit_after_commit(self.catalog, self.settings, run_id)  # dataset-level lineage; never fails the run
        return RunOutcome(run_id, spec.output.dataset, number, executed.row_count, counts)

    def _fail(self, run_id: str, exc: BaseException) -> None:
        try:
            with self.catalog.session() as s:
                run = s.get(Run, run_id)
                if run is not None and run.status == "running":
                    run.status, run.ended_at = "failed", utcnow()
                    run.error = f"{type(exc).__name__}: {exc}"[:4000]
        except Exception:  # the original error matters more than a failed status update
            log.exception("could not mark run %s as failed", run_id)


def _ranges(indices: list[int]) -> str:
    """Partition indices as ranges, ``0-2,5``: what a resumed run records that it reused, in a few bytes."""
    spans: list[list[int]] = []
    for i in sorted(indices):
        if spans and spans[-1][1] == i - 1:
            spans[-1][1] = i
        else:
            spans.append([i, i])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)
