"""Run a pipeline: plan inputs, execute on an engine, commit Delta tables, then the catalog.

The catalog transaction at the end is the run's single commit point. Delta commits made
before it are invisible: readers only ever open the Delta versions the catalog pins, and a
later run's overwrite commit drops whatever a dead run added. Before any Delta commit the runner
checks the engine's output against the lineage (:mod:`pipelines.integrity`): the rows written
must be exactly the samples the last step kept, with no sample_id twice.
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pyarrow.dataset as pads
from sqlalchemy import func, select

from lineage.catalog import Catalog, Dataset, DatasetVersion, Run
from lineage.catalog.models import utcnow
from lineage.catalog.queries import dataset_version, get_release
from lineage.settings import Settings, get_settings
from lineage.version import code_version
from operators import registry
from operators.base import ClusterOperator
from operators.convert import ConvertOperator, SourceSpec, plan_chunks
from operators.lineage_records import LINEAGE_SCHEMA
from operators.schema import QUARANTINE_SCHEMA, SAMPLE_SCHEMA
from pipelines.engines import DatasetInput, Job, JobResult, PublishedRelease, SourceInput, TableTarget, get_engine
from pipelines.engines.base import ProgressFn, _no_progress
from pipelines.faults import checkpoint
from pipelines.integrity import RunError, check_output_rows, duplicate_ids
from pipelines.spec import InputSpec, PipelineSpec
from storage.delta import DataFile, commit_snapshot, describe_file
from storage.layout import DatasetTables, check_name, run_prefix
from storage.tier import Tier, get_tier, local_tier

log = logging.getLogger(__name__)

RAW_SOURCE_VERSION = 0  # source_version of samples read straight from raw files by a run


@dataclass
class RunOutcome:
    run_id: str
    dataset: str
    version: int
    row_count: int
    counts: dict[str, Any] = field(default_factory=dict)


def _glob_root(path: str) -> tuple[str, str]:
    """Split a local path into (existing folder to root a tier at, pattern relative to it)."""
    parts = Path(path).parts
    for i, part in enumerate(parts):
        if set("*?[") & set(part):
            return str(Path(*parts[:i])), "/".join(parts[i:])
    p = Path(path)
    return (str(p.parent), p.name) if p.is_file() else (str(p), "")


def resolve_source(inp: InputSpec, base_dir: Path | None, settings: Settings) -> SourceSpec:
    assert inp.path is not None
    if inp.tier is not None:
        return SourceSpec(inp.dataset, get_tier(inp.tier, settings), inp.path, inp.format)
    path = Path(inp.path).expanduser()
    if not path.is_absolute():
        path = (base_dir or Path.cwd()) / path
    if path.is_symlink() and path.is_file():
        # A link named as the input is what the user chose to read: the throw-away tier is rooted
        # at its target's folder, and the file keeps the link's name. Links *inside* a root that
        # lead out of it are refused (storage.links).
        target = path.resolve()
        return SourceSpec(inp.dataset, local_tier(target.parent), target.name, inp.format, name=path.name)
    root, pattern = _glob_root(str(path))
    if not Path(root).is_dir():
        raise FileNotFoundError(f"input {inp.dataset!r}: no such file or folder: {path}")
    return SourceSpec(inp.dataset, local_tier(root), pattern, inp.format)


class Runner:
    def __init__(self, settings: Settings | None = None, catalog: Catalog | None = None) -> None:
        self.settings = settings or get_settings()
        self.catalog = catalog or Catalog(self.settings.catalog_url or "")

    def run(self, spec: PipelineSpec, *, engine: str | None = None, progress: ProgressFn = _no_progress) -> RunOutcome:
        engine_name = engine or spec.engine
        check_name(spec.output.dataset)
        run_id = str(uuid.uuid4())
        out_tier = get_tier(spec.output.tier, self.settings)
        tables = DatasetTables.for_dataset(spec.output.dataset)
        operators = [registry.build(op.name, op.params) for op in spec.operators]
        clusters = [op for op in operators if isinstance(op, ClusterOperator)]
        if len(clusters) > 1:
            raise ValueError("a pipeline can have at most one near-duplicate (cluster) step")
        sources, datasets, inputs, input_rows = self._resolve_inputs(spec, run_id)
        published = self._resolve_published(clusters[0]) if clusters else []
        if published and engine_name != "local":
            raise ValueError("deduplicating against published releases (against=) runs on the local engine only")

        with self.catalog.session() as s:
            s.add(
                Run(
                    id=run_id,
                    pipeline=spec.name,
                    engine=engine_name,
                    output_dataset=spec.output.dataset,
                    spec=spec.model_dump(mode="json"),
                    operators=[src.convert.describe() for src in sources[:1]] + [op.describe() for op in operators],
                    inputs=inputs,
                    code_version=code_version(),
                    host=socket.gethostname(),
                    pid=os.getpid(),
                    staging_prefix=run_prefix(run_id),
                )
            )
        log.info("run %s: %s -> %s on %s", run_id, spec.name, spec.output.dataset, engine_name)
        try:
            job = Job(
                run_id=run_id,
                sources=sources,
                datasets=datasets,
                operators=operators,
                data=TableTarget(out_tier, tables.data, run_prefix(run_id)),
                lineage=TableTarget(out_tier, tables.lineage, run_prefix(run_id)),
                quarantine=TableTarget(out_tier, tables.quarantine, run_prefix(run_id)),
                config=self.settings.execution(),
                progress=progress,
                signatures=TableTarget(out_tier, tables.signatures, run_prefix(run_id)) if clusters else None,
                published=published,
            )
            eng = get_engine(engine_name, job.config)
            try:
                result = eng.execute(job)
            finally:
                eng.close()
            checkpoint("after_engine")
            cluster = clusters[0] if clusters else None
            return self._commit(spec, run_id, out_tier, tables, result, cluster, input_rows)
        except BaseException as exc:
            self._fail(run_id, exc)
            raise

    # -- inputs -----------------------------------------------------------------------------
    def _resolve_inputs(
        self, spec: PipelineSpec, run_id: str
    ) -> tuple[list[SourceInput], list[DatasetInput], list[dict[str, Any]], int]:
        """(raw sources, dataset versions, what the run records about them, rows of those versions)."""
        sources: list[SourceInput] = []
        datasets: list[DatasetInput] = []
        recorded: list[dict[str, Any]] = []
        input_rows = 0
        for position, inp in enumerate(spec.inputs):
            check_name(inp.dataset)
            if inp.is_raw:
                src = resolve_source(inp, spec.base_dir, self.settings)
                chunks = plan_chunks(src, RAW_SOURCE_VERSION)
                convert = ConvertOperator(inp.convert_params(), run_id=run_id)
                sources.append(SourceInput(chunks, convert, position))
                recorded.append(
                    {
                        "kind": "files",
                        "dataset": inp.dataset,
                        "uri": src.tier.uri(src.pattern),
                        "files": chunks.num_rows,
                    }
                )
            else:
                with self.catalog.session() as s:
                    dv = dataset_version(s, inp.dataset, inp.version)
                    tier = get_tier(dv.tier, self.settings)
                    datasets.append(DatasetInput(tier, dv.data_path, dv.data_delta_version, position))
                    recorded.append({"kind": "dataset", "dataset": inp.dataset, "version": dv.version})
                    input_rows += dv.row_count
        return sources, datasets, recorded, input_rows

    def _resolve_published(self, op: ClusterOperator) -> list[PublishedRelease]:
        """Releases a cluster step dedupes against, with their stored signatures."""
        found = []
        with self.catalog.session() as s:
            for ref in getattr(op.params, "against", ()):
                dv = get_release(s, ref).dataset_version
                if dv.signatures_path is None or dv.signatures_delta_version is None:
                    raise ValueError(f"release {ref} has no stored signatures (its pipeline ran no minhash_dedupe)")
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
    def _commit(
        self,
        spec: PipelineSpec,
        run_id: str,
        tier: Tier,
        tables: DatasetTables,
        result: JobResult,
        cluster: ClusterOperator | None,
        input_rows: int,
    ) -> RunOutcome:
        data = [describe_file(tier, tables.data, f) for f in result.data_files]
        lineage = [describe_file(tier, tables.lineage, f) for f in result.lineage_files]
        quarantine = [describe_file(tier, tables.quarantine, f) for f in result.quarantine_files]
        counts = self._counts(tier, tables, data, lineage, result)
        check_output_rows(counts["steps"], len(spec.operators), input_rows, counts["output_rows"])
        meta = {"lineage.run_id": run_id, "lineage.dataset": spec.output.dataset}
        versions = {
            "data": commit_snapshot(tier, tables.data, data, SAMPLE_SCHEMA, meta),
            "lineage": commit_snapshot(tier, tables.lineage, lineage, LINEAGE_SCHEMA, meta),
            "quarantine": commit_snapshot(tier, tables.quarantine, quarantine, QUARANTINE_SCHEMA, meta),
        }
        if cluster is not None:
            signatures = [describe_file(tier, tables.signatures, f) for f in result.signature_files]
            versions["signatures"] = commit_snapshot(tier, tables.signatures, signatures, cluster.sketch_schema, meta)
        checkpoint("after_delta_commit")
        row_count = sum(f.num_rows for f in data)
        with self.catalog.session() as s:  # the commit point
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
                row_count=row_count,
                bytes=sum(f.size for f in data),
                quarantine_count=sum(f.num_rows for f in quarantine),
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
            run.status, run.ended_at, run.counts = "succeeded", utcnow(), counts
        log.info("run %s committed %s v%d (%d samples)", run_id, spec.output.dataset, number, row_count)
        from lineage.openlineage import emit_after_commit  # dataset-level lineage; never fails the run

        emit_after_commit(self.catalog, self.settings, run_id)
        return RunOutcome(run_id, spec.output.dataset, number, row_count, counts)

    def _counts(
        self, tier: Tier, tables: DatasetTables, data: list[DataFile], lineage: list[DataFile], result: JobResult
    ) -> dict[str, Any]:
        """Per-step verdict counts from the lineage just written; refuses duplicate sample ids.

        Ingest already refused input ids that occur twice, so a duplicate here is an engine bug.
        """
        fs = tier.filesystem
        con = duckdb.connect()
        con.register(
            "lin",
            pads.dataset(
                [tier.path(tables.lineage, f.path) for f in lineage],
                filesystem=fs,
                schema=LINEAGE_SCHEMA,
                format="parquet",
            ),
        )
        con.register(
            "smp",
            pads.dataset(
                [tier.path(tables.data, f.path) for f in data], filesystem=fs, schema=SAMPLE_SCHEMA, format="parquet"
            ),
        )
        total, dupes = duplicate_ids(con, "smp")
        if total:
            raise RunError(
                f"internal error: the output has {total} duplicate sample_id value(s) (e.g. {dupes}) "
                "although the ingested ids were unique; nothing was committed"
            )
        rows = con.sql(
            "SELECT step, operator, verdict, coalesce(reason, '') AS reason, count(*) FROM lin "
            "GROUP BY ALL ORDER BY step, verdict, reason"
        ).fetchall()
        steps: dict[int, dict[str, Any]] = {}
        for step, operator, verdict, reason, n in rows:
            entry = steps.setdefault(
                step,
                {"step": step, "operator": operator, "in": 0, "kept": 0, "dropped": 0, "modified": 0, "reasons": {}},
            )
            entry["in"] += n
            entry[verdict] += n
            if reason:
                entry["reasons"][reason] = entry["reasons"].get(reason, 0) + n
        quarantine = {k.removeprefix("quarantine."): v for k, v in result.stats.items() if k.startswith("quarantine.")}
        extra = {k: v for k, v in result.stats.items() if not k.startswith("quarantine.")}
        return {
            "steps": [steps[k] for k in sorted(steps)],
            "quarantine": quarantine,
            "output_rows": sum(f.num_rows for f in data),
            **extra,
        }

    def _fail(self, run_id: str, exc: BaseException) -> None:
        try:
            with self.catalog.session() as s:
                run = s.get(Run, run_id)
                if run is not None and run.status == "running":
                    run.status, run.ended_at = "failed", utcnow()
                    run.error = f"{type(exc).__name__}: {exc}"[:4000]
        except Exception:  # the original error matters more than a failed status update
            log.exception("could not mark run %s as failed", run_id)
