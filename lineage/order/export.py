"""The order in which our reader (``open_release(ref, export=ID)``, the torch ``ReleaseDataset``) serves a
training export's sequences, and so which sequences a reader-fed training step saw.

An export's *blocks* are runs of ``block_sequences`` consecutive sequences of one shard; the epoch
order is :class:`~lineage.order.reader.EpochOrder` over them. Rank ``r`` of ``W`` reads its
slice of that order, split into one piece per DataLoader worker (``lineage.order.reader.Shard``), each piece
batched by ``batch_size`` and the batches handed out in turn (``lineage.order.reader.batch_of_turn``).
Global step ``t`` of an epoch is batch ``t`` of every rank. ``tests/lineage/reader/test_export_reader.py``
checks this against iterating the reader through real DataLoaders.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lineage.errors import Invalid
from lineage.order.reader import Block, EpochOrder, Remainder, Shard, WindowSlice, batch_of_turn

BLOCK_SEQUENCES = 256


def export_blocks(manifest: dict[str, Any], block_sequences: int) -> list[Block]:
    """The export's blocks: runs of ``block_sequences`` sequences of one shard, in shard order."""
    if block_sequences < 1:
        raise Invalid("block_sequences must be at least 1")
    return [
        Block(shard["index"], j, min(block_sequences, shard["sequences"] - j * block_sequences))
        for shard in manifest["shards"]
        for j in range(-(-shard["sequences"] // block_sequences))
    ]


def window_sequences(manifest: dict[str, Any], piece: WindowSlice, block_sequences: int) -> np.ndarray:
    """The global sequence index of each row of ``piece``'s window (its blocks in (shard, block) order)."""
    firsts = {s["index"]: s["first_sequence"] for s in manifest["shards"]}
    blocks = sorted(piece.blocks, key=lambda b: (b.file, b.row_group))
    return np.concatenate(
        [firsts[b.file] + b.row_group * block_sequences + np.arange(b.rows, dtype=np.int64) for b in blocks]
    )


@dataclass(frozen=True)
class ReaderJob:
    """What a training job that read an export with our reader recorded (its loaders' arguments)."""

    seed: int
    world_size: int
    batch_size: int  # per rank, the DataLoader's
    epoch: int = 0
    num_workers: int = 0
    drop_last: bool = False
    shuffle: bool = True
    remainder: Remainder = "drop"
    window_blocks: int = 4
    block_sequences: int = BLOCK_SEQUENCES


def step_sequences(manifest: dict[str, Any], job: ReaderJob, step: int) -> list[tuple[int, list[int]]]:
    """(rank, the global sequence indices of its batch, in batch order) for each rank at global step ``step``."""
    order = EpochOrder(
        export_blocks(manifest, job.block_sequences),
        seed=job.seed,
        epoch=job.epoch,
        shuffle=job.shuffle,
        window_blocks=job.window_blocks,
    )
    workers = max(1, job.num_workers)
    total = manifest["sequences"]
    at = _Positions(manifest, order, job.block_sequences)
    answer = []
    for rank in range(job.world_size):
        shard = Shard(total, job.world_size, rank, job.remainder, 0, workers)
        ranges = [shard.part_range(p) for p in range(workers)]
        turn = batch_of_turn([hi - lo for lo, hi in ranges], job.batch_size, job.drop_last, step)
        if turn is None:
            raise Invalid(f"step {step} is beyond epoch {job.epoch}'s last step for this job")
        piece, batch = turn
        lo = ranges[piece][0] + batch * job.batch_size
        hi = min(lo + job.batch_size, ranges[piece][1])
        answer.append((rank, [at(p % total) for p in range(lo, hi)]))  # padding wraps to the start
    return answer


class _Positions:
    """The global sequence at a position of the epoch's order; each window's permutation drawn once."""

    def __init__(self, manifest: dict[str, Any], order: EpochOrder, block_sequences: int) -> None:
        self.manifest, self.order, self.block_sequences = manifest, order, block_sequences
        self.windows: dict[int, np.ndarray] = {}

    def __call__(self, position: int) -> int:
        (piece,) = self.order.slices(position, position + 1)
        if piece.window not in self.windows:
            whole = WindowSlice(piece.window, piece.blocks, 0, self.order.window_size(piece.window))
            rows = self.order.rows(whole)
            self.windows[piece.window] = window_sequences(self.manifest, whole, self.block_sequences)[rows]
        return int(self.windows[piece.window][piece.start])
