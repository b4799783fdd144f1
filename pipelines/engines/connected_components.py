"""Per-partition kernels of distributed connected components (large-star / small-star).

Kiveris et al., "Connected Components in MapReduce and Beyond" (SoCC 2014). The engines shuffle
edges so that a partition holds every edge of the nodes it owns, and call these kernels on it;
no partition or process ever needs the whole graph. Node ids may be int64 or strings; the
component of a node is the smallest node id in it.

One round is ``large_star`` (input: both directions of every edge, partitioned by ``src``)
then ``small_star`` (input: edges pointing from larger to smaller ids, partitioned by ``src``).
``large_star`` also counts the nodes that are not yet part of a star whose centre is its
component's minimum; when that count is 0 its output is final: ``(leaf, centre)`` edges plus a
``(centre, centre)`` row per centre, i.e. one ``(node, component)`` row for every node.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

SRC, DST, UNSTABLE = "src", "dst", "unstable"
MAX_ROUNDS = 100


def _encode(*columns: pa.ChunkedArray | pa.Array) -> tuple[list[np.ndarray], pa.Array]:
    """Dense int codes whose order is the ids' order, and the sorted distinct ids."""
    arrays = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in columns]
    ids = pc.unique(pa.concat_arrays(arrays))
    ids = ids.take(pc.sort_indices(ids))
    return [pc.index_in(a, value_set=ids).to_numpy(zero_copy_only=False).astype(np.int64) for a in arrays], ids


def _pairs(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct pairs without self loops."""
    keep = src != dst
    if not keep.any():
        return src[:0], dst[:0]
    both = np.unique(np.stack([src[keep], dst[keep]], axis=1), axis=0)
    return both[:, 0], both[:, 1]


def _edges(ids: pa.Array, src: np.ndarray, dst: np.ndarray, unstable: int | None = None) -> pa.Table:
    src_ids, dst_ids = ids.take(pa.array(src)), ids.take(pa.array(dst))
    flags = pa.array(np.zeros(len(src), np.int64))
    if unstable is not None:  # one extra row carrying the partition's count
        src_ids = pa.concat_arrays([src_ids, pa.nulls(1, ids.type)])
        dst_ids = pa.concat_arrays([dst_ids, pa.nulls(1, ids.type)])
        flags = pa.concat_arrays([flags, pa.array([unstable], pa.int64())])
    return pa.table({SRC: src_ids, DST: dst_ids, UNSTABLE: flags})


def output_schema(id_type: pa.DataType) -> pa.Schema:
    return pa.schema([pa.field(SRC, id_type), pa.field(DST, id_type), pa.field(UNSTABLE, pa.int64())])


def symmetric(edges: pa.Table) -> pa.Table:
    """Both directions of every edge (the input of ``large_star``)."""
    src, dst = edges.column(SRC), edges.column(DST)
    return pa.table({SRC: pa.chunked_array(src.chunks + dst.chunks), DST: pa.chunked_array(dst.chunks + src.chunks)})


def large_star(edges: pa.Table) -> pa.Table:
    """For each owned node u with neighbourhood N(u): link every larger neighbour to min(N(u) ∪ {u})."""
    if edges.num_rows == 0:
        return output_schema(edges.schema.field(SRC).type).empty_table()
    (u, v), ids = _encode(edges.column(SRC), edges.column(DST))
    u, v = _pairs(u, v)
    n = len(ids)
    low = np.arange(n)
    np.minimum.at(low, u, v)
    smaller = np.bincount(u[v < u], minlength=n)
    larger = np.bincount(u[v > u], minlength=n)
    unstable = int(((smaller > 1) | ((smaller > 0) & (larger > 0))).sum())
    up = v > u
    centres = np.unique(u[(smaller[u] == 0) & (larger[u] > 0)])
    src = np.concatenate([v[up], centres])
    dst = np.concatenate([low[u[up]], centres])
    both = np.unique(np.stack([src, dst], axis=1), axis=0) if len(src) else np.zeros((0, 2), np.int64)
    return _edges(ids, both[:, 0], both[:, 1], unstable)


def small_star(edges: pa.Table) -> pa.Table:
    """For each owned node u and its smaller neighbours N'(u): link N'(u) ∪ {u} to min(N'(u) ∪ {u})."""
    if edges.num_rows == 0:
        return output_schema(edges.schema.field(SRC).type).empty_table()
    (u, v), ids = _encode(edges.column(SRC), edges.column(DST))
    u, v = _pairs(u, v)
    low = np.arange(len(ids))
    np.minimum.at(low, u, v)
    nodes = np.unique(u)
    src, dst = _pairs(np.concatenate([v, nodes]), np.concatenate([low[u], low[nodes]]))
    return _edges(ids, src, dst)


def edges_only(table: pa.Table) -> pa.Table:
    """Drop the count rows and self rows: the edges ``small_star`` works on."""
    src, dst = table.column(SRC), table.column(DST)
    keep = pc.and_(pc.is_valid(src), pc.not_equal(src, dst))
    return table.filter(keep).select([SRC, DST])


def labels(table: pa.Table) -> pa.Table:
    """Final ``large_star`` output as ``(node, component)`` rows."""
    table = table.filter(pc.is_valid(table.column(SRC)))
    return pa.table({"node": table.column(SRC), "component": table.column(DST)})


def partition_of(ids: pa.Array | pa.ChunkedArray, partitions: int) -> np.ndarray:
    """A process-independent hash partition of node ids (int64: multiplicative hash; else xxh64)."""
    if isinstance(ids, pa.ChunkedArray):
        ids = ids.combine_chunks()
    if pa.types.is_integer(ids.type):
        x = ids.to_numpy(zero_copy_only=False).astype(np.uint64)
        with np.errstate(over="ignore"):
            x = (x ^ (x >> np.uint64(31))) * np.uint64(0x9E3779B97F4A7C15)
        return ((x >> np.uint64(33)) % np.uint64(partitions)).astype(np.int64)
    return np.fromiter(
        (xxhash.xxh64_intdigest(str(v).encode()) % partitions for v in ids.to_pylist()), np.int64, len(ids)
    )


def split(table: pa.Table, column: str, partitions: int) -> list[pa.Table]:
    """Rows of ``table`` by hash partition of ``column``."""
    if table.num_rows == 0:
        return [table] * partitions
    parts = partition_of(table.column(column), partitions)
    order = np.argsort(parts, kind="stable")
    bounds = np.searchsorted(parts[order], np.arange(partitions + 1))
    ordered = table.take(pa.array(order))
    return [ordered.slice(bounds[p], bounds[p + 1] - bounds[p]) for p in range(partitions)]


KEY, NODE = "key", "node"


def bucket_star(table: pa.Table) -> pa.Table:
    """Star edges ``(member, smallest member)`` of every key group with two or more members.

    Input rows are ``(key, node)``, with complete key groups (one hash partition of the keys).
    Stars keep the edge count linear in the group size; components are unchanged.
    """
    if table.num_rows == 0:
        return pa.table(
            {SRC: pa.array([], table.schema.field(NODE).type), DST: pa.array([], table.schema.field(NODE).type)}
        )
    (nodes,), ids = _encode(table.column(NODE))
    keys = table.column(KEY).to_numpy()
    order = np.lexsort((nodes, keys))
    k, n = keys[order], nodes[order]
    start = np.ones(len(k), dtype=bool)
    start[1:] = k[1:] != k[:-1]
    heads = n[np.maximum.accumulate(np.where(start, np.arange(len(n)), 0))]
    src, dst = _pairs(n, heads)
    return pa.table({SRC: ids.take(pa.array(src)), DST: ids.take(pa.array(dst))})
