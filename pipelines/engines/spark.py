"""The Spark engine: the shared stage plan on DataFrames, batch work through ``mapInArrow``.

Rows move between stages as staged Parquet files read back by tasks (through the tier, so S3,
HDFS and POSIX work alike without Hadoop connectors); Spark does the shuffles: ``repartition``
by key for group steps, a ``left_anti`` join on the row key to remove dropped samples, and
``repartitionByRange`` by part file + ``sortWithinPartitions`` for the sorted final writes.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pyarrow as pa
from pyspark import SparkContext
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_type

from pipelines.config import EngineConfig, ExecutionConfig
from pipelines.engines import connected_components as components
from pipelines.engines.dedupe_cluster import (
    BUCKET_SCHEMA,
    COMPONENT,
    EDGE_SCHEMA,
    LABEL_SCHEMA,
    NODE_KEY,
    TEXT_SCHEMA,
    Buckets,
    ClusterGroups,
    with_node_key,
)
from pipelines.engines.distributed import DistributedEngine, project_path
from pipelines.engines.sorted_files import FILE
from pipelines.engines.tasks import MANIFEST_SCHEMA, Group, Ingest, ReadFiles, WriteSorted
from pipelines.stages import ROW_KEY, ROW_KEYS_SCHEMA
from storage.tier import Tier

log = logging.getLogger(__name__)

_LOCAL_DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
    "spark.driver.memory": "2g",
}


def spark_session(cfg: EngineConfig) -> tuple[SparkSession, bool]:
    """The active session if there is one (it is shared, never stopped by us); else a new one.

    Returns (session, created). A new session gets the configured master and conf; its Python
    workers run this interpreter, and for local masters they also get this project on their path
    and bind to loopback. The caller's environment is left as it was: a child process the caller
    starts later (pip, say) would inherit a changed one. So the path and the address go through the
    session's conf (``spark.executorEnv.PYTHONPATH``, ``spark.driver.*``). The interpreter cannot: an
    in-process context reads ``PYSPARK_PYTHON`` from the environment once, when it starts (pyspark 4's
    ``SparkContext``; ``spark.pyspark.python`` is read only by ``spark-submit``), so it is set for that
    moment and put back. ``cfg.spark_conf`` overrides any of these.
    """
    active = SparkSession.getActiveSession()
    if active is None and SparkContext._active_spark_context is not None:
        # a session another thread started: the active session is per thread (a pipeline's stages run on
        # threads, lineage.pipeline_runs), and getOrCreate returns that one without starting anything
        active = SparkSession.builder.getOrCreate()
    if active is not None:
        return active, False
    local = cfg.spark_master.startswith("local")
    conf: dict[str, str] = {}
    if local:
        path = [project_path(), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        conf |= _LOCAL_DEFAULTS | {
            "spark.executorEnv.PYTHONPATH": os.pathsep.join(dict.fromkeys(path)),
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
        }
    builder = SparkSession.builder.master(cfg.spark_master).appName("lineage-ledger")
    for key, value in {**conf, **cfg.spark_conf}.items():
        builder = builder.config(key, value)
    log.info("starting Spark session on %s", cfg.spark_master)
    with _environment(PYSPARK_PYTHON=os.environ.get("PYSPARK_PYTHON", sys.executable)):
        return builder.getOrCreate(), True


@contextmanager
def _environment(**values: str) -> Iterator[None]:
    """``os.environ`` with ``values`` inside the block, exactly as before it afterwards."""
    before = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


_MANIFEST = from_arrow_schema(MANIFEST_SCHEMA)


def _per_partition(task: Callable[..., pa.Table]) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """A task that must see a whole partition at once (complete groups, sorted ranges)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        yield from task(batches).to_batches()

    return run


def _per_batch(task: Callable[..., pa.Table]) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            out = task(batch)
            yield from [out] if isinstance(out, pa.RecordBatch) else out.to_batches()

    return run


def _kernel(
    fn: Callable[[pa.Table], pa.Table], columns: tuple[str, ...] = (components.SRC, components.DST)
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """A graph kernel over one whole partition."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        collected = list(batches)
        if not collected:  # an empty partition (more partitions than nodes) sends no batch at all
            return
        table = pa.Table.from_batches(collected)
        if table.num_rows:
            yield from fn(table.select(list(columns))).to_batches()

    return run


def connected_components(edges: DataFrame, partitions: int) -> DataFrame:
    """``(node, component = smallest node id)`` for the nodes of an edge frame ``(src, dst)``.

    Large-star / small-star rounds: each is a ``repartition`` by node (a shuffle) and a kernel
    per partition; every round's result is checkpointed, so plans do not grow with rounds.
    """
    src, dst = components.SRC, components.DST
    id_type = to_arrow_type(edges.schema[src].dataType)
    schema = from_arrow_schema(components.output_schema(id_type))
    current = edges.select(src, dst)
    for rounds in range(1, components.MAX_ROUNDS + 1):
        both = current.union(current.select(F.col(dst).alias(src), F.col(src).alias(dst)))
        star = both.repartition(partitions, src).mapInArrow(_kernel(components.large_star), schema)
        star = star.localCheckpoint(eager=True)
        if (star.agg(F.sum(components.UNSTABLE)).first()[0] or 0) == 0:
            log.info("connected components: converged after %d rounds", rounds)
            return star.filter(F.col(src).isNotNull()).select(F.col(src).alias("node"), F.col(dst).alias("component"))
        links = star.filter(F.col(src).isNotNull() & (F.col(src) != F.col(dst))).select(src, dst)
        current = links.repartition(partitions, src).mapInArrow(_kernel(components.small_star), schema).select(src, dst)
    raise RuntimeError(f"connected components did not converge in {components.MAX_ROUNDS} rounds")


class SparkEngine(DistributedEngine):
    name = "spark"

    def __init__(self, config: ExecutionConfig) -> None:
        super().__init__(config)
        self.spark, self._owned = spark_session(config.engine)

    def close(self) -> None:
        if self._owned:  # a session someone else started is theirs to stop
            self.spark.stop()

    def parallelism(self) -> int:
        return max(1, self.spark.sparkContext.defaultParallelism)

    def connected_components(self, edges: DataFrame, partitions: int | None = None) -> DataFrame:
        """``(node, component)`` of an edge frame ``(src, dst)``; see :func:`connected_components`."""
        return connected_components(edges, partitions or self.parallelism())

    def _manifests(self, df: DataFrame) -> list[pa.Table]:
        return [df.toArrow().cast(MANIFEST_SCHEMA)]

    def _files(self, tier: Tier, paths: list[str], schema: pa.Schema) -> DataFrame:
        """Rows of staged Parquet files, read by tasks through the tier (one file per partition)."""
        read = ReadFiles(tier, schema, self.config.batch_rows)

        def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for batch in batches:
                yield from read(batch.column(0).to_pylist())

        rdd = self.spark.sparkContext.parallelize([(p,) for p in paths], max(1, len(paths)))  # no shuffle
        names = self.spark.createDataFrame(rdd, "path string")
        return names.mapInArrow(run, from_arrow_schema(schema))

    def run_items(self, count: int, task: Ingest) -> list[pa.Table]:
        items = self.spark.range(0, count, 1, numPartitions=count)
        return self._manifests(items.mapInArrow(_per_batch(task), _MANIFEST))

    def run_groups(
        self, tier: Tier, paths: list[str], schema: pa.Schema, key: str, partitions: int, task: Group
    ) -> list[pa.Table]:
        keys = self._files(tier, paths, schema).repartition(partitions, key)
        return self._manifests(keys.mapInArrow(_per_partition(task), _MANIFEST))

    def run_map(self, tier: Tier, paths: list[str], schema: pa.Schema, task: Callable[..., pa.Table]) -> list[pa.Table]:
        return self._manifests(self._files(tier, paths, schema).mapInArrow(_per_batch(task), _MANIFEST))

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
        if keep and not keys:
            return []
        frame = self._files(tier, rows, schema)
        if keys:
            how = "left_semi" if keep else "left_anti"
            frame = frame.join(self._files(tier, keys, ROW_KEYS_SCHEMA), on=ROW_KEY, how=how)
        return self._manifests(frame.mapInArrow(_per_partition(task), _MANIFEST))

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
        keys = rows.select("sample_id", buckets.column).mapInArrow(
            _per_batch(buckets), from_arrow_schema(BUCKET_SCHEMA)
        )
        star = _kernel(components.bucket_star, (components.KEY, components.NODE))
        edges = keys.repartition(partitions, components.KEY).mapInArrow(star, from_arrow_schema(EDGE_SCHEMA))
        labels = connected_components(edges, partitions).toDF(NODE_KEY, COMPONENT)
        keyed = rows.mapInArrow(
            _per_batch(with_node_key), from_arrow_schema(sketch_schema.append(LABEL_SCHEMA.field(NODE_KEY)))
        )
        rows = keyed.join(labels, on=NODE_KEY, how="left")
        rows = rows.withColumn(COMPONENT, F.coalesce(F.col(COMPONENT), F.col(NODE_KEY)))
        if texts is not None:
            texts_by_row = self._files(tier, texts, TEXT_SCHEMA).select(ROW_KEY, "text")
            rows = rows.join(texts_by_row, on=ROW_KEY, how="inner")
        grouped = rows.repartition(partitions, COMPONENT)
        return self._manifests(grouped.mapInArrow(_per_partition(task), _MANIFEST))

    def run_sorted(
        self, tier: Tier, paths: list[str], schema: pa.Schema, partitions: int, task: WriteSorted
    ) -> list[pa.Table]:
        numbered = self._files(tier, paths, schema).mapInArrow(
            _per_batch(task.numbered), from_arrow_schema(task.numbered_schema)
        )
        rows = numbered.repartitionByRange(partitions, FILE).sortWithinPartitions(FILE, *task.keys)
        return self._manifests(rows.mapInArrow(_per_partition(task), _MANIFEST))
