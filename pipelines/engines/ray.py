"""The Ray Data engine: the shared stage plan on Datasets, batch work through ``map_batches``.

Staged Parquet files are read with ``read_parquet`` on the tier's filesystem. Group steps tag
each row with a partition number (a stable hash of the key) and use ``groupby(...).map_groups``
so each call holds complete key groups; dropped samples leave through a ``left_anti`` join; the
final writes use ``sort`` (range partitioning) and write each sorted block.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import ray
import ray.data
import xxhash

from lineage.settings import Settings
from operators.schema import SAMPLE_SCHEMA
from pipelines.engines.distributed import DistributedEngine
from pipelines.engines.ray_components import connected_components as components_on_ray
from pipelines.engines.spark import project_path
from pipelines.engines.tasks import DROPPED_SCHEMA, Group, Ingest, Maps, ReadFiles, WriteSorted
from storage.tier import Tier

log = logging.getLogger(__name__)

PART_COLUMN = "_part"
GONE_COLUMN = "_gone"


def ray_runtime(settings: Settings) -> bool:
    """Connect to the configured runtime unless one is already up; return whether we started it.

    Without an address, a local runtime starts with its temporary files in a short folder (Ray's
    socket paths have a length limit) and with this project on the workers' Python path.
    """
    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    cfg = settings.engine
    runtime_env = dict(cfg.ray_runtime_env)
    if cfg.ray_address is None:
        env_vars = dict(runtime_env.get("env_vars", {}))
        path = [project_path(), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        env_vars.setdefault("PYTHONPATH", os.pathsep.join(dict.fromkeys(path)))
        runtime_env["env_vars"] = env_vars
        temp_dir = cfg.ray_temp_dir or f"/tmp/lineage-ray-{os.getuid()}"
        log.info("starting a local Ray runtime (temp dir %s)", temp_dir)
        ray.init(
            num_cpus=cfg.ray_num_cpus,
            _temp_dir=temp_dir,
            include_dashboard=False,
            runtime_env=runtime_env,
            log_to_driver=False,
        )
    else:
        log.info("connecting to Ray at %s", cfg.ray_address)
        ray.init(address=cfg.ray_address, runtime_env=runtime_env or None, log_to_driver=False)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    if logging.getLogger("ray.data").level == logging.NOTSET:  # one INFO block per dataset otherwise
        logging.getLogger("ray.data").setLevel(logging.WARNING)
    return True


@dataclass(frozen=True)
class _PartitionOf:
    """Tag rows with a partition number from a process-independent hash of the key."""

    key: str
    partitions: int

    def __call__(self, table: pa.Table) -> pa.Table:
        values = table.column(self.key).to_pylist()
        parts = np.fromiter(
            (xxhash.xxh64_intdigest(str(v).encode()) % self.partitions for v in values), np.int64, len(values)
        )
        return table.append_column(PART_COLUMN, pa.array(parts))


_TAGGED_SCHEMA = pa.schema(
    [f.with_nullable(True) for f in SAMPLE_SCHEMA]
    + [pa.field(PART_COLUMN, pa.int64(), nullable=False), pa.field(GONE_COLUMN, pa.bool_(), nullable=False)]
)


@dataclass(frozen=True)
class _Tagged:
    """Samples or dropped ids in one shape, tagged with their partition, so they can be unioned."""

    partition_of: _PartitionOf
    gone: bool

    def __call__(self, table: pa.Table) -> pa.Table:
        table = self.partition_of(table)
        n = table.num_rows
        columns = [
            table.column(f.name) if f.name in table.column_names else pa.nulls(n, f.type) for f in _TAGGED_SCHEMA
        ]
        columns[-1] = pa.repeat(pa.scalar(self.gone), n)
        return pa.Table.from_arrays(columns, schema=_TAGGED_SCHEMA)


@dataclass(frozen=True)
class _AntiJoin:
    """One hash partition of samples and dropped ids: the samples not dropped go to the map task."""

    task: Maps

    def __call__(self, part: pa.Table) -> pa.Table:
        gone = part.column(GONE_COLUMN)
        dropped_ids = part.filter(gone).column("sample_id")
        samples = part.filter(pc.invert(gone))
        keep = pc.invert(pc.is_in(samples.column("sample_id"), value_set=dropped_ids.combine_chunks()))
        return self.task(samples.filter(keep).select(SAMPLE_SCHEMA.names))


@dataclass(frozen=True)
class _ReadBlock:
    """Ray's ``read_parquet`` resolves paths through fsspec; reading through the tier avoids that."""

    read: ReadFiles

    def __call__(self, names: pa.Table) -> Iterator[pa.Table]:
        for batch in self.read(names.column("path").to_pylist()):
            yield pa.Table.from_batches([batch])


@dataclass(frozen=True)
class _SortedBlock:
    """A block of a sorted dataset: sorted again locally (cheap) so files are sorted whatever Ray batches."""

    task: WriteSorted

    def __call__(self, table: pa.Table) -> pa.Table:
        return self.task(table.sort_by([(k, "ascending") for k in self.task.keys]))


class RayEngine(DistributedEngine):
    name = "ray"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self._owned = ray_runtime(settings)

    def close(self) -> None:
        if self._owned:  # a runtime someone else started is theirs to stop
            ray.shutdown()

    def parallelism(self) -> int:
        return max(1, int(ray.cluster_resources().get("CPU", 1)))

    def connected_components(self, edges: ray.data.Dataset, partitions: int | None = None) -> ray.data.Dataset:
        """``(node, component = smallest node id)`` of an edge dataset ``(src, dst)``."""
        refs = edges.to_arrow_refs()
        return ray.data.from_arrow_refs(components_on_ray(refs, partitions or self.parallelism()))

    @staticmethod
    def _manifests(ds: ray.data.Dataset) -> list[pa.Table]:
        return list(ray.get(ds.to_arrow_refs()))

    def _files(self, tier: Tier, paths: list[str], schema: pa.Schema) -> ray.data.Dataset:
        """Rows of staged Parquet files, read by tasks through the tier (one file per block)."""
        names = ray.data.from_items([{"path": p} for p in paths], override_num_blocks=len(paths))
        read = _ReadBlock(ReadFiles(tier, schema, self.settings.parquet_row_group_rows))
        return names.map_batches(read, batch_format="pyarrow", batch_size=1)

    def run_items(self, count: int, task: Ingest) -> list[pa.Table]:
        items = ray.data.range(count, override_num_blocks=count)
        return self._manifests(items.map_batches(task, batch_format="pyarrow", batch_size=1))

    def run_groups(
        self, tier: Tier, paths: list[str], schema: pa.Schema, key: str, partitions: int, task: Group
    ) -> list[pa.Table]:
        keys = self._files(tier, paths, schema).map_batches(_PartitionOf(key, partitions), batch_format="pyarrow")

        def decide(groups: pa.Table) -> pa.Table:  # map_groups wants a named function
            return task(groups)

        return self._manifests(
            keys.groupby(PART_COLUMN, num_partitions=partitions).map_groups(decide, batch_format="pyarrow")
        )

    def run_survivors(
        self, tier: Tier, samples: list[str], dropped: list[str], partitions: int, task: Maps
    ) -> list[pa.Table]:
        rows = self._files(tier, samples, SAMPLE_SCHEMA)
        if not dropped:
            return self._manifests(rows.map_batches(task, batch_format="pyarrow", batch_size=None))
        # Ray's own join needs polars; a hash-partitioned union does the same anti-join.
        tag = _PartitionOf("sample_id", partitions)
        rows = rows.map_batches(_Tagged(tag, gone=False), batch_format="pyarrow")
        gone = self._files(tier, dropped, DROPPED_SCHEMA).map_batches(_Tagged(tag, gone=True), batch_format="pyarrow")
        anti = _AntiJoin(task)

        def survivors(part: pa.Table) -> pa.Table:  # map_groups wants a named function
            return anti(part)

        return self._manifests(
            rows.union(gone)
            .groupby(PART_COLUMN, num_partitions=partitions)
            .map_groups(survivors, batch_format="pyarrow")
        )

    def run_sorted(
        self, tier: Tier, paths: list[str], schema: pa.Schema, keys: tuple[str, ...], partitions: int, task: WriteSorted
    ) -> list[pa.Table]:
        rows = self._files(tier, paths, schema).sort(list(keys))
        return self._manifests(rows.map_batches(_SortedBlock(task), batch_format="pyarrow", batch_size=None))
