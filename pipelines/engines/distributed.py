"""The plan both cluster engines run; Spark and Ray differ only in how rows reach tasks.

A job becomes a few stages, each a distributed action whose tasks write Parquet files and return
manifests (see :mod:`pipelines.engines.tasks`):

1. ingest: one work item (raw file, or Parquet file of an input Delta version) per task, then the
   first fused map segment. Each item is a *partition* (:mod:`pipelines.partitions`,
   :class:`~pipelines.partitions.TierPartitions`): its samples (with row keys, see
   :mod:`pipelines.stages`), ingested ids, lineage and quarantine go to a folder of its own in
   staging, then its record. A resumed run (same run id, so the same staging folder) runs only the
   items without a trusted record and reads the rest from their records; everything from here on
   runs again over all of them, in item order, so the output is the bytes of an uninterrupted run.
   The quarantine files are copied into the run's subfolder of the quarantine table, and the
   ingested ids are checked for duplicates (:func:`pipelines.integrity.check_unique_ids`);
2. per group step: shuffle the operator's ``columns`` by ``key`` so each task holds complete key
   groups, decide; per cluster step (MinHash): sketch, bucket stars, distributed connected
   components, then the operator's clustering per partition of complete components (see
   :mod:`pipelines.engines.dedupe_cluster`); then anti-join the dropped row keys out of the samples and
   run the next fused maps;
3. final writes: data sorted by ``sample_id`` and lineage by ``(sample_id, step)``, globally, in
   the part files every engine cuts (:mod:`pipelines.engines.sorted_files`): rows numbered with
   their file, shuffled by it so each task holds whole files, sorted within; each task writes its
   files into the run's subfolder; after a cluster step, the sketches of the samples that reached
   the output, sorted likewise.

Staging lives on the output tier (``_staging/run-<id>``, :func:`storage.layout.staging_prefix`),
which every executor can reach. A job removes its scratch when it ends but keeps the recorded
partitions, as the local engine does: the runner deletes them when the run commits, ``lineage gc``
once the run cannot resume (:mod:`lineage.resume`). A failed job also removes what it wrote into
the run's subfolders; nothing is committed by an engine either way. Crash points:
``partition.<i>.staged`` and ``partition.<i>.recorded`` (in the task), ``<engine>.partitions_done``
and ``<engine>.data_written`` (on the driver).
"""

from __future__ import annotations

import logging
import math
from abc import abstractmethod
from collections import Counter
from collections.abc import Callable
from pathlib import Path, PurePosixPath

import pyarrow as pa
import pyarrow.fs as pafs

import pipelines
from operators.base import ClusterOperator, GroupOperator
from operators.lineage_records import LINEAGE_SCHEMA
from operators.schema import SAMPLE_SCHEMA
from pipelines.config import ExecutionConfig
from pipelines.engines.base import Engine, Job, JobResult, TableTarget
from pipelines.engines.dedupe_cluster import (
    Buckets,
    ClusterGroups,
    Sketch,
    WriteRows,
    bucket_column,
    sketch_input_schema,
)
from pipelines.engines.sorted_files import SORT_KEYS_DATA, SORT_KEYS_LINEAGE, file_count
from pipelines.engines.tasks import (
    Collected,
    FileItem,
    Group,
    Ingest,
    Maps,
    Prepare,
    SourceItem,
    WriteSorted,
)
from pipelines.faults import checkpoint
from pipelines.integrity import check_unique_ids
from pipelines.partitions import (
    FOLDER,
    INGESTED,
    LINEAGE,
    QUARANTINE,
    ROWS,
    SAMPLES,
    Partition,
    TierPartitions,
    dataset_key,
    source_key,
)
from pipelines.stages import ROW_KEY_FIELD, STAGED_SCHEMA, Step, prepared_schema, segments, staged
from storage.delta import version_files
from storage.errors import Invalid
from storage.layout import staging_prefix
from storage.tier import Tier

log = logging.getLogger(__name__)


class DistributedEngine(Engine):
    """Runs the stage plan; subclasses provide the four data-movement primitives."""

    def __init__(self, config: ExecutionConfig) -> None:
        self.config = config

    # -- primitives an engine implements --------------------------------------------------------
    @abstractmethod
    def parallelism(self) -> int:
        """How many tasks can run at once (cores of the cluster)."""

    @abstractmethod
    def run_items(self, count: int, task: Ingest) -> list[pa.Table]:
        """Call ``task`` on batches of the ids ``0..count-1`` (column ``id``), spread over tasks."""

    @abstractmethod
    def run_groups(
        self, tier: Tier, paths: list[str], schema: pa.Schema, key: str, partitions: int, task: Group
    ) -> list[pa.Table]:
        """Shuffle ``schema``'s columns of the files by ``key``; call ``task`` once per partition."""

    @abstractmethod
    def run_map(self, tier: Tier, paths: list[str], schema: pa.Schema, task: Callable[..., pa.Table]) -> list[pa.Table]:
        """Call ``task`` on batches of ``schema``'s columns of the files."""

    @abstractmethod
    def run_filtered(
        self,
        tier: Tier,
        rows: list[str],
        schema: pa.Schema,
        keys: list[str],
        keep: bool,
        partitions: int,
        task: Callable[..., pa.Table],
    ) -> list[pa.Table]:
        """Rows whose row key is (``keep``) or is not in the ``keys`` files, streamed through ``task``."""

    @abstractmethod
    def run_cluster(
        self,
        tier: Tier,
        sketches: list[str],
        sketch_schema: pa.Schema,
        texts: list[str] | None,
        partitions: int,
        buckets: Buckets,
        task: ClusterGroups,
    ) -> list[pa.Table]:
        """Bucket rows -> star edges -> connected components; then ``task`` per partition of complete
        components, on sketch rows with a ``component`` column (and ``text`` from the ``texts`` files)."""

    @abstractmethod
    def run_sorted(
        self, tier: Tier, paths: list[str], schema: pa.Schema, partitions: int, task: WriteSorted
    ) -> list[pa.Table]:
        """Number the files' rows with ``task.numbered`` (their part file), gather each file's rows in one
        of ``partitions`` tasks, sort each task's rows by (file, ``task.keys``) and call ``task`` on them."""

    # -- the plan -------------------------------------------------------------------------------
    def execute(self, job: Job) -> JobResult:
        tier = job.data.tier
        staging = staging_prefix(job.run_id)
        _clear_scratch(tier, staging)  # an earlier attempt's scratch; its recorded partitions stay
        try:
            result = self._execute(job, tier, staging)
        except BaseException:
            for target in (job.data, job.lineage, job.quarantine, job.signatures):
                if target is not None:
                    _remove(target.tier, f"{target.table_path}/{target.prefix}")
            _clear_scratch(tier, staging)  # the partitions stay, so a failed or killed run resumes
            raise
        _clear_scratch(tier, staging)  # the partitions stay until the run commits (lineage.runs deletes them)
        return result

    def _partitions(self, rows: int, per_partition: int) -> int:
        """At least one task per core for parallelism, more when partitions would be too big."""
        return max(1, min(self.parallelism(), math.ceil(rows / 1000)), math.ceil(rows / per_partition))

    def _execute(self, job: Job, tier: Tier, staging: str) -> JobResult:
        s = self.config
        segs = segments(job.operators)
        lineage = TableTarget(tier, f"{staging}/lineage", "parts")  # the barrier steps' records

        parts = TierPartitions(tier, staging)
        done, reused = self._ingest(job, parts, segs[0].maps)
        checkpoint(f"{self.name}.partitions_done")
        check_unique_ids(tier, [tier.path(p) for d in done for p in d.paths(INGESTED)], s)
        stats: Counter[str] = Counter()
        for d in done:
            stats.update({k: v for k, v in d.counters.items() if not k.startswith(ROWS)})
        lineage_files = [p for d in done for p in d.paths(LINEAGE)]
        lineage_rows = sum(d.counters.get(f"{ROWS}{LINEAGE}", 0) for d in done)
        sample_files = [p for d in done for p in d.paths(SAMPLES)]
        rows = sum(d.counters.get(f"{ROWS}{SAMPLES}", 0) for d in done)
        quarantine_files = self._copy_quarantine(tier, [p for d in done for p in d.paths(QUARANTINE)], job.quarantine)
        job.progress("files", sum(src.chunks.num_rows for src in job.sources))
        job.progress("records", rows + sum(v for k, v in stats.items() if k.startswith("quarantine.")))
        log.info("%s: ingest wrote %d samples in %d files", self.name, rows, len(sample_files))

        sketched: tuple[ClusterOperator, list[str]] | None = None
        for number, seg in enumerate(segs[1:], start=1):
            assert seg.group is not None
            op = seg.group.operator
            dropped = TableTarget(tier, f"{staging}/dropped-{number}", "parts")
            survivors = TableTarget(tier, f"{staging}/samples-{number}", "parts")
            if not sample_files:
                break
            parts = self._partitions(rows, s.group_partition_rows)
            if isinstance(op, ClusterOperator):
                decided, sketch_files = self._cluster(job, tier, staging, number, seg.group, sample_files, parts)
                sketched = (op, sketch_files)
            else:
                assert isinstance(op, GroupOperator)
                key_schema = pa.schema([*(SAMPLE_SCHEMA.field(c) for c in op.columns), ROW_KEY_FIELD])
                group_files = sample_files
                if op.prepared_schema is not None:  # e.g. sizes instead of texts, made in parallel
                    out = TableTarget(tier, f"{staging}/prepared-{number}", "parts")
                    made = self.run_map(tier, sample_files, key_schema, Prepare(s, seg.group, out))
                    group_files, key_schema = Collected.of(made).paths(out), prepared_schema(seg.group)
                group = Group(job.run_id, s, seg.group, lineage, dropped)
                whole = 1 if op.whole_input else parts
                decided = Collected.of(self.run_groups(tier, group_files, key_schema, op.key, whole, group))
            lineage_files += decided.paths(lineage)
            lineage_rows += decided.rows[lineage.table_path]
            job.progress(f"step{seg.group.index}.{op.name}", rows)
            maps = Maps(job.run_id, s, f"s{number}", seg.maps, survivors, lineage)
            gone = decided.paths(dropped)
            mapped = Collected.of(self.run_filtered(tier, sample_files, STAGED_SCHEMA, gone, False, parts, maps))
            lineage_files += mapped.paths(lineage)
            lineage_rows += mapped.rows[lineage.table_path]
            sample_files, rows = mapped.paths(survivors), mapped.rows[survivors.table_path]
            log.info("%s: step %d (%s) left %d samples", self.name, seg.group.index, op.name, rows)

        data = self._write_sorted(tier, sample_files, rows, SAMPLE_SCHEMA, SORT_KEYS_DATA, job.data)
        checkpoint(f"{self.name}.data_written")
        lineage_out = self._write_sorted(
            tier, lineage_files, lineage_rows, LINEAGE_SCHEMA, SORT_KEYS_LINEAGE, job.lineage
        )
        signatures = self._signatures(job, tier, staging, sketched, sample_files, rows)
        return JobResult(
            data_files=data,
            lineage_files=lineage_out,
            quarantine_files=quarantine_files,
            signature_files=signatures,
            stats=dict(stats),
            partitions=len(done),
            reused_partitions=reused,
        )

    def _ingest(self, job: Job, parts: TierPartitions, maps: tuple[Step, ...]) -> tuple[list[Partition], list[int]]:
        """Every work item's partition, in item order: reused when an earlier attempt of this run recorded it
        (:mod:`pipelines.partitions`), else run now, only those, in one distributed action. Also the indices
        of those reused."""
        items: list[SourceItem | FileItem] = []
        keys: list[str] = []
        for i, src in enumerate(job.sources):
            paths = src.chunks.column("path").to_pylist()
            items += [SourceItem(i, row) for row in range(src.chunks.num_rows)]
            keys += [source_key(src.position, path) for path in paths]
        for ds in job.datasets:
            files = [f["path"] for f in version_files(ds.tier, ds.table_path, ds.delta_version)]
            items += [FileItem(ds, f) for f in files]
            keys += [dataset_key(ds.position, ds.table_path, ds.delta_version, f) for f in files]
        recorded = parts.recorded()
        found = {i: parts.reuse(i, key) if i in recorded else None for i, key in enumerate(keys)}
        todo = tuple(i for i, part in found.items() if part is None)
        if todo:
            task = Ingest(
                job.run_id,
                self.config,
                tuple((src.chunks, src.convert, src.position) for src in job.sources),
                tuple(items),
                tuple(keys),
                todo,
                maps,
                parts,
            )
            self.run_items(len(todo), task)
        reused = [i for i, part in found.items() if part is not None]
        if reused:
            log.info("run %s: reused %d of %d recorded partitions", job.run_id, len(reused), len(items))
        return [found[i] or parts.written(i, keys[i]) for i in range(len(items))], reused

    def _copy_quarantine(self, tier: Tier, files: list[str], target: TableTarget) -> list[str]:
        """The partitions' quarantine files into the run's subfolder of the quarantine table, as they are."""
        copied = []
        if files:
            target.tier.filesystem.create_dir(target.tier.path(target.table_path, target.prefix), recursive=True)
        for path in files:
            relative = f"{target.prefix}/{PurePosixPath(path).name}"  # named per item: ingest-<index>-<n>
            pafs.copy_files(
                tier.path(path),
                target.tier.path(target.table_path, relative),
                source_filesystem=tier.filesystem,
                destination_filesystem=target.tier.filesystem,
            )
            copied.append(relative)
        return sorted(copied)

    def _cluster(
        self, job: Job, tier: Tier, staging: str, number: int, step: Step, samples: list[str], parts: int
    ) -> tuple[Collected, list[str]]:
        """Sketch the samples, then cluster complete candidate components; (decisions, sketch files)."""
        op = step.operator
        assert isinstance(op, ClusterOperator)
        if job.published:
            raise Invalid(f"{op.name} against published releases runs on the local engine only")
        sketches = TableTarget(tier, f"{staging}/sketches-{number}", "parts")
        sketch_files = Collected.of(
            self.run_map(tier, samples, sketch_input_schema(op), Sketch(self.config, step, sketches))
        )
        files = sketch_files.paths(sketches)
        lineage = TableTarget(tier, f"{staging}/lineage", "parts")
        dropped = TableTarget(tier, f"{staging}/dropped-{number}", "parts")
        task = ClusterGroups(job.run_id, self.config, step, lineage, dropped)
        texts = samples if op.needs_texts else None
        decided = self.run_cluster(
            tier, files, staged(op.sketch_schema), texts, parts, Buckets(bucket_column(op)), task
        )
        return Collected.of(decided), files

    def _signatures(
        self,
        job: Job,
        tier: Tier,
        staging: str,
        sketched: tuple[ClusterOperator, list[str]] | None,
        samples: list[str],
        rows: int,
    ) -> list[str]:
        """Sketches of the samples that made it to the output, for later incremental dedupes."""
        if job.signatures is None or sketched is None or not sketched[1] or not samples:
            return []
        op, sketch_files = sketched
        kept = TableTarget(tier, f"{staging}/signatures", "parts")
        task = WriteRows(self.config, kept, op.sketch_schema, "kept")
        parts = self._partitions(rows, self.config.group_partition_rows)
        written = Collected.of(
            self.run_filtered(tier, sketch_files, staged(op.sketch_schema), samples, True, parts, task)
        )
        files, count = written.paths(kept), written.rows[kept.table_path]
        return self._write_sorted(tier, files, count, op.sketch_schema, SORT_KEYS_DATA, job.signatures)

    def _write_sorted(
        self, tier: Tier, paths: list[str], rows: int, schema: pa.Schema, keys: tuple[str, ...], target: TableTarget
    ) -> list[str]:
        """Sort by the lookup key so row-group statistics make point lookups cheap, into the part files
        every engine cuts (:mod:`pipelines.engines.sorted_files`); ``rows``: the files' row count."""
        files = file_count(rows, self.config.parquet_file_rows)
        if not paths or files == 0:
            return []
        task = WriteSorted(self.config, target, schema, keys, files)
        parts = min(files, self._partitions(rows, self.config.parquet_file_rows))
        return Collected.of(self.run_sorted(tier, paths, schema, parts, task)).relative(target)


def project_path() -> str:
    """The folder holding this project's packages, so local Python workers import the same code."""
    return str(Path(pipelines.__file__).resolve().parent.parent)


def _clear_scratch(tier: Tier, staging: str) -> None:
    """Everything in a run's staging folder but its partitions (:func:`pipelines.partitions.clear_scratch`)."""
    selector = pafs.FileSelector(tier.path(staging), recursive=False, allow_not_found=True)
    try:
        infos = tier.filesystem.get_file_info(selector)
    except OSError as exc:
        log.warning("could not list %s: %s", tier.uri(staging), exc)
        return
    for info in infos:
        if info.base_name == FOLDER:
            continue
        if info.type == pafs.FileType.Directory:
            _remove(tier, f"{staging}/{info.base_name}")
        else:
            tier.filesystem.delete_file(info.path)


def _remove(tier: Tier, relative: str) -> None:
    try:
        tier.filesystem.delete_dir(tier.path(relative))
    except FileNotFoundError:
        pass
    except OSError as exc:  # cleanup must not hide the job's own outcome
        log.warning("could not remove %s: %s", tier.uri(relative), exc)
