"""Hash and range shuffles on Ray as plain tasks and object-store references.

Ray Data's ``groupby``/``sort``/``union`` cost several seconds per call here even on a few rows
(they start their own operators and wait on them), which dominated every run. A shuffle is
simple as tasks: every *scatter* task reads one input (a staged file or a block reference) and
returns one piece per partition (``num_returns``); every *reduce* task receives its piece from
each scatter task. The driver holds only references (range boundaries, where used, are the
caller's).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import ray
from ray import ObjectRef

from pipelines.arrow_util import conform
from pipelines.engines import connected_components as components
from storage.tier import Tier

Transform = Callable[[pa.Table], pa.Table]


@dataclass(frozen=True)
class FileInput:
    """A staged Parquet file to read (``schema``'s columns) and scatter."""

    tier: Tier
    path: str
    schema: pa.Schema

    def read(self) -> pa.Table:
        with self.tier.filesystem.open_input_file(self.tier.path(self.path)) as fh:
            table = pq.read_table(fh, columns=self.schema.names)
        return pa.Table.from_batches([conform(b, self.schema) for b in table.to_batches()], schema=self.schema)


Input = FileInput | ObjectRef


def _load(item: FileInput | pa.Table) -> pa.Table:
    return item.read() if isinstance(item, FileInput) else item


def _range_parts(keys: pa.ChunkedArray | pa.Array, boundaries: pa.Array) -> np.ndarray:
    """Partition ``i`` holds keys in [boundaries[i-1], boundaries[i])."""
    parts = np.zeros(len(keys), np.int64)
    for bound in boundaries:
        parts += pc.greater_equal(keys, bound).to_numpy(zero_copy_only=False).astype(np.int64)
    return parts


def _split(table: pa.Table, parts: np.ndarray, partitions: int) -> tuple[pa.Table, ...]:
    order = np.argsort(parts, kind="stable")
    bounds = np.searchsorted(parts[order], np.arange(partitions + 1))
    ordered = table.take(pa.array(order))
    return tuple(ordered.slice(bounds[p], bounds[p + 1] - bounds[p]) for p in range(partitions))


@ray.remote
def _scatter(
    item: FileInput | pa.Table, transform: Transform | None, key: str, partitions: int, boundaries: pa.Array | None
) -> tuple[pa.Table, ...] | pa.Table:
    table = _load(item)
    if transform is not None:
        table = transform(table)
    if boundaries is None:
        parts = components.partition_of(table.column(key), partitions) if table.num_rows else np.zeros(0, np.int64)
    else:
        parts = _range_parts(table.column(key), boundaries)
    pieces = _split(table, parts, partitions)
    return pieces if partitions > 1 else pieces[0]


@ray.remote
def _reduce(fn: Callable[..., object], counts: tuple[int, ...], *pieces: pa.Table) -> object:
    """Concatenate each side's pieces for this partition and call ``fn(side0, side1, ...)``."""
    tables, start = [], 0
    for count in counts:
        own = [p for p in pieces[start : start + count]]
        tables.append(pa.concat_tables(own) if own else None)
        start += count
    return fn(*tables)


def _refs(result: ObjectRef | list[ObjectRef]) -> list[ObjectRef]:
    return result if isinstance(result, list) else [result]


def shuffle(
    sides: Sequence[tuple[Sequence[Input], Transform | None]],
    key: str,
    partitions: int,
    fn: Callable[..., object],
    ranges: pa.Array | None = None,
) -> list[ObjectRef]:
    """Co-partition every side by ``key`` (hash, or ``ranges``) and call ``fn`` once per partition.

    ``fn`` gets one table per side (None when a side has no input at all).
    """
    if ranges is not None:
        partitions = len(ranges) + 1
    scattered: list[list[list[ObjectRef]]] = []
    for inputs, transform in sides:
        scattered.append(
            [
                _refs(_scatter.options(num_returns=partitions).remote(i, transform, key, partitions, ranges))
                for i in inputs
            ]
        )
    counts = tuple(len(side) for side in scattered)
    out = []
    for p in range(partitions):
        pieces = [refs[p] for side in scattered for refs in side]
        out.append(_reduce.remote(fn, counts, *pieces))
    return out
