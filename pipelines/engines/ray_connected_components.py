"""Distributed connected components on Ray: large-star / small-star rounds as Ray tasks.

Each round is two shuffles done with plain tasks and the object store: a task owns one hash
partition of the nodes, receives its share of the edges from every task of the previous phase
and returns one piece per partition of the next phase (``num_returns``). The driver only holds
object references and per-partition counts; no task holds more than its partition's edges.
Ray Data's own shuffles cost seconds per round here; tasks cost milliseconds.
"""

from __future__ import annotations

import logging

import pyarrow as pa
import pyarrow.compute as pc
import ray
from ray import ObjectRef

from pipelines.engines import connected_components as components

log = logging.getLogger(__name__)


def _concat(pieces: tuple[pa.Table, ...]) -> pa.Table:
    tables = [p.select([components.SRC, components.DST]) for p in pieces if p.num_rows]
    return pa.concat_tables(tables) if tables else pieces[0].select([components.SRC, components.DST])


@ray.remote
def _scatter(partitions: int, edges: pa.Table) -> tuple[pa.Table, ...] | pa.Table:
    """Both directions of an input block's edges, split by owner of ``src``."""
    return _one_or_many(components.split(components.symmetric(edges), components.SRC, partitions))


@ray.remote
def _large_star(partitions: int, *pieces: pa.Table) -> tuple:
    """Returns (unstable count, (node, component) labels if final, pieces for small-star by ``src``)."""
    star = components.large_star(_concat(pieces))
    unstable = int(pc.sum(star.column(components.UNSTABLE)).as_py() or 0)
    labels = components.labels(star) if unstable == 0 else None
    return (unstable, labels, *components.split(components.edges_only(star), components.SRC, partitions))


@ray.remote
def _small_star(partitions: int, *pieces: pa.Table) -> tuple[pa.Table, ...] | pa.Table:
    """Small-star over one partition, then both directions split by ``src`` for the next large-star."""
    edges = components.small_star(_concat(pieces)).select([components.SRC, components.DST])
    return _one_or_many(components.split(components.symmetric(edges), components.SRC, partitions))


def _one_or_many(pieces: list[pa.Table]) -> tuple[pa.Table, ...] | pa.Table:
    """What a task with ``num_returns=len(pieces)`` returns: Ray stores a 1-tuple as one object."""
    return tuple(pieces) if len(pieces) > 1 else pieces[0]


def _refs(result: ObjectRef | list[ObjectRef]) -> list[ObjectRef]:
    """``.remote()`` gives a list of refs for ``num_returns`` > 1, a bare ref for 1."""
    return result if isinstance(result, list) else [result]


def _transpose(outputs: list[list[ObjectRef]], offset: int = 0) -> list[list[ObjectRef]]:
    """outputs[task][offset + p] -> inputs[p][task]."""
    partitions = len(outputs[0]) - offset
    return [[refs[offset + p] for refs in outputs] for p in range(partitions)]


def connected_components(edge_blocks: list[ObjectRef], partitions: int) -> list[ObjectRef]:
    """Object refs of ``(node, component = smallest node id)`` tables for ``(src, dst)`` edge blocks."""
    n = partitions
    if not edge_blocks:
        return []
    inputs = _transpose([_refs(_scatter.options(num_returns=n).remote(n, block)) for block in edge_blocks])
    for rounds in range(1, components.MAX_ROUNDS + 1):
        star = [_large_star.options(num_returns=n + 2).remote(n, *inputs[p]) for p in range(n)]
        if sum(ray.get([refs[0] for refs in star])) == 0:
            log.info("connected components: converged after %d rounds", rounds)
            return [refs[1] for refs in star]
        small = [_refs(_small_star.options(num_returns=n).remote(n, *parts)) for parts in _transpose(star, offset=2)]
        inputs = _transpose(small)
    raise RuntimeError(f"connected components did not converge in {components.MAX_ROUNDS} rounds")
