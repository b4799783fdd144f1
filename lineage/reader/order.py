"""The sample order of one epoch, and each rank's share of it. Pure arithmetic, no I/O.

The global order is built from *blocks* (Parquet row groups): the blocks are permuted, grouped
into windows of ``window_blocks`` blocks, and the samples of each window (its blocks' rows taken
in (file, row group) order) are permuted. This is a
shuffle across the whole release with a bounded buffer (one window, at most
``window_blocks`` × rows-per-row-group samples), like mosaicml streaming's block shuffles.

The order depends only on (release, seed, epoch, window_blocks), never on ``world_size``. Rank
``r`` of ``W`` owns the contiguous slice ``[r·n, (r+1)·n)`` of it, ``n = ⌊N/W⌋`` (remainder
dropped) or ``⌈N/W⌉`` (padded by repeating the first ``n·W − N < W`` samples of the order).
Contiguous slices mean each rank reads only its own windows.
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
    def __init__(self, blocks: list[Block], *, seed: int, epoch: int, shuffle: bool, window_blocks: int) -> None:
        if window_blocks < 1:
            raise Invalid("window_blocks must be at least 1")
        self.seed, self.epoch, self.shuffle = seed, epoch, shuffle
        order = (
            np.random.Generator(np.random.PCG64([seed, epoch, 0])).permutation(len(blocks))
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
        return np.random.Generator(np.random.PCG64([self.seed, self.epoch, window + 1])).permutation(size)

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


@dataclass(frozen=True)
class Shard:
    """One rank's range of the epoch order, in positions of the (possibly padded) sequence."""

    total: int
    world_size: int
    rank: int
    remainder: Remainder = "drop"

    def __post_init__(self) -> None:
        if self.world_size < 1 or not 0 <= self.rank < self.world_size:
            raise Invalid(f"rank {self.rank} is not in [0, world_size={self.world_size})")
        if self.remainder not in ("drop", "pad"):
            raise Invalid("remainder must be 'drop' or 'pad'")

    @property
    def samples(self) -> int:
        """Samples this rank reads per epoch (the same on every rank)."""
        if self.remainder == "drop":
            return self.total // self.world_size
        return math.ceil(self.total / self.world_size) if self.total else 0

    def ranges(self, consumed: int = 0) -> list[tuple[int, int]]:
        """Global-order ranges still to read after ``consumed`` samples; padding wraps to the start."""
        lo = self.rank * self.samples + consumed
        hi = (self.rank + 1) * self.samples
        if lo >= hi:
            return []
        if hi <= self.total:
            return [(lo, hi)]
        wrapped = [(max(lo, self.total) - self.total, hi - self.total)]
        return ([(lo, self.total)] if lo < self.total else []) + wrapped

    def readers(self, start: int, end: int, ranks: range) -> int:
        """How many of ``ranks`` read some position in ``[start, end)`` of the order."""
        return sum(any(lo < end and start < hi for lo, hi in replace(self, rank=r).ranges()) for r in ranks)
