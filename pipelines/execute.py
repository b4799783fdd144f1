"""Execute a run's storage half: plan it, run it on an engine, check the files, commit the Delta tables.

Nothing here touches the catalog. :mod:`lineage.runs` records the run, resolves its catalog
inputs, calls :func:`execute` and then makes the run's single commit point: the catalog
transaction that pins the Delta versions returned here. Until then those Delta commits are
invisible: readers only ever open the Delta versions the catalog pins, and a later run's
overwrite commit drops whatever a dead run added. Before any Delta commit the output is checked
against the lineage (:mod:`pipelines.integrity`): the rows written must be exactly the samples
the last step kept, with no sample_id twice.

Crash points (:mod:`pipelines.faults`), in order: ``after_engine`` (files written, nothing
committed) and ``after_delta_commit`` (Delta tables committed, the catalog not yet).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import duckdb
import pyarrow.dataset as pads

from operators.base import ClusterOperator, Operator
from operators.lineage_records import LINEAGE_SCHEMA
from operators.mixture import Mixture, summarise
from operators.schema import QUARANTINE_SCHEMA, SAMPLE_SCHEMA
from pipelines.config import ExecutionConfig
from pipelines.engines import DatasetInput, Job, JobResult, PublishedRelease, SourceInput, TableTarget, get_engine
from pipelines.engines.base import ProgressFn, _no_progress
from pipelines.faults import checkpoint
from pipelines.integrity import RunError, check_output_rows, duplicate_ids
from pipelines.mixing import Members, operators_of
from pipelines.progress import TOTAL
from pipelines.spec import PipelineSpec
from storage.config import TierConfigs
from storage.delta import DataFile, commit_snapshot, describe_file
from storage.errors import Invalid
from storage.layout import DatasetTables, check_name, run_prefix
from storage.tier import Tier, get_tier

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Plan:
    """Where a run writes (its output dataset's tables on one tier) and the operators it applies."""

    run_id: str
    dataset: str
    tier: Tier
    tables: DatasetTables
    operators: list[Operator]
    cluster: ClusterOperator | None  # the near-duplicate step; a pipeline has at most one


@dataclass(frozen=True)
class Executed:
    """What the Delta commits of a run pinned, and the numbers the catalog records with them."""

    versions: dict[str, int]  # table kind -> committed Delta version ("signatures" only with a cluster step)
    counts: dict[str, Any]  # per-step verdicts, quarantine and engine counters
    row_count: int
    bytes: int
    quarantine_count: int
    partitions: tuple[int, list[int]] = (0, [])  # (ingest partitions, the reused ones): pipelines.partitions


def plan(spec: PipelineSpec, run_id: str, tiers: TierConfigs, members: Members | None = None) -> Plan:
    """``members``: a catalog input's source datasets, for its mixture weight and dedupe priority."""
    check_name(spec.output.dataset)
    tier = get_tier(spec.output.tier, tiers)
    tables = DatasetTables.for_dataset(spec.output.dataset)
    operators = operators_of(spec, members)
    clusters = [op for op in operators if isinstance(op, ClusterOperator)]
    if len(clusters) > 1:
        raise Invalid("a pipeline can have at most one near-duplicate (cluster) step")
    return Plan(run_id, spec.output.dataset, tier, tables, operators, clusters[0] if clusters else None)


def execute(
    plan: Plan,
    sources: list[SourceInput],
    datasets: list[DatasetInput],
    published: list[PublishedRelease],
    *,
    engine: str,
    config: ExecutionConfig,
    input_rows: int,
    progress: ProgressFn = _no_progress,
) -> Executed:
    """Run the plan on ``engine``, check its output and commit the Delta tables (not the catalog).

    ``input_rows`` is the row count of the dataset-version inputs, for the output check.
    """
    tier, tables, prefix = plan.tier, plan.tables, run_prefix(plan.run_id)
    job = Job(
        run_id=plan.run_id,
        sources=sources,
        datasets=datasets,
        operators=plan.operators,
        data=TableTarget(tier, tables.data, prefix),
        lineage=TableTarget(tier, tables.lineage, prefix),
        quarantine=TableTarget(tier, tables.quarantine, prefix),
        config=config,
        progress=progress,
        signatures=TableTarget(tier, tables.signatures, prefix) if plan.cluster else None,
        published=published,
    )
    if sources:
        progress("files" + TOTAL, sum(src.chunks.num_rows for src in sources))
    else:  # only dataset versions: their rows are known (raw files' records are not until read)
        progress("records" + TOTAL, input_rows)
    eng = get_engine(engine, config)
    try:
        result = eng.execute(job)
    finally:
        eng.close()
    checkpoint("after_engine")
    return _commit_tables(plan, result, input_rows)


def _commit_tables(plan: Plan, result: JobResult, input_rows: int) -> Executed:
    tier, tables = plan.tier, plan.tables
    data = [describe_file(tier, tables.data, f) for f in result.data_files]
    lineage = [describe_file(tier, tables.lineage, f) for f in result.lineage_files]
    quarantine = [describe_file(tier, tables.quarantine, f) for f in result.quarantine_files]
    counts = _counts(tier, tables, data, lineage, result, plan.operators)
    check_output_rows(counts["steps"], len(plan.operators), input_rows, counts["output_rows"])
    meta = {"lineage.run_id": plan.run_id, "lineage.dataset": plan.dataset}
    versions = {
        "data": commit_snapshot(tier, tables.data, data, SAMPLE_SCHEMA, meta),
        "lineage": commit_snapshot(tier, tables.lineage, lineage, LINEAGE_SCHEMA, meta),
        "quarantine": commit_snapshot(tier, tables.quarantine, quarantine, QUARANTINE_SCHEMA, meta),
    }
    if plan.cluster is not None:
        signatures = [describe_file(tier, tables.signatures, f) for f in result.signature_files]
        versions["signatures"] = commit_snapshot(tier, tables.signatures, signatures, plan.cluster.sketch_schema, meta)
    checkpoint("after_delta_commit")
    return Executed(
        versions=versions,
        counts=counts,
        row_count=sum(f.num_rows for f in data),
        bytes=sum(f.size for f in data),
        quarantine_count=sum(f.num_rows for f in quarantine),
        partitions=(result.partitions, result.reused_partitions),
    )


def _counts(
    tier: Tier,
    tables: DatasetTables,
    data: list[DataFile],
    lineage: list[DataFile],
    result: JobResult,
    operators: list[Operator],
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
    out = {
        "steps": [steps[k] for k in sorted(steps)],
        "quarantine": quarantine,
        "output_rows": sum(f.num_rows for f in data),
        **extra,
    }
    for index, op in enumerate(operators, start=1):
        if isinstance(op, Mixture):
            out["mixture"] = _mixture(con, op, index)
    return out


def _mixture(con: duckdb.DuckDBPyConnection, op: Mixture, step: int) -> dict[str, Any]:
    """The requested and achieved mixture from the mixture step's lineage, less later drops."""
    records = con.sql(
        "SELECT m.sample_id, m.detail.source.dataset AS dataset, m.detail.rules AS rules, "
        "d.sample_id IS NULL AS survived FROM lin m LEFT JOIN "
        "(SELECT DISTINCT sample_id FROM lin WHERE step > $step AND verdict = 'dropped') d USING (sample_id) "
        "WHERE m.step = $step ORDER BY m.sample_id",
        params={"step": step},
    ).to_arrow_table()
    survived = records.column("survived").to_numpy(zero_copy_only=False).astype(bool)
    return summarise(op, records, survived)
