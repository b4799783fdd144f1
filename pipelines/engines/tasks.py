"""Engine-neutral task bodies for the distributed engines (Spark and Ray).

Each task takes Arrow data, calls the shared stage functions (:mod:`pipelines.stages`), writes
Parquet part files through :class:`PartWriter` and returns a small *manifest* table: the files it
wrote, row counts and counters. The driver only ever collects manifests, never samples, and reads
files named in manifests (never by listing folders), so files left behind by a failed task
attempt are ignored.

Spark calls these through ``mapInArrow`` and Ray through ``map_batches``/``map_groups``; the
engines only decide which rows reach which task.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from operators.convert import ConvertOperator
from operators.lineage_records import LINEAGE_SCHEMA
from operators.schema import QUARANTINE_SCHEMA, SAMPLE_SCHEMA
from pipelines.arrow_util import conform
from pipelines.config import ExecutionConfig
from pipelines.engines.base import DatasetInput, TableTarget
from pipelines.engines.sorted_files import FILE_FIELD, Numbered, SortedFiles
from pipelines.faults import checkpoint
from pipelines.integrity import INGESTED_SCHEMA
from pipelines.parquet_out import PartWriter
from pipelines.partitions import INGESTED, LINEAGE, PARTITION_KINDS, QUARANTINE, ROWS, SAMPLES, TierPartitions
from pipelines.stages import (
    ROW_KEY,
    ROW_KEYS_SCHEMA,
    STAGED_SCHEMA,
    Ingested,
    Step,
    decide_groups,
    prepare_group,
    prepared_schema,
    run_maps,
    run_source,
)
from storage.tier import Tier

log = logging.getLogger(__name__)

MANIFEST_SCHEMA = pa.schema(
    [
        pa.field("kind", pa.string(), nullable=False),  # "file" | "rows" | "stat"
        pa.field("table", pa.string(), nullable=False),  # output or staging table; stat name for "stat"
        pa.field("name", pa.string(), nullable=False),  # file path relative to ``table``
        pa.field("value", pa.int64(), nullable=False),
    ]
)
ITEM_COLUMN = "id"  # what spark.range and ray.data.range call their column


@dataclass(frozen=True)
class SourceItem:
    """One work item of the ingest stage: a raw file (chunk row) of a source."""

    source: int  # index into Ingest.sources
    row: int  # chunk row


@dataclass(frozen=True)
class FileItem:
    """One work item of the ingest stage: a Parquet file of an input Delta version."""

    dataset: DatasetInput
    file: str  # relative to the dataset's table folder


class Manifest:
    """Writers and counters of one task call; :meth:`close` turns them into manifest rows."""

    def __init__(self, config: ExecutionConfig, label: str) -> None:
        self.config, self.label = config, label
        self.writers: dict[str, PartWriter] = {}
        self.rows: Counter[str] = Counter()
        self.stats: Counter[str] = Counter()

    def write(self, table: TableTarget, schema: pa.Schema, batch: pa.RecordBatch | pa.Table) -> None:
        key = f"{table.table_path}/{table.prefix}"
        writer = self.writers.get(key)
        if writer is None:
            s = self.config
            writer = self.writers[key] = PartWriter(
                table.tier,
                table.table_path,
                table.prefix,
                schema,
                file_rows=s.parquet_file_rows,
                row_group_rows=s.parquet_row_group_rows,
                row_group_bytes=s.parquet_row_group_bytes,
                part_label=self.label,
            )
        writer.write(batch)
        self.rows[table.table_path] += batch.num_rows

    def close(self) -> pa.Table:
        rows: list[dict] = []
        for writer in self.writers.values():
            rows += [{"kind": "file", "table": writer.table_path, "name": f, "value": 0} for f in writer.close()]
        rows += [{"kind": "rows", "table": t, "name": "", "value": n} for t, n in self.rows.items()]
        rows += [{"kind": "stat", "table": k, "name": "", "value": v} for k, v in self.stats.items()]
        return pa.Table.from_pylist(rows, schema=MANIFEST_SCHEMA)


def _table(batches: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch]) -> pa.Table:
    if isinstance(batches, pa.Table):
        return batches
    if isinstance(batches, pa.RecordBatch):
        return pa.Table.from_batches([batches])
    return pa.Table.from_batches(list(batches))


def _batches(data: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Stream batches whether a task got a table (Ray) or a partition's batch iterator (Spark)."""
    if isinstance(data, pa.Table):
        yield from data.to_batches()
    elif isinstance(data, pa.RecordBatch):
        yield data
    else:
        yield from data


def _first(table: pa.Table, column: str) -> str:
    return str(table.column(column)[0].as_py())


@dataclass(frozen=True)
class Ingest:
    """Stage 0: read work items (raw files via convert, or input Delta files), then the first maps.

    Each item is a partition (:mod:`pipelines.partitions`): what it yields is numbered with row keys
    (by the item's index, so not by how items are batched into tasks), its ids recorded, passed
    through the first map steps, written into an attempt folder of its own and then recorded. Only
    the items ``todo`` (indices into ``items``) are run: a resumed run reuses the others' records.
    The task returns one ``stat`` row per partition it recorded; the driver reads the records.
    """

    run_id: str
    config: ExecutionConfig
    sources: tuple[tuple[pa.Table, ConvertOperator, int], ...]  # (chunk rows, convert, input position)
    items: tuple[SourceItem | FileItem, ...]
    keys: tuple[str, ...]  # each item's partition key
    todo: tuple[int, ...]  # the items to run: task ids 0..len(todo)-1 index this
    maps: tuple[Step, ...]
    partitions: TierPartitions

    def __call__(self, batch: pa.Table | pa.RecordBatch) -> pa.Table:
        ids = _table(batch).column(ITEM_COLUMN).to_pylist()
        if not ids:
            return MANIFEST_SCHEMA.empty_table()
        return pa.concat_tables([self._partition(self.todo[j]) for j in ids])

    def _partition(self, i: int) -> pa.Table:
        item, folder = self.items[i], self.partitions.attempt(i)
        targets = {kind: TableTarget(self.partitions.tier, f"{folder}/{kind}", "parts") for kind in PARTITION_KINDS}
        out = Manifest(self.config, f"ingest-{i:06d}")
        if isinstance(item, SourceItem):
            rows, batches = Ingested(i, self.sources[item.source][2]), self._read(item, out, targets)
        else:
            rows, batches = Ingested(i, item.dataset.position), self._read_file(item)
        for batch in batches:
            samples, ingested = rows(batch)
            out.write(targets[INGESTED], INGESTED_SCHEMA, ingested)
            kept, lineage = run_maps(samples, self.maps, self.run_id)
            for records in lineage:
                out.write(targets[LINEAGE], LINEAGE_SCHEMA, records)
            out.write(targets[SAMPLES], STAGED_SCHEMA, kept)
        kinds = {t.table_path: kind for kind, t in targets.items()}
        files: dict[str, list[str]] = {kind: [] for kind in PARTITION_KINDS}
        for row in out.close().to_pylist():
            if row["kind"] == "file":
                files[kinds[row["table"]]].append(f"{row['table']}/{row['name']}")
        counters = {**out.stats, **{f"{ROWS}{kind}": out.rows[t.table_path] for kind, t in targets.items()}}
        checkpoint(f"partition.{i}.staged")
        self.partitions.complete(i, self.keys[i], files, counters)
        checkpoint(f"partition.{i}.recorded")
        return pa.Table.from_pylist(
            [{"kind": "stat", "table": "partitions", "name": "", "value": 1}], schema=MANIFEST_SCHEMA
        )

    def _read(self, item: SourceItem, out: Manifest, targets: dict[str, TableTarget]) -> Iterator[pa.RecordBatch]:
        chunks, convert, _ = self.sources[item.source]
        chunk = chunks.slice(item.row, 1).to_batches()[0]
        for res in run_source(convert, chunk, self.run_id):
            out.write(targets[LINEAGE], LINEAGE_SCHEMA, res.lineage)
            if res.quarantine is not None and res.quarantine.num_rows:
                out.write(targets[QUARANTINE], QUARANTINE_SCHEMA, res.quarantine)
                for v in pc.value_counts(res.quarantine.column("reason")).to_pylist():
                    out.stats[f"quarantine.{v['values']}"] += v["counts"]
            out.stats.update(res.stats)
            yield res.samples

    def _read_file(self, item: FileItem) -> Iterator[pa.RecordBatch]:
        tier = item.dataset.tier
        with tier.filesystem.open_input_file(tier.path(item.dataset.table_path, item.file)) as fh:
            for batch in pq.ParquetFile(fh).iter_batches(batch_size=self.config.batch_rows):
                yield conform(batch, SAMPLE_SCHEMA)


@dataclass(frozen=True)
class ReadFiles:
    """Read staged Parquet files (a column of tier paths) back as batches, optionally some columns."""

    tier: Tier
    schema: pa.Schema
    batch_rows: int

    def __call__(self, paths: Iterable[str]) -> Iterator[pa.RecordBatch]:
        columns = self.schema.names
        for path in paths:
            with self.tier.filesystem.open_input_file(self.tier.path(path)) as fh:
                for batch in pq.ParquetFile(fh).iter_batches(batch_size=self.batch_rows, columns=columns):
                    yield conform(batch, self.schema)


@dataclass(frozen=True)
class Group:
    """A group step over complete key groups: lineage records, and the row keys of dropped samples."""

    run_id: str
    config: ExecutionConfig
    step: Step
    lineage: TableTarget
    dropped: TableTarget

    def __call__(self, batches: pa.Table | Iterable[pa.RecordBatch]) -> pa.Table:
        table = _table(batches)
        if table.num_rows == 0:
            return MANIFEST_SCHEMA.empty_table()
        columns = self.step.operator.decided_columns  # type: ignore[attr-defined]
        table = table.select([*columns, ROW_KEY]).combine_chunks()
        out = Manifest(self.config, f"group{self.step.index}-{_first(table, 'sample_id')}")
        decided = decide_groups(self.step, table, self.run_id)
        out.write(self.lineage, LINEAGE_SCHEMA, decided.lineage)
        out.write(self.dropped, ROW_KEYS_SCHEMA, decided.dropped)
        return out.close()


@dataclass(frozen=True)
class Maps:
    """Fused map steps over surviving samples; survivors and lineage go to staging."""

    run_id: str
    config: ExecutionConfig
    stage: str
    maps: tuple[Step, ...]
    samples: TableTarget
    lineage: TableTarget

    def __call__(self, batches: pa.Table | Iterable[pa.RecordBatch]) -> pa.Table:
        out: Manifest | None = None
        for batch in _batches(batches):
            if batch.num_rows == 0:
                continue
            batch = conform(batch, STAGED_SCHEMA)
            if out is None:
                out = Manifest(self.config, f"{self.stage}-{batch.column('sample_id')[0].as_py()}")
            kept, lineage = run_maps(batch, self.maps, self.run_id)
            for records in lineage:
                out.write(self.lineage, LINEAGE_SCHEMA, records)
            out.write(self.samples, STAGED_SCHEMA, kept)
        return out.close() if out is not None else MANIFEST_SCHEMA.empty_table()


@dataclass(frozen=True)
class WriteSorted:
    """Write whole part files of a sorted table: rows numbered with their file (:class:`Numbered`),
    in (file, keys) order, one file per number, as every engine cuts them
    (:mod:`pipelines.engines.sorted_files`)."""

    config: ExecutionConfig
    target: TableTarget
    schema: pa.Schema
    keys: tuple[str, ...]
    files: int  # the table's file count

    @property
    def numbered(self) -> Numbered:
        return Numbered(self.files)

    @property
    def numbered_schema(self) -> pa.Schema:
        return self.schema.append(FILE_FIELD)

    def __call__(self, batches: pa.Table | Iterable[pa.RecordBatch]) -> pa.Table:
        out = SortedFiles(self.config, self.target, self.schema, self.keys)
        for batch in _batches(batches):
            out.write_numbered(batch)
        rows = [{"kind": "file", "table": self.target.table_path, "name": f, "value": 0} for f in out.close()]
        if out.rows:
            rows.append({"kind": "rows", "table": self.target.table_path, "name": "", "value": out.rows})
        return pa.Table.from_pylist(rows, schema=MANIFEST_SCHEMA)


@dataclass
class Collected:
    """Manifests of one stage, summed on the driver."""

    files: dict[str, list[str]]
    rows: Counter[str]
    stats: Counter[str]

    @classmethod
    def of(cls, manifests: Sequence[pa.Table]) -> Collected:
        files: dict[str, list[str]] = {}
        rows: Counter[str] = Counter()
        stats: Counter[str] = Counter()
        for m in manifests:
            for r in m.to_pylist():
                if r["kind"] == "file":
                    files.setdefault(r["table"], []).append(r["name"])
                elif r["kind"] == "rows":
                    rows[r["table"]] += r["value"]
                else:
                    stats[r["table"]] += r["value"]
        for names in files.values():
            names.sort()
        return cls(files, rows, stats)

    def paths(self, table: TableTarget) -> list[str]:
        """Tier-relative paths of the files written into ``table``."""
        return [f"{table.table_path}/{f}" for f in self.files.get(table.table_path, [])]

    def relative(self, table: TableTarget) -> list[str]:
        """Files written into ``table``, relative to the table folder (what a Delta commit names)."""
        return list(self.files.get(table.table_path, []))


@dataclass(frozen=True)
class Prepare:
    """A group step's prepare map: staged rows of its ``columns`` to its prepared rows, into staging."""

    config: ExecutionConfig
    step: Step
    prepared: TableTarget

    def __call__(self, batches: pa.Table | pa.RecordBatch) -> pa.Table:
        out: Manifest | None = None
        for batch in _batches(batches):
            if batch.num_rows == 0:
                continue
            if out is None:
                out = Manifest(self.config, f"prepare{self.step.index}-{batch.column('sample_id')[0].as_py()}")
            out.write(self.prepared, prepared_schema(self.step), prepare_group(self.step, batch))
        return out.close() if out is not None else MANIFEST_SCHEMA.empty_table()
