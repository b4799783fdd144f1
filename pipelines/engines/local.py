"""The in-process engine: pyarrow streaming for map steps, DuckDB for shuffles, joins and sorts.

Memory stays bounded: map steps stream batch by batch, intermediate samples go to Parquet in a
local staging folder, and DuckDB (with a memory limit and a spill folder) does the group-by
partitioning, the anti-join that removes dropped rows (by row key) and the final sort by
``sample_id``.

Each ingest work item (a raw file, or an input dataset version) is a *partition*: read, numbered
and passed through the first map steps into files of its own, then recorded in the run's staging
folder (:mod:`pipelines.partitions`). A resumed run (same run id) reuses every recorded partition
and redoes the rest, then runs the barrier steps and the final sorts over all of them, as an
uninterrupted run does: partitions are made and read in item order either way, so the output is
the same bytes. Crash points: ``partition.<i>.staged`` (files written, not recorded),
``partition.<i>.recorded``, ``local.partitions_done`` (before the barrier steps), ``local.data_written``.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from operators.base import ClusterOperator, GroupOperator
from operators.lineage_records import LINEAGE_SCHEMA
from operators.schema import QUARANTINE_SCHEMA, SAMPLE_SCHEMA
from operators.threads import ordered_map
from pipelines.arrow_util import conform
from pipelines.config import ExecutionConfig
from pipelines.engines.base import DatasetInput, Engine, Job, JobResult, SourceInput, TableTarget
from pipelines.engines.sorted_files import SORT_KEYS_DATA, SORT_KEYS_LINEAGE, SortedFiles, file_count, file_of
from pipelines.faults import checkpoint
from pipelines.integrity import INGESTED_SCHEMA, check_unique_ids
from pipelines.parquet_out import PartWriter
from pipelines.partitions import (
    INGESTED,
    LINEAGE,
    QUARANTINE,
    SAMPLES,
    Partition,
    Partitions,
    clear_scratch,
    dataset_key,
    source_key,
)
from pipelines.stages import (
    ROW_KEY,
    ROW_KEYS_SCHEMA,
    STAGED_SCHEMA,
    Ingested,
    Step,
    decide_clusters,
    decide_groups,
    prepare_group,
    prepared_schema,
    run_maps,
    run_source,
    segments,
    sketch,
    staged,
)
from storage.delta import version_dataset
from storage.tier import Tier, local_tier

log = logging.getLogger(__name__)

_MAX_BUCKETS = 4096  # buckets a final sort splits its input into at most (a small row group buffered each)

PARTITION_TABLES = {
    SAMPLES: STAGED_SCHEMA,
    LINEAGE: LINEAGE_SCHEMA,
    QUARANTINE: QUARANTINE_SCHEMA,
    INGESTED: INGESTED_SCHEMA,
}
_T = TypeVar("_T")
_R = TypeVar("_R")

RECORDS = "records"  # a partition's counter of records read, for the progress display only


@dataclass(frozen=True)
class _Read:
    """What a work item yields per batch: staged samples, their ids, and convert's lineage and quarantine."""

    samples: pa.RecordBatch
    ids: pa.RecordBatch
    lineage: pa.RecordBatch | None
    quarantine: pa.RecordBatch | None


class LocalEngine(Engine):
    name = "local"

    def __init__(self, config: ExecutionConfig) -> None:
        self.config = config

    # -- plumbing ---------------------------------------------------------------------------
    def _writer(self, tier: Tier, table_path: str, prefix: str, schema: pa.Schema) -> PartWriter:
        s = self.config
        return PartWriter(
            tier,
            table_path,
            prefix,
            schema,
            file_rows=s.parquet_file_rows,
            row_group_rows=s.parquet_row_group_rows,
            row_group_bytes=s.parquet_row_group_bytes,
        )

    def _target_writer(self, target: TableTarget, schema: pa.Schema) -> PartWriter:
        return self._writer(target.tier, target.table_path, target.prefix, schema)

    def _in_order(self, fn: Callable[[_T], _R], items: Iterable[_T], maps: tuple[Step, ...]) -> Iterator[_R]:
        """``map(fn, items)``, where ``fn`` runs ``maps`` on an item: on a thread per core when every step
        is :attr:`~operators.base.MapOperator.concurrent` (their kernels release the GIL, so the segment's
        batches use every core, where one at a time used one), else here. Results come in item order
        either way, so the partition's files are the same bytes; ``items`` is read on this thread."""
        if maps and self.config.cores > 1 and all(getattr(step.operator, "concurrent", False) for step in maps):
            return ordered_map(fn, items, self.config.cores)
        return map(fn, items)

    def _duckdb(self, spill: Path) -> duckdb.DuckDBPyConnection:
        con = duckdb.connect()
        con.execute(f"SET memory_limit='{self.config.duckdb_memory_limit}'")
        con.execute(f"SET temp_directory='{spill}'")
        con.execute("SET preserve_insertion_order=false")
        return con

    # -- the job ----------------------------------------------------------------------------
    def execute(self, job: Job) -> JobResult:
        # Give freed Arrow buffers back to the OS at once: stages free large tables one after
        # another, and a retaining allocator would make peak RSS the sum of the stages.
        with contextlib.suppress(NotImplementedError):
            pa.jemalloc_set_decay_ms(0)
        staging_root = Path(self.config.staging_dir) / job.run_id
        clear_scratch(staging_root)  # an earlier attempt's scratch; its recorded partitions stay
        staging_root.mkdir(parents=True, exist_ok=True)
        staging = local_tier(staging_root, name="staging")
        try:
            with self._duckdb(staging_root / "spill") as con:
                return self._execute(job, staging, con, Partitions(staging_root))
        finally:
            # the partitions stay until the run commits (lineage.runs), so a killed or failed run resumes
            clear_scratch(staging_root)

    def _execute(self, job: Job, staging: Tier, con: duckdb.DuckDBPyConnection, parts: Partitions) -> JobResult:
        stats: Counter[str] = Counter()
        lineage_w = self._writer(staging, "lineage", "parts", LINEAGE_SCHEMA)  # the barrier steps' records
        segs = segments(job.operators)

        done, reused = self._partitions(job, parts, segs[0].maps, stats)
        checkpoint("local.partitions_done")
        quarantine_files = self._copy(job.quarantine, QUARANTINE_SCHEMA, [p for d in done for p in d.paths(QUARANTINE)])
        samples = [p for d in done for p in d.paths(SAMPLES)]
        check_unique_ids(staging, [p for d in done for p in d.paths(INGESTED)], self.config)
        sketches: tuple[list[str], pa.Schema] | None = None
        for number, seg in enumerate(segs[1:], start=1):
            assert seg.group is not None
            name = f"barrier-{number}"
            if isinstance(seg.group.operator, ClusterOperator):
                dropped, sketches = self._cluster(job, staging, con, seg.group, samples, lineage_w, name)
            else:
                dropped = self._group(job, staging, con, seg.group, samples, lineage_w, name)
            survivors = self._anti_join(con, samples, dropped)
            samples = self._run_maps(job, staging, f"samples-{number}", survivors, seg.maps, lineage_w)

        lineage_files = [p for d in done for p in d.paths(LINEAGE)]
        lineage_files += [staging.path("lineage", f) for f in lineage_w.close()]
        data_files = self._write_sorted(con, staging, "sorted-data", samples, SORT_KEYS_DATA, SAMPLE_SCHEMA, job.data)
        checkpoint("local.data_written")
        lineage_out = self._write_sorted(
            con, staging, "sorted-lineage", lineage_files, SORT_KEYS_LINEAGE, LINEAGE_SCHEMA, job.lineage
        )
        signature_files = self._write_signatures(job, staging, con, sketches, samples)
        return JobResult(data_files, lineage_out, quarantine_files, signature_files, dict(stats), len(done), reused)

    # -- the partitions: one per ingest work item, through the first map steps ----------------
    def _partitions(
        self, job: Job, parts: Partitions, maps: tuple[Step, ...], stats: Counter[str]
    ) -> tuple[list[Partition], list[int]]:
        """Every work item's partition, reused when an earlier attempt of this run recorded it
        (:mod:`pipelines.partitions`), else made and recorded now; in item order, as row keys number them.
        Also the indices of those reused."""
        items: list[tuple[str, int, Callable[[Ingested, Counter[str]], Iterator[_Read]]]] = []
        for source in job.sources:
            paths = source.chunks.column("path").to_pylist()
            for row, chunk in enumerate(source.chunks.to_batches(max_chunksize=1)):
                read = functools.partial(self._read_source, job, source, chunk)
                items.append((source_key(source.position, paths[row]), source.position, read))
        for ds in job.datasets:
            key = dataset_key(ds.position, ds.table_path, ds.delta_version)
            items.append((key, ds.position, functools.partial(self._read_dataset, job, ds)))
        done: list[Partition] = []
        reused: list[int] = []
        for index, (key, position, read) in enumerate(items):
            part = parts.reuse(index, key)
            if part is None:
                part = self._partition(job, parts, index, key, Ingested(index, position), read, maps)
            else:
                reused.append(index)
                job.progress("records", part.counters.get(RECORDS, 0))
            if key.startswith("files:"):
                job.progress("files", 1)
            stats.update({k: v for k, v in part.counters.items() if k != RECORDS})
            done.append(part)
        if reused:
            log.info("run %s: reused %d of %d recorded partitions", job.run_id, len(reused), len(items))
        return done, reused

    def _partition(
        self,
        job: Job,
        parts: Partitions,
        index: int,
        key: str,
        rows: Ingested,
        read: Callable[[Ingested, Counter[str]], Iterator[_Read]],
        maps: tuple[Step, ...],
    ) -> Partition:
        """One work item read, numbered (its ids to ``ingested``) and through ``maps``; then recorded."""
        folder = local_tier(parts.begin(index), name="partition")
        writers = {kind: self._writer(folder, kind, "parts", schema) for kind, schema in PARTITION_TABLES.items()}
        counters: Counter[str] = Counter()

        def through_maps(got: _Read) -> tuple[_Read, pa.RecordBatch, list[pa.RecordBatch]]:
            return got, *run_maps(got.samples, maps, job.run_id)

        for got, kept, lineage in self._in_order(through_maps, read(rows, counters), maps):
            if got.lineage is not None:
                writers[LINEAGE].write(got.lineage)
            if got.quarantine is not None:
                writers[QUARANTINE].write(got.quarantine)
            writers[INGESTED].write(got.ids)
            for records in lineage:
                writers[LINEAGE].write(records)
            writers[SAMPLES].write(kept)
        files = {kind: [f"{kind}/{f}" for f in w.close()] for kind, w in writers.items()}
        checkpoint(f"partition.{index}.staged")
        part = parts.complete(index, key, files, dict(counters))
        checkpoint(f"partition.{index}.recorded")
        return part

    def _read_source(
        self, job: Job, source: SourceInput, chunk: pa.RecordBatch, rows: Ingested, counters: Counter[str]
    ) -> Iterator[_Read]:
        """A raw file through convert (step 0): samples with row keys, lineage, quarantine and counters."""
        for out in run_source(source.convert, chunk, job.run_id):
            quarantine = out.quarantine if out.quarantine is not None and out.quarantine.num_rows else None
            if quarantine is not None:
                for item in pc.value_counts(quarantine.column("reason")).to_pylist():
                    counters[f"quarantine.{item['values']}"] += item["counts"]
            counters.update(out.stats)
            records = out.samples.num_rows + (quarantine.num_rows if quarantine is not None else 0)
            counters[RECORDS] += records
            job.progress("records", records)
            samples, ids = rows(out.samples)
            yield _Read(samples, ids, out.lineage, quarantine)

    def _read_dataset(self, job: Job, ds: DatasetInput, rows: Ingested, counters: Counter[str]) -> Iterator[_Read]:
        """A catalog dataset version's samples with row keys (no lineage: they were converted before)."""
        dataset = version_dataset(ds.tier, ds.table_path, ds.delta_version)
        for batch in dataset.to_batches(batch_size=self.config.batch_rows):
            counters[RECORDS] += batch.num_rows
            job.progress("records", batch.num_rows)
            samples, ids = rows(conform(batch, SAMPLE_SCHEMA))
            yield _Read(samples, ids, None, None)

    def _copy(self, target: TableTarget, schema: pa.Schema, files: list[str]) -> list[str]:
        """Staged files into ``target``'s part files, in order (the partitions' quarantine)."""
        writer = self._target_writer(target, schema)
        for file in files:
            for batch in pq.ParquetFile(file).iter_batches(batch_size=self.config.batch_rows):
                writer.write(conform(batch, schema))
        return writer.close()

    def _run_maps(
        self,
        job: Job,
        staging: Tier,
        name: str,
        batches: Iterator[pa.RecordBatch],
        maps: tuple[Step, ...],
        lineage_w: PartWriter,
    ) -> list[str]:
        writer = self._writer(staging, name, "parts", STAGED_SCHEMA)
        for kept, lineage in self._in_order(lambda batch: run_maps(batch, maps, job.run_id), batches, maps):
            for records in lineage:
                lineage_w.write(records)
            writer.write(kept)
        return [staging.path(name, f) for f in writer.close()]

    def _group(
        self,
        job: Job,
        staging: Tier,
        con: duckdb.DuckDBPyConnection,
        step: Step,
        samples: list[str],
        lineage_w: PartWriter,
        name: str,
    ) -> list[str]:
        """Run a group step over complete key groups; return files of the dropped rows' keys."""
        op = step.operator
        assert isinstance(op, GroupOperator)
        dropped_w = self._writer(staging, name, "dropped", ROW_KEYS_SCHEMA)
        if not samples:
            return []
        columns = [*op.columns, ROW_KEY]
        if op.prepared_schema is not None:  # e.g. sizes instead of texts: streamed, then one partition
            if not op.whole_input:
                raise NotImplementedError(f"{op.name}: a prepared group step runs over the whole input")
            prepared = [
                prepare_group(step, batch)
                for file in samples
                for batch in pq.ParquetFile(file).iter_batches(batch_size=self.config.batch_rows, columns=columns)
                if batch.num_rows
            ]
            tables: Iterable[pa.Table] = [pa.Table.from_batches(prepared, schema=prepared_schema(step))]
            self._decide_parts(job, step, tables, lineage_w, dropped_w)
            return [staging.path(name, f) for f in dropped_w.close()]
        cols = ", ".join(f'"{c}"' for c in columns)
        rows = con.sql("SELECT count(*) FROM read_parquet(?)", params=[samples]).fetchall()[0][0]
        parts = 1 if op.whole_input else max(1, math.ceil(rows / self.config.group_partition_rows))
        if parts == 1:
            tables = [con.sql(f"SELECT {cols} FROM read_parquet(?)", params=[samples]).to_arrow_table()]
        else:  # hash-partition so each part holds whole groups and fits in memory
            out_dir = staging.path(name, "keys")
            Path(out_dir).parent.mkdir(parents=True, exist_ok=True)
            con.sql(
                f'COPY (SELECT {cols}, hash("{op.key}") % {parts} AS _part FROM read_parquet(?)) '
                f"TO '{out_dir}' (FORMAT parquet, PARTITION_BY (_part))",
                params=[samples],
            )
            tables = (pq.read_table(p, columns=columns) for p in sorted(Path(out_dir).glob("_part=*")))
        self._decide_parts(job, step, tables, lineage_w, dropped_w)
        return [staging.path(name, f) for f in dropped_w.close()]

    def _decide_parts(
        self, job: Job, step: Step, tables: Iterable[pa.Table], lineage_w: PartWriter, dropped_w: PartWriter
    ) -> None:
        """Decide each part (complete key groups): lineage and the dropped rows' keys to their writers."""
        for table in tables:
            table = table.combine_chunks() if isinstance(table, pa.Table) else pa.table(table)
            decided = decide_groups(step, table, job.run_id)
            lineage_w.write(decided.lineage)
            dropped_w.write(decided.dropped)
            job.progress(f"step{step.index}.{step.operator.name}", table.num_rows)

    def _cluster(
        self,
        job: Job,
        staging: Tier,
        con: duckdb.DuckDBPyConnection,
        step: Step,
        samples: list[str],
        lineage_w: PartWriter,
        name: str,
    ) -> tuple[list[str], tuple[list[str], pa.Schema]]:
        """Sketch every sample (streaming), cluster all sketches at once; return (dropped, sketches).

        Texts for exact verification go to an Arrow IPC file that is memory-mapped back, so they
        are paged in only for the samples that share a bucket with another.
        """
        op = step.operator
        assert isinstance(op, ClusterOperator)
        sketch_schema = staged(op.sketch_schema)
        sketch_w = self._writer(staging, name, "sketches", sketch_schema)
        text_path = Path(staging.path(name, "texts.arrow"))
        text_path.parent.mkdir(parents=True, exist_ok=True)
        text_schema = pa.schema([pa.field("text", pa.string())])
        with pa.OSFile(str(text_path), "wb") as sink, pa.ipc.new_file(sink, text_schema) as texts_out:
            for file in samples:
                for batch in pq.ParquetFile(file).iter_batches(
                    batch_size=self.config.batch_rows, columns=list(dict.fromkeys([*op.sketch_columns, ROW_KEY]))
                ):
                    sketch_w.write(sketch(step, batch))
                    if op.needs_texts:
                        texts_out.write_batch(pa.record_batch([batch.column("text")], schema=text_schema))
                    job.progress(f"step{step.index}.{op.name}.sketch", batch.num_rows)
        sketch_files = [staging.path(name, f) for f in sketch_w.close()]
        sketches = pq.read_table(sketch_files, schema=sketch_schema) if sketch_files else sketch_schema.empty_table()
        with pa.memory_map(str(text_path)) as mapped:
            texts = pa.ipc.open_file(mapped).read_all().column("text") if op.needs_texts else None
            published = self._published_sketches(job, op)
            fetch = functools.partial(self._published_texts, job, con)
            decided = decide_clusters(step, sketches, texts, job.run_id, published, fetch)
        lineage_w.write(decided.lineage)
        job.progress(f"step{step.index}.{op.name}", sketches.num_rows)
        dropped_w = self._writer(staging, name, "dropped", ROW_KEYS_SCHEMA)
        dropped_w.write(decided.dropped)
        return [staging.path(name, f) for f in dropped_w.close()], (sketch_files, op.sketch_schema)

    def _published_sketches(self, job: Job, op: ClusterOperator) -> pa.Table | None:
        tables = [version_dataset(p.tier, p.signatures_table, p.signatures_version).to_table() for p in job.published]
        return pa.concat_tables([_conform(t, op.sketch_schema) for t in tables]) if tables else None

    def _published_texts(self, job: Job, con: duckdb.DuckDBPyConnection, ids: pa.Array) -> pa.ChunkedArray:
        """Texts of published samples by id, in the order asked (only MinHash candidates are asked)."""
        wanted = pa.table({"sample_id": ids, "_pos": pa.array(range(len(ids)), pa.int64())})
        found = []
        for p in job.published:
            con.register("published_data", version_dataset(p.tier, p.data_table, p.data_version))
            con.register("wanted", wanted)
            found.append(
                con.sql("SELECT w._pos, d.text FROM wanted w JOIN published_data d USING (sample_id)").to_arrow_table()
            )
            con.unregister("published_data")
            con.unregister("wanted")
        table = pa.concat_tables(found).sort_by("_pos") if found else pa.table({"_pos": [], "text": []})
        if table.num_rows != len(ids):
            raise RuntimeError(f"published releases hold texts for {table.num_rows} of {len(ids)} signatures")
        return table.column("text")

    def _write_signatures(
        self,
        job: Job,
        staging: Tier,
        con: duckdb.DuckDBPyConnection,
        sketches: tuple[list[str], pa.Schema] | None,
        samples: list[str],
    ) -> list[str]:
        """Sketches of the samples that made it to the output, for later incremental dedupes."""
        if job.signatures is None or sketches is None or not sketches[0] or not samples:
            return []
        sketch_files, schema = sketches
        # the output's row keys as one Arrow array (a C++ hash set for is_in): 8 bytes per sample,
        # where a DuckDB join of the wide signature rows ran out of its memory budget at 1M docs
        output_rows = pa.chunked_array(
            [pq.read_table(f, columns=[ROW_KEY]).column(0).combine_chunks() for f in samples], pa.int64()
        ).combine_chunks()
        kept_w = self._writer(staging, "signatures-kept", "parts", schema)
        for file in sketch_files:
            for batch in pq.ParquetFile(file).iter_batches(batch_size=self.config.batch_rows):
                kept = batch.filter(pc.is_in(batch.column(ROW_KEY), value_set=output_rows))
                kept_w.write(conform(kept, schema))
        kept = [staging.path("signatures-kept", f) for f in kept_w.close()]
        return self._write_sorted(con, staging, "sorted-signatures", kept, SORT_KEYS_DATA, schema, job.signatures)

    def _anti_join(
        self, con: duckdb.DuckDBPyConnection, samples: list[str], dropped: list[str]
    ) -> Iterator[pa.RecordBatch]:
        if not samples:
            return
        if dropped:
            sql = f"SELECT s.* FROM read_parquet(?) s ANTI JOIN read_parquet(?) d USING ({ROW_KEY})"
            reader = con.sql(sql, params=[samples, dropped]).to_arrow_reader(self.config.batch_rows)
        else:
            reader = con.sql("SELECT * FROM read_parquet(?)", params=[samples]).to_arrow_reader(self.config.batch_rows)
        for batch in reader:
            yield conform(batch, STAGED_SCHEMA)

    def _bucketize(self, staging: Tier, name: str, files: list[str], schema: pa.Schema, count: int) -> list[list[str]]:
        """Split files into ``count`` buckets by :func:`file_of` their sample ids, streaming; the
        buckets' files in bucket order (a bucket with no rows has none).

        Each bucket writer buffers only a small row group, so memory stays flat for any size.
        """
        group_rows = max(512, 65536 // count)
        writers = [
            PartWriter(
                staging, name, f"b{k:05d}", schema, file_rows=self.config.parquet_file_rows, row_group_rows=group_rows
            )
            for k in range(count)
        ]
        for file in files:
            for batch in pq.ParquetFile(file).iter_batches(batch_size=self.config.batch_rows):
                batch = conform(batch, schema)
                keys = file_of(batch.column("sample_id"), count)
                order = np.argsort(keys, kind="stable")
                ordered, keys = batch.take(pa.array(order)), keys[order]
                bounds = np.searchsorted(keys, np.arange(count + 1))
                for k in np.flatnonzero(np.diff(bounds)):
                    writers[k].write(ordered.slice(bounds[k], bounds[k + 1] - bounds[k]))
        return [[staging.path(name, f) for f in w.close()] for w in writers]

    def _write_sorted(
        self,
        con: duckdb.DuckDBPyConnection,
        staging: Tier,
        name: str,
        files: list[str],
        keys: tuple[str, ...],
        schema: pa.Schema,
        target: TableTarget,
    ) -> list[str]:
        """Write ``files`` sorted by ``keys`` so row-group stats prune lookups, cut into part files
        as every engine cuts them (:mod:`pipelines.engines.sorted_files`).

        Only one bucket is sorted at a time, which bounds memory for any input size: a file's rows
        are split further into ``per_file`` finer buckets of about ``sort_bucket_bytes`` when they
        are larger (the cut nests, so the files are the same).
        """
        out = SortedFiles(self.config, target, schema, keys)
        count = file_count(sum(pq.ParquetFile(f).metadata.num_rows for f in files), self.config.parquet_file_rows)
        if count == 0:
            return out.close()
        size = sum(Path(f).stat().st_size for f in files)
        per_file = max(1, min(math.ceil(size / count / self.config.sort_bucket_bytes), _MAX_BUCKETS // count))
        buckets = [files] if count * per_file == 1 else self._bucketize(staging, name, files, schema, count * per_file)
        columns = ", ".join(f'"{f.name}"' for f in schema)
        order = ", ".join(f'"{k}"' for k in keys)
        for number, bucket in enumerate(buckets):
            if not bucket:
                continue
            sql = f"SELECT {columns} FROM read_parquet(?) ORDER BY {order}"
            for batch in con.sql(sql, params=[bucket]).to_arrow_reader(self.config.batch_rows):
                out.write(batch, number // per_file)
        return out.close()


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Stored sketches in this run's sketch schema: a nullable column they lack (a ``priority`` this
    run ranks sources by) is null, a column this run does not read is left out."""
    columns = [
        table.column(f.name) if f.name in table.column_names else pa.nulls(table.num_rows, f.type) for f in schema
    ]
    return pa.table(columns, schema=schema) if columns else table
