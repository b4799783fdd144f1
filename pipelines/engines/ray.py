"""The Ray engine: the shared stage plan with batch work through Ray Data's ``map_batches``.

Ingest (convert + the first map steps), sketches and the map steps after each group or cluster
step run through ``map_batches(batch_format="pyarrow")``. Shuffles (group steps, the anti-join
that removes dropped samples by row key, the sorted writes by part file, the cluster step) are Ray tasks
exchanging Arrow tables through the object store (:mod:`pipelines.engines.ray_shuffle`), and
connected components run as Ray tasks too (:mod:`pipelines.engines.ray_connected_components`).
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

from pipelines.config import EngineConfig, ExecutionConfig
from pipelines.engines import connected_components as components
from pipelines.engines.dedupe_cluster import (
    COMPONENT,
    LABEL_SCHEMA,
    NODE_KEY,
    TEXT_SCHEMA,
    Buckets,
    ClusterGroups,
    with_node_key,
)
from pipelines.engines.distributed import DistributedEngine, project_path
from pipelines.engines.ray_connected_components import connected_components as components_on_ray
from pipelines.engines.ray_shuffle import FileInput, shuffle
from pipelines.engines.sorted_files import FILE
from pipelines.engines.tasks import MANIFEST_SCHEMA, Group, Ingest, ReadFiles, WriteSorted
from pipelines.stages import ROW_KEY, ROW_KEYS_SCHEMA
from storage.tier import Tier

log = logging.getLogger(__name__)


def ray_runtime(cfg: EngineConfig) -> bool:
    """Connect to the configured runtime unless one is already up; return whether we started it.

    Without an address, a local runtime starts with its temporary files in a short folder (Ray's
    socket paths have a length limit) and with this project on the workers' Python path.
    """
    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
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


def _as_labels(table: pa.Table) -> pa.Table:
    return pa.table({NODE_KEY: table.column("node"), COMPONENT: table.column("component")}, schema=LABEL_SCHEMA)


@dataclass(frozen=True)
class _Call:
    """A reduce step: the task on one partition's table (nothing to do for an empty partition)."""

    task: Callable[[pa.Table], pa.Table]

    def __call__(self, table: pa.Table | None) -> pa.Table:
        if table is None or table.num_rows == 0:
            return MANIFEST_SCHEMA.empty_table()
        return self.task(table)


@dataclass(frozen=True)
class _Filter:
    """One hash partition of rows and row keys: the rows whose key is (``keep``) or is not listed."""

    keep: bool

    def __call__(self, rows: pa.Table, keys: pa.Table | None) -> pa.Table:
        if keys is None or keys.num_rows == 0:
            return rows if not self.keep else rows.slice(0, 0)
        listed = pc.is_in(rows.column(ROW_KEY), value_set=keys.column(ROW_KEY).combine_chunks())
        return rows.filter(listed if self.keep else pc.invert(listed))


@dataclass(frozen=True)
class _SortWrite:
    """Whole part files of a sorted table: sort by (file, keys) and write them."""

    task: WriteSorted

    def __call__(self, table: pa.Table | None) -> pa.Table:
        if table is None or table.num_rows == 0:
            return MANIFEST_SCHEMA.empty_table()
        return self.task(table.sort_by([(k, "ascending") for k in (FILE, *self.task.keys)]))


@dataclass(frozen=True)
class _Attach:
    """One hash partition of sketches, component labels (by graph key) and texts (by row key)."""

    schema: pa.Schema  # the sketch schema

    def __call__(self, rows: pa.Table, labels: pa.Table | None, texts: pa.Table | None = None) -> pa.Table:
        keys = rows.column(NODE_KEY).combine_chunks()
        component = keys
        if labels is not None and labels.num_rows:
            found = pc.index_in(keys, value_set=labels.column(NODE_KEY).combine_chunks())
            component = pc.coalesce(labels.column(COMPONENT).combine_chunks().take(found), keys)
        out = rows.select(self.schema.names).append_column(COMPONENT, component)
        if texts is not None:
            keys = rows.column(ROW_KEY).combine_chunks()
            where = pc.index_in(keys, value_set=texts.column(ROW_KEY).combine_chunks())
            out = out.append_column("text", texts.column("text").combine_chunks().take(where))
        return out


@dataclass(frozen=True)
class _ReadBlock:
    """Ray's ``read_parquet`` resolves paths through fsspec; reading through the tier avoids that."""

    read: ReadFiles

    def __call__(self, names: pa.Table) -> Iterator[pa.Table]:
        for batch in self.read(names.column("path").to_pylist()):
            yield pa.Table.from_batches([batch])


class RayEngine(DistributedEngine):
    name = "ray"

    def __init__(self, config: ExecutionConfig) -> None:
        super().__init__(config)
        self._owned = ray_runtime(config.engine)

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
        read = _ReadBlock(ReadFiles(tier, schema, self.config.parquet_row_group_rows))
        return names.map_batches(read, batch_format="pyarrow", batch_size=1)

    @staticmethod
    def _inputs(tier: Tier, paths: list[str], schema: pa.Schema) -> list[FileInput]:
        return [FileInput(tier, p, schema) for p in paths]

    def run_items(self, count: int, task: Ingest) -> list[pa.Table]:
        items = ray.data.range(count, override_num_blocks=count)
        return self._manifests(items.map_batches(task, batch_format="pyarrow", batch_size=1))

    def run_map(self, tier: Tier, paths: list[str], schema: pa.Schema, task: Callable[..., pa.Table]) -> list[pa.Table]:
        return self._manifests(self._files(tier, paths, schema).map_batches(task, batch_format="pyarrow"))

    def run_groups(
        self, tier: Tier, paths: list[str], schema: pa.Schema, key: str, partitions: int, task: Group
    ) -> list[pa.Table]:
        return ray.get(shuffle([(self._inputs(tier, paths, schema), None)], key, partitions, _Call(task)))

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
        if not keys:
            return [] if keep else self.run_map(tier, rows, schema, task)
        sides = [(self._inputs(tier, rows, schema), None), (self._inputs(tier, keys, ROW_KEYS_SCHEMA), None)]
        kept = shuffle(sides, ROW_KEY, partitions, _Filter(keep))
        return self._manifests(ray.data.from_arrow_refs(kept).map_batches(task, batch_format="pyarrow"))

    def run_sorted(
        self, tier: Tier, paths: list[str], schema: pa.Schema, partitions: int, task: WriteSorted
    ) -> list[pa.Table]:
        # partition p holds the files [ceil(p * files / partitions), ceil((p + 1) * files / partitions))
        ranges = pa.array([-(-p * task.files // partitions) for p in range(1, partitions)], pa.int64())
        inputs = self._inputs(tier, paths, schema)
        return ray.get(shuffle([(inputs, task.numbered)], FILE, partitions, _SortWrite(task), ranges))

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
        rows = self._inputs(tier, sketches, sketch_schema)
        edges = shuffle([(rows, buckets)], components.KEY, partitions, components.bucket_star)
        labels = components_on_ray(edges, partitions)
        sides = [(rows, with_node_key), (labels, _as_labels)]
        if texts is not None:
            sides.append((self._inputs(tier, texts, TEXT_SCHEMA), with_node_key))
        attached = shuffle(sides, NODE_KEY, partitions, _Attach(sketch_schema))
        return ray.get(shuffle([(attached, None)], COMPONENT, partitions, _Call(task)))
