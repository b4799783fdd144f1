"""The order in which the training reader (``open_release``) serves one epoch, and each rank's (and each
DataLoader worker's) share of it. Pure arithmetic, no I/O: the reader iterates it, and the service
answers "which sequences were in step t" of a reader-fed job from it (:mod:`lineage.order.export`).

The global order is built from *blocks* (Parquet row groups): the blocks are permuted, grouped
into windows of ``window_blocks`` blocks, and the samples of each window (its blocks' rows taken
in (file, row group) order) are permuted. This is a
shuffle across the whole release with a bounded buffer (one window, at most
``window_blocks`` × rows-per-row-group samples), like mosaicml streaming's block shuffles.

The order depends only on (release, seed, epoch, window_blocks), never on ``world_size``. Rank
``r`` of ``W`` owns the contiguous slice ``[r·n, (r+1)·n)`` of it, ``n = ⌊N/W⌋`` (remainder
dropped) or ``⌈N/W⌉`` (padded by repeating the first ``n·W − N < W`` samples of the order).
Contiguous slices mean each rank reads only its own windows. A rank's slice is split the same way
among its DataLoader workers, and the DataLoader hands out their batches in turn (:func:`turns`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from lineage.errors import Invalid

Remainder = Literal["drop", "pad"]


@dataclass(frozen=True)
class Block:
    file: int  # index into the manifest's file list
    row_group: int
    rows: int


@dataclass(frozen=True)
class WindowSlice:
    """Positions ``[start, stop)`` of one window's permutation: which of the window's rows
    (indices into its concatenated blocks) are served, see :meth:`EpochOrder.rows`."""

    window: int
    blocks: tuple[Block, ...]
    start: int
    stop: int

    @property
    def size(self) -> int:
        return self.stop - self.start


class EpochOrder:
    def __init__(
        self,
        blocks: list[Block],
        *,
        seed: int,
        epoch: int,
        shuffle: bool,
        window_blocks: int,
        stream: tuple[int, ...] = (),
    ) -> None:
        """``stream``: more seed words, for independent orders of one epoch (a mixture's passes)."""
        if window_blocks < 1:
            raise Invalid("window_blocks must be at least 1")
        self.seed, self.epoch, self.shuffle, self.stream = seed, epoch, shuffle, stream
        order = (
            np.random.Generator(np.random.PCG64([seed, epoch, 0, *stream])).permutation(len(blocks))
            if shuffle
            else np.arange(len(blocks))
        )
        self.windows: list[tuple[Block, ...]] = [
            tuple(blocks[i] for i in order[k : k + window_blocks]) for k in range(0, len(order), window_blocks)
        ]
        sizes = np.array([sum(b.rows for b in w) for w in self.windows], dtype=np.int64)
        self.starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.total = int(self.starts[-1])

    def window_size(self, window: int) -> int:
        return int(self.starts[window + 1] - self.starts[window])

    def window_permutation(self, window: int) -> np.ndarray:
        size = self.window_size(window)
        if not self.shuffle:
            return np.arange(size, dtype=np.int64)
        return np.random.Generator(np.random.PCG64([self.seed, self.epoch, window + 1, *self.stream])).permutation(size)

    def pass_of(self, window: int) -> int:
        """Which repeat pass ``window`` serves: always 0 without a mixture's repeats."""
        return 0

    def slices(self, lo: int, hi: int) -> Iterator[WindowSlice]:
        """The samples at global positions ``[lo, hi)``, window by window, in order."""
        if lo >= hi:
            return
        first = int(np.searchsorted(self.starts, lo, side="right") - 1)
        for w in range(first, len(self.windows)):
            start, end = int(self.starts[w]), int(self.starts[w + 1])
            if start >= hi:
                break
            a, b = max(lo, start) - start, min(hi, end) - start
            if a < b:
                yield WindowSlice(w, self.windows[w], a, b)

    def rows(self, piece: WindowSlice) -> np.ndarray:
        """The rows of ``piece``'s window that it serves, in order. Drawing a window's permutation
        takes about a millisecond, so readers draw them as they go, not all up front."""
        return self.window_permutation(piece.window)[piece.start : piece.stop]


class PassOrder(EpochOrder):
    """An epoch of a release whose samples are served several times (a mixture's repeats).

    Pass ``p`` serves the samples with more than ``p`` repeats, in an order of its own over the same
    blocks (each block counted by those samples only): whole passes first, then the hash-chosen
    remainder. Pass 0 is the plain order (every sample is served at least once), so a release
    without repeats has one pass and the order of :class:`EpochOrder`.
    """

    def __init__(
        self, blocks: list[Block], served: list[list[int]], *, seed: int, epoch: int, shuffle: bool, window_blocks: int
    ) -> None:
        """``served[p][i]``: rows of ``blocks[i]`` served in pass ``p``."""
        self.passes = [
            EpochOrder(
                [replace(b, rows=rows[i]) for i, b in enumerate(blocks)],
                seed=seed,
                epoch=epoch,
                shuffle=shuffle,
                window_blocks=window_blocks,
                stream=(p,) if p else (),
            )
            for p, rows in enumerate(served)
        ]
        self.seed, self.epoch, self.shuffle, self.stream = seed, epoch, shuffle, ()
        self.windows = [w for order in self.passes for w in order.windows]
        self._where = [(p, w) for p, order in enumerate(self.passes) for w in range(len(order.windows))]
        sizes = np.array([sum(b.rows for b in w) for w in self.windows], dtype=np.int64)
        self.starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.total = int(self.starts[-1])

    def window_permutation(self, window: int) -> np.ndarray:
        p, w = self._where[window]
        return self.passes[p].window_permutation(w)

    def pass_of(self, window: int) -> int:
        return self._where[window][0]


@dataclass(frozen=True)
class Shard:
    """One reader's range of the epoch order, in positions of the (possibly padded) sequence: part
    ``part`` of ``parts`` (a DataLoader worker of a rank) of rank ``rank``'s slice.

    A rank's slice is split into ``parts`` contiguous pieces whose sizes differ by at most one, so the
    rank's workers together read exactly its share, each sample once, whatever the remainders.
    """

    total: int
    world_size: int
    rank: int
    remainder: Remainder = "drop"
    part: int = 0
    parts: int = 1

    def __post_init__(self) -> None:
        if self.world_size < 1 or not 0 <= self.rank < self.world_size:
            raise Invalid(f"rank {self.rank} is not in [0, world_size={self.world_size})")
        if self.parts < 1 or not 0 <= self.part < self.parts:
            raise Invalid(f"worker {self.part} is not in [0, num_workers={self.parts})")
        if self.remainder not in ("drop", "pad"):
            raise Invalid("remainder must be 'drop' or 'pad'")

    @property
    def rank_samples(self) -> int:
        """Samples each rank reads per epoch (the same on every rank)."""
        if self.remainder == "drop":
            return self.total // self.world_size
        return math.ceil(self.total / self.world_size) if self.total else 0

    def part_range(self, part: int) -> tuple[int, int]:
        """Positions ``[lo, hi)`` of the (padded) order that part ``part`` of this rank reads."""
        n = self.rank_samples
        size, extra = divmod(n, self.parts)
        lo = self.rank * n + part * size + min(part, extra)
        return lo, lo + size + (part < extra)

    @property
    def samples(self) -> int:
        """Samples this reader (this part of the rank) reads per epoch."""
        lo, hi = self.part_range(self.part)
        return hi - lo

    def ranges(self, consumed: int = 0) -> list[tuple[int, int]]:
        """Global-order ranges still to read after ``consumed`` samples; padding wraps to the start."""
        lo, hi = self.part_range(self.part)
        lo += consumed
        if lo >= hi:
            return []
        if hi <= self.total:
            return [(lo, hi)]
        wrapped = [(max(lo, self.total) - self.total, hi - self.total)]
        return ([(lo, self.total)] if lo < self.total else []) + wrapped

    @property
    def reader(self) -> int:
        """This reader's number among every rank's parts."""
        return self.rank * self.parts + self.part

    def readers(self, start: int, end: int, ranks: range) -> int:
        """How many readers (parts) of ``ranks`` read some position in ``[start, end)`` of the order."""
        return sum(
            any(lo < end and start < hi for lo, hi in replace(self, rank=r, part=p).ranges())
            for r in ranks
            for p in range(self.parts)
        )


def _batches(sizes: list[int], batch: int, drop_last: bool) -> list[int]:
    return [n // batch if drop_last else -(-n // batch) for n in sizes]


def turns(remaining: list[int], batch: int, drop_last: bool, rotation: int, batches: int) -> tuple[list[int], int]:
    """(samples each worker's piece has delivered, the piece whose batch comes next) after a DataLoader
    has handed out ``batches`` batches, asking the pieces in turn from ``rotation`` and skipping those
    that have run out (torch's ``in_order`` behaviour). A piece of ``n`` samples gives ``⌈n / batch⌉``
    batches (``⌊n / batch⌋`` with ``drop_last``)."""
    k = len(remaining)
    left = _batches(remaining, batch, drop_last)
    if batches > sum(left):
        raise Invalid(f"{batches} batches is more than the {sum(left)} this epoch holds")
    rounds = min(batches // k, min(left))  # while every piece has batches, each gives one per round
    given = [rounds] * k
    position, handed = rotation + rounds * k, rounds * k
    while handed < batches:
        p = position % k
        if given[p] < left[p]:
            given[p] += 1
            handed += 1
        position += 1
    return [min(g * batch, n) for g, n in zip(given, remaining, strict=True)], position % k


def batch_of_turn(sizes: list[int], batch: int, drop_last: bool, index: int) -> tuple[int, int] | None:
    """(piece, its batch number) of the ``index``-th batch a DataLoader hands out over pieces of these
    sizes from the start of the epoch (see :func:`turns`); None past the epoch's last batch."""
    k = len(sizes)
    left = _batches(sizes, batch, drop_last)
    if index >= sum(left):
        return None
    rounds = min(index // k, min(left))
    given = [rounds] * k
    position = handed = rounds * k
    while True:
        p = position % k
        if given[p] < left[p]:
            if handed == index:
                return p, given[p]
            given[p] += 1
            handed += 1
        position += 1
