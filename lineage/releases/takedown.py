"""Applying a takedown to one dataset version: a new version of the same dataset without the samples.

Only the files that hold affected samples are rewritten. The new data version is one Delta commit of
the old version's other files (shared, not copied) plus a rewritten copy of each affected file; the
lineage version is the old one's files plus one part of ``takedown`` records (verdict ``dropped``, reason
``takedown:<request id>``), so a sample's lineage says why it left. Quarantine and signature tables stay
pinned at the old versions (purging their rows is a later step).

The protocol is the run's (``README``: the commit protocol): a run row first, the Delta commits, then one
catalog transaction that records the version and marks the run succeeded. A killed apply leaves a
``running`` run whose files ``lineage gc`` reclaims; applying again finds the version a finished apply of
the same request made from the same input (its run's ``inputs``) and reuses it.
"""

from __future__ import annotations

import logging
import os
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from sqlalchemy import func, select

from lineage.catalog import Catalog, DatasetVersion, Run
from lineage.catalog.models import utcnow
from lineage.catalog.queries import dataset_version
from lineage.settings import Settings
from operators.lineage_records import LINEAGE_SCHEMA
from operators.schema import SAMPLE_SCHEMA
from pipelines.config import ExecutionConfig
from pipelines.engines import check_engine, get_engine
from pipelines.engines.distributed import DistributedEngine
from pipelines.engines.tasks import ITEM_COLUMN, MANIFEST_SCHEMA
from pipelines.faults import checkpoint
from pipelines.parquet_out import PartWriter
from storage.delta import DataFile, commit_snapshot, describe_file, logged_files, rows_with_keys
from storage.layout import run_prefix
from storage.tier import Tier, get_tier

log = logging.getLogger(__name__)

OPERATOR = "takedown"
# what the successor's QC report needs of each removed sample (:func:`lineage.releases.qc.successor_report`)
REMOVED_COLUMNS = ["sample_id", "text", "content_hash", "source_dataset"]


@dataclass(frozen=True)
class Removed:
    """The new version, and what it took out of the old one."""

    dataset: str
    version: int
    samples: int
    files_rewritten: int
    files_shared: int
    reused: bool = False  # an earlier apply of the request had made it already
    # the removed rows' REMOVED_COLUMNS, when the rewrite had them in hand (the local engine): the successor's
    # QC report subtracts them without reading the affected files a second time (None: :func:`removed_rows`)
    rows: pa.Table | None = field(default=None, compare=False, repr=False)


def pipeline_name(request_id: int) -> str:
    return f"takedown-{request_id}"


def remove_samples(
    catalog: Catalog,
    settings: Settings,
    dataset: str,
    version: int,
    drop: dict[str, list[str]],
    request_id: int,
    engine: str = "local",
) -> Removed:
    """A new version of ``dataset`` from ``version`` without the samples in ``drop`` (file -> sample ids,
    files relative to the data table, as the plan names them); ``engine`` rewrites the affected files."""
    if engine != "local":
        check_engine(engine)  # an unknown engine or a missing extra fails before any catalog row
    with catalog.session() as s:
        old = dataset_version(s, dataset, version)
        for dv in s.scalars(select(DatasetVersion).where(DatasetVersion.dataset_id == old.dataset_id)):
            run = s.get(Run, dv.run_id)
            wanted = {"kind": "dataset", "dataset": dataset, "version": version}
            if run is not None and run.pipeline == pipeline_name(request_id) and wanted in run.inputs:
                return Removed(dataset, dv.version, 0, 0, 0, reused=True)
        tier = get_tier(old.tier, settings)
        paths = (old.data_path, old.data_delta_version, old.lineage_path, old.lineage_delta_version)
        old_id, old_rows, old_schema, dataset_id = old.id, old.row_count, old.schema, old.dataset_id
        step = 1 + max((len(r.operators) for r in [s.get(Run, old.run_id)] if r is not None), default=0)
        run_id = str(uuid.uuid4())
        s.add(
            Run(
                id=run_id,
                pipeline=pipeline_name(request_id),
                engine=engine,
                output_dataset=dataset,
                operators=[{"name": OPERATOR, "version": "1", "params": {"request": request_id}}],
                inputs=[{"kind": "dataset", "dataset": dataset, "version": version}],
            )
        )
    checkpoint("takedown.run_recorded")
    data_path, data_version, lineage_path, lineage_version = paths
    prefix = run_prefix(run_id)
    kept, rewritten, removed, removed_rows_read = _rewrite_data(
        tier, data_path, data_version, drop, prefix, settings, engine
    )
    data_files = kept + rewritten
    ids = sorted(i for file_ids in drop.values() for i in file_ids)
    lineage_files = logged_files(tier, lineage_path, lineage_version)
    lineage_files += _takedown_records(tier, lineage_path, prefix, run_id, step, ids, request_id, settings)
    meta = {"lineage.run_id": run_id, "lineage.dataset": dataset, "lineage.takedown": str(request_id)}
    new_data = commit_snapshot(tier, data_path, data_files, SAMPLE_SCHEMA, meta)
    checkpoint("takedown.data_committed")
    new_lineage = commit_snapshot(tier, lineage_path, lineage_files, LINEAGE_SCHEMA, meta)
    with catalog.session() as s:
        base = s.get(DatasetVersion, old_id)
        number = 1 + (
            s.scalar(select(func.max(DatasetVersion.version)).where(DatasetVersion.dataset_id == dataset_id)) or 0
        )
        dv = DatasetVersion(
            version=number,
            run_id=run_id,
            tier=base.tier,
            data_path=data_path,
            data_delta_version=new_data,
            lineage_path=lineage_path,
            lineage_delta_version=new_lineage,
            quarantine_path=base.quarantine_path,
            quarantine_delta_version=base.quarantine_delta_version,
            row_count=old_rows - removed,
            bytes=sum(f.size for f in data_files),
            quarantine_count=base.quarantine_count,
            schema=old_schema,
            signatures_path=base.signatures_path,
            signatures_delta_version=base.signatures_delta_version,
        )
        dv.dataset = base.dataset
        s.add(dv)
        run = s.get(Run, run_id)
        run.status, run.ended_at = "succeeded", utcnow()
        run.counts = {
            "steps": [
                {
                    "step": step,
                    "operator": OPERATOR,
                    "in": old_rows,
                    "kept": old_rows - removed,
                    "dropped": removed,
                    "modified": 0,
                    "reasons": {f"takedown:{request_id}": removed},
                }
            ],
            "quarantine": {},
            "output_rows": old_rows - removed,
        }
        # a mixture's repeat rules hold for any subset of its samples: the successor is served the same way
        mixture = ((s.get(Run, base.run_id) or run).counts or {}).get("mixture")
        if mixture:
            run.counts = {**run.counts, "mixture": mixture}
    log.info("takedown %d: %s v%d -> v%d without %d samples", request_id, dataset, version, number, removed)
    return Removed(dataset, number, removed, len(rewritten), len(kept), rows=removed_rows_read)


@dataclass(frozen=True)
class RewriteFiles:
    """The rewrite of affected files, one work item per file, the same task on every engine: item ``i``
    reads ``files[i]`` whole, drops ``drops[i]`` and writes what is left as one part (none if nothing is
    left). A file's new bytes depend only on the file, the ids and the settings, so local, Spark and Ray
    give identical files, and the successor the same content digest. Returns engine manifest rows:
    ``file`` (path, rows) and ``stat`` ``removed`` (samples dropped)."""

    tier: Tier
    table: str
    prefix: str
    files: tuple[str, ...]
    drops: tuple[tuple[str, ...], ...]
    config: ExecutionConfig

    def __call__(self, batch: pa.Table | pa.RecordBatch) -> pa.Table:
        rows = [row for i in batch.column(ITEM_COLUMN).to_pylist() for row in self.rewrite(i)[0]]
        return pa.Table.from_pylist(rows, schema=MANIFEST_SCHEMA)

    def rewrite(self, i: int) -> tuple[list[dict[str, Any]], pa.Table]:
        """Item ``i``: its manifest rows, and the :data:`REMOVED_COLUMNS` of the rows it dropped (read anyway;
        the local engine keeps them for the successor's QC report, a distributed one has no way back)."""
        with self.tier.filesystem.open_input_file(self.tier.path(self.table, self.files[i])) as handle:
            # one thread per file: the files are rewritten in parallel, and a file's own column threads
            # would only contend with them for the same cores
            table = pq.ParquetFile(handle).read(columns=SAMPLE_SCHEMA.names, use_threads=False)
        if table.schema != SAMPLE_SCHEMA:
            table = table.cast(SAMPLE_SCHEMA)
        gone = pc.is_in(table.column("sample_id"), pa.array(self.drops[i], pa.string()))
        left = table.filter(pc.invert(gone))
        dropped = table.filter(gone).select(REMOVED_COLUMNS)
        rows: list[dict[str, Any]] = [
            {"kind": "stat", "table": "removed", "name": str(i), "value": table.num_rows - left.num_rows}
        ]
        if not left.num_rows:
            return rows, dropped
        writer = PartWriter(
            self.tier,
            self.table,
            self.prefix,
            SAMPLE_SCHEMA,
            file_rows=left.num_rows,
            row_group_rows=self.config.parquet_row_group_rows,
            row_group_bytes=self.config.parquet_row_group_bytes,
            part_label=f"takedown-{i:05d}",
        )
        writer.write(left)
        rows += [{"kind": "file", "table": self.table, "name": path, "value": left.num_rows} for path in writer.close()]
        return rows, dropped


def _rewrite_data(
    tier: Tier,
    table: str,
    version: int,
    drop: dict[str, list[str]],
    prefix: str,
    settings: Settings,
    engine: str,
) -> tuple[list[DataFile], list[DataFile], int, pa.Table | None]:
    """(files kept as they are, rewritten copies of the affected ones, samples removed, and the removed rows'
    :data:`REMOVED_COLUMNS` when the engine hands them back: the local one does)."""
    kept: list[DataFile] = []
    affected: list[str] = []
    for f in logged_files(tier, table, version):
        if drop.get(f.path):
            affected.append(f.path)
        else:
            kept.append(f)
    if not affected:
        return kept, [], 0, None
    task = RewriteFiles(
        tier, table, prefix, tuple(affected), tuple(tuple(sorted(drop[p])) for p in affected), settings.execution()
    )
    gone: pa.Table | None = None
    if engine == "local":  # a thread per core: reading, filtering and writing Parquet release the GIL
        with ThreadPoolExecutor(max(1, min(len(affected), os.cpu_count() or 1))) as pool:
            done = list(pool.map(task.rewrite, range(len(affected))))
        manifests = [pa.Table.from_pylist(rows, schema=MANIFEST_SCHEMA) for rows, _ in done]
        gone = pa.concat_tables([dropped for _, dropped in done])
    else:
        runner = get_engine(engine, settings.execution())
        try:
            assert isinstance(runner, DistributedEngine)
            manifests = runner.run_items(len(affected), task)  # type: ignore[arg-type]  (any item task)
        finally:
            runner.close()
    rows = pa.concat_tables(manifests).to_pylist()
    written = sorted(r["name"] for r in rows if r["kind"] == "file")
    removed = sum(r["value"] for r in rows if r["kind"] == "stat")
    return kept, [describe_file(tier, table, p) for p in written], removed, gone


def takedown_records(run_id: str, step: int, ids: list[str], request_id: int) -> pa.Table:
    """The ``takedown`` lineage records of the removed samples (verdict ``dropped``, reason ``takedown:<id>``)."""
    n = len(ids)
    return pa.table(
        {
            "run_id": pa.repeat(pa.scalar(run_id), n),
            "step": pa.repeat(pa.scalar(step, pa.int32()), n),
            "operator": pa.repeat(pa.scalar(OPERATOR), n),
            "operator_version": pa.repeat(pa.scalar("1"), n),
            "sample_id": pa.array(ids, pa.string()),
            "verdict": pa.repeat(pa.scalar("dropped"), n),
            "reason": pa.repeat(pa.scalar(f"takedown:{request_id}"), n),
            "related_ids": pa.nulls(n, LINEAGE_SCHEMA.field("related_ids").type),
            "detail": pa.nulls(n, LINEAGE_SCHEMA.field("detail").type),
        },
        schema=LINEAGE_SCHEMA,
    )


def removed_rows(settings: Settings, tier_name: str, table: str, drop: dict[str, list[str]]) -> pa.Table:
    """``text``, ``content_hash`` and ``source_dataset`` of the samples ``drop`` names, read from the old
    version's affected files only (what the successor's QC report subtracts)."""
    tier = get_tier(tier_name, settings)
    ids = pa.array(sorted(i for file_ids in drop.values() for i in file_ids), pa.string())
    return rows_with_keys(tier, table, sorted(drop), REMOVED_COLUMNS, "sample_id", ids).select(REMOVED_COLUMNS)


def _takedown_records(
    tier: Tier, table: str, prefix: str, run_id: str, step: int, ids: list[str], request_id: int, settings: Settings
) -> list[DataFile]:
    if not ids:
        return []
    records = takedown_records(run_id, step, ids, request_id)
    writer = PartWriter(
        tier, table, prefix, LINEAGE_SCHEMA, file_rows=len(ids), row_group_rows=settings.parquet_row_group_rows
    )
    writer.write(records)
    return [describe_file(tier, table, p) for p in writer.close()]
