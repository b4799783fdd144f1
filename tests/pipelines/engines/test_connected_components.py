"""Distributed connected components (Spark and Ray) against a plain union-find."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lineage.settings import Settings
from tests.support.fixtures_engines import ray_runtime, spark  # noqa: F401  (session fixtures)


def union_find(src: np.ndarray, dst: np.ndarray) -> dict[int, int]:
    """node -> smallest node of its component, for nodes that appear in an edge."""
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in zip(src.tolist(), dst.tolist(), strict=True):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return {x: find(x) for x in list(parent)}


def graph(seed: int) -> np.ndarray:
    """Long chains (ids shuffled, so they zig-zag), big stars, random sparse edges and duplicates."""
    rng = np.random.default_rng(seed)
    n = 2000
    ids = rng.permutation(n) * 7 + 3
    edges = [np.stack([ids[:399], ids[1:400]], axis=1)]  # one chain of 400 nodes
    edges.append(np.stack([ids[400:699], ids[401:700]], axis=1)[::-1])  # another, reversed
    edges.append(np.stack([np.full(200, ids[700]), ids[701:901]], axis=1))  # a star
    edges.append(np.stack([ids[901:1101], np.full(200, ids[1101])], axis=1))  # a star, pointing in
    rand = rng.integers(1102, n, size=(500, 2))
    edges.append(np.stack([ids[rand[:, 0]], ids[rand[:, 1]]], axis=1))
    e = np.concatenate(edges)
    e = np.concatenate([e, e[:50]])  # duplicate edges
    return e[e[:, 0] != e[:, 1]]


def as_table(e: np.ndarray, ids: str) -> pa.Table:
    if ids == "int64":
        return pa.table({"src": pa.array(e[:, 0], pa.int64()), "dst": pa.array(e[:, 1], pa.int64())})
    return pa.table({"src": pa.array([f"d{x:06d}" for x in e[:, 0]]), "dst": pa.array([f"d{x:06d}" for x in e[:, 1]])})


def check(result: pa.Table, e: np.ndarray, ids: str) -> None:
    want = union_find(e[:, 0], e[:, 1])
    if ids == "string":
        want = {f"d{k:06d}": f"d{v:06d}" for k, v in want.items()}
    nodes = result.column("node").to_pylist()
    assert len(nodes) == len(set(nodes)) == len(want), "one row per node"
    got = dict(zip(nodes, result.column("component").to_pylist(), strict=True))
    assert got == want
    assert len(set(want.values())) < len(want) / 2, "the graph has real components"


@pytest.mark.parametrize("ids", ["int64", "string"])
def test_spark_components_match_union_find(spark, ids: str) -> None:  # noqa: F811
    from pipelines.engines.spark import SparkEngine

    e = graph(1)
    engine = SparkEngine(Settings().execution())
    result = engine.connected_components(spark.createDataFrame(as_table(e, ids)), partitions=3).toArrow()
    engine.close()
    assert spark.sparkContext._jsc is not None, "close() must not stop a shared session"
    check(result, e, ids)


def test_spark_components_with_empty_partitions(spark) -> None:  # noqa: F811
    """More partitions than nodes: some partitions of a round get no rows (a small near-duplicate step)."""
    from pipelines.engines.spark import SparkEngine

    e = np.array([[5, 9], [9, 12]], dtype=np.int64)
    engine = SparkEngine(Settings().execution())
    result = engine.connected_components(spark.createDataFrame(as_table(e, "int64")), partitions=8).toArrow()
    engine.close()
    pairs = zip(result.column("node").to_pylist(), result.column("component").to_pylist(), strict=True)
    assert sorted(pairs) == [
        (5, 5),
        (9, 5),
        (12, 5),
    ]


@pytest.mark.parametrize(("ids", "partitions"), [("int64", 3), ("string", 3), ("int64", 1)])
@pytest.mark.usefixtures("ray_runtime")
def test_ray_components_match_union_find(ids: str, partitions: int) -> None:
    """One partition is what a one-CPU Ray cluster gets by default (``parallelism()``)."""
    import ray
    import ray.data

    from pipelines.engines.ray import RayEngine

    e = graph(2)
    table = as_table(e, ids)
    blocks = [table.slice(i, 300) for i in range(0, table.num_rows, 300)]
    engine = RayEngine(Settings().execution())
    result = engine.connected_components(ray.data.from_arrow(blocks), partitions=partitions)
    engine.close()
    assert ray.is_initialized(), "close() must not stop a shared runtime"
    check(pa.concat_tables(ray.get(result.to_arrow_refs())), e, ids)
