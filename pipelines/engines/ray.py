"""The Ray Data engine: the shared stage plan on Datasets, batch work through ``map_batches``.

Staged Parquet files are read with ``read_parquet`` on the tier's filesystem. Group steps tag
each row with a partition number (a stable hash of the key) and use ``groupby(...).map_groups``
so each call holds complete key groups; dropped samples leave through a ``left_anti`` join; the
final writes use ``sort`` (range partitioning) and write each sorted block.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import ray
import ray.data

from lineage.settings import Settings
from pipelines import components
from pipelines.engines.cluster import COMPONENT, TEXT_SCHEMA, Buckets, ClusterGroups
from pipelines.engines.distributed import DistributedEngine
from pipelines.engines.ray_components import connected_components as components_on_ray
from pipelines.engines.spark import project_path
from pipelines.engines.tasks import DROPPED_SCHEMA, Group, Ingest, ReadFiles, WriteSorted
from storage.tier import Tier

log = logging.getLogger(__name__)

PART_COLUMN = "_part"
SIDE_COLUMN = "_side"


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
        return table.append_column(
            PART_COLUMN, pa.array(components.partition_of(table.column(self.key), self.partitions))
        )


LABEL_SCHEMA = pa.schema([pa.field("sample_id", pa.string()), pa.field(COMPONENT, pa.string())])


def _as_labels(table: pa.Table) -> pa.Table:
    return pa.table({"sample_id": table.column("node"), COMPONENT: table.column("component")}, schema=LABEL_SCHEMA)


def _tagged_schema(*schemas: pa.Schema) -> pa.Schema:
    """One nullable shape for rows of several tables, so they can be unioned and co-partitioned."""
    fields: dict[str, pa.Field] = {}
    for schema in schemas:
        for f in schema:
            fields.setdefault(f.name, f.with_nullable(True))
    extra = [pa.field(PART_COLUMN, pa.int64(), nullable=False), pa.field(SIDE_COLUMN, pa.int8(), nullable=False)]
    return pa.schema([*fields.values(), *extra])


@dataclass(frozen=True)
class _Tagged:
    """Rows of one side of a co-partitioned union: partition by ``key``, side number, wide shape."""

    key: str
    partitions: int
    schema: pa.Schema
    side: int

    def __call__(self, table: pa.Table) -> pa.Table:
        n = table.num_rows
        parts = pa.array(components.partition_of(table.column(self.key), self.partitions))
        columns = [table.column(f.name) if f.name in table.column_names else pa.nulls(n, f.type) for f in self.schema]
        columns[-2], columns[-1] = parts, pa.repeat(pa.scalar(self.side, pa.int8()), n)
        return pa.Table.from_arrays(columns, schema=self.schema)


def _side(part: pa.Table, side: int) -> pa.Table:
    return part.filter(pc.equal(part.column(SIDE_COLUMN), side))


@dataclass(frozen=True)
class _IdFilter:
    """One hash partition of rows (side 0) and ids (side 1): rows whose id is (or is not) listed."""

    task: Callable[..., pa.Table]
    schema: pa.Schema
    keep: bool

    def __call__(self, part: pa.Table) -> pa.Table:
        rows, ids = _side(part, 0), _side(part, 1).column("sample_id").combine_chunks()
        listed = pc.is_in(rows.column("sample_id"), value_set=ids)
        rows = rows.filter(listed if self.keep else pc.invert(listed))
        return self.task(rows.select(self.schema.names).cast(self.schema))


@dataclass(frozen=True)
class _Attach:
    """One hash partition of sketches (0), component labels (1) and texts (2), joined by sample id."""

    schema: pa.Schema  # the sketch schema
    with_texts: bool

    def __call__(self, part: pa.Table) -> pa.Table:
        rows = _side(part, 0)
        ids = rows.column("sample_id")
        labels = _side(part, 1)
        found = pc.index_in(ids, value_set=labels.column("sample_id").combine_chunks())
        component = pc.coalesce(labels.column(COMPONENT).combine_chunks().take(found), ids.combine_chunks())
        out = rows.select(self.schema.names).append_column(COMPONENT, component)
        if self.with_texts:
            texts = _side(part, 2)
            where = pc.index_in(ids, value_set=texts.column("sample_id").combine_chunks())
            out = out.append_column("text", texts.column("text").combine_chunks().take(where))
        return out


def _named(fn: Callable[[pa.Table], pa.Table]) -> Callable[[pa.Table], pa.Table]:
    """``map_groups`` wants a function with a ``__name__``; tasks here are dataclass instances."""

    def call(table: pa.Table) -> pa.Table:
        return fn(table)

    call.__name__ = type(fn).__name__ if not hasattr(fn, "__name__") else fn.__name__
    return call


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

    def _grouped(self, ds: ray.data.Dataset, key: str, partitions: int, fn: Callable[[pa.Table], pa.Table]):
        """``fn`` once per hash partition of ``key`` (complete key groups)."""
        tagged = ds.map_batches(_PartitionOf(key, partitions), batch_format="pyarrow")
        return tagged.groupby(PART_COLUMN, num_partitions=partitions).map_groups(_named(fn), batch_format="pyarrow")

    def _copartitioned(
        self, sides: list[ray.data.Dataset], schema: pa.Schema, partitions: int, fn: Callable[[pa.Table], pa.Table]
    ) -> ray.data.Dataset:
        """``fn`` once per hash partition of ``sample_id`` over several datasets (a shuffle join)."""
        tagged = [
            ds.map_batches(_Tagged("sample_id", partitions, schema, i), batch_format="pyarrow")
            for i, ds in enumerate(sides)
        ]
        union = tagged[0].union(*tagged[1:]) if len(tagged) > 1 else tagged[0]
        return union.groupby(PART_COLUMN, num_partitions=partitions).map_groups(_named(fn), batch_format="pyarrow")

    def run_groups(
        self, tier: Tier, paths: list[str], schema: pa.Schema, key: str, partitions: int, task: Group
    ) -> list[pa.Table]:
        return self._manifests(self._grouped(self._files(tier, paths, schema), key, partitions, task))

    def run_map(self, tier: Tier, paths: list[str], schema: pa.Schema, task: Callable[..., pa.Table]) -> list[pa.Table]:
        return self._manifests(self._files(tier, paths, schema).map_batches(task, batch_format="pyarrow"))

    def run_filtered(
        self,
        tier: Tier,
        rows: list[str],
        schema: pa.Schema,
        ids: list[str],
        keep: bool,
        partitions: int,
        task: Callable[..., pa.Table],
    ) -> list[pa.Table]:
        if not ids:
            return [] if keep else self.run_map(tier, rows, schema, task)
        sides = [self._files(tier, rows, schema), self._files(tier, ids, DROPPED_SCHEMA)]
        wide = _tagged_schema(schema, DROPPED_SCHEMA)
        return self._manifests(self._copartitioned(sides, wide, partitions, _IdFilter(task, schema, keep)))

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
        rows = self._files(tier, sketches, sketch_schema)
        keys = rows.map_batches(buckets, batch_format="pyarrow")
        edges = self._grouped(keys, components.KEY, partitions, components.bucket_star)
        label_refs = components_on_ray(edges.to_arrow_refs(), partitions)
        sides = [rows]
        if label_refs:
            sides.append(ray.data.from_arrow_refs(label_refs).map_batches(_as_labels, batch_format="pyarrow"))
        else:
            sides.append(ray.data.from_arrow(LABEL_SCHEMA.empty_table()))
        if texts is not None:
            sides.append(self._files(tier, texts, TEXT_SCHEMA))
        wide = _tagged_schema(sketch_schema, LABEL_SCHEMA, TEXT_SCHEMA)
        attached = self._copartitioned(sides, wide, partitions, _Attach(sketch_schema, texts is not None))
        return self._manifests(self._grouped(attached, COMPONENT, partitions, task))

    def run_sorted(
        self, tier: Tier, paths: list[str], schema: pa.Schema, keys: tuple[str, ...], partitions: int, task: WriteSorted
    ) -> list[pa.Table]:
        rows = self._files(tier, paths, schema).sort(list(keys))
        return self._manifests(rows.map_batches(_SortedBlock(task), batch_format="pyarrow", batch_size=None))
