"""The reader's epoch order and shares, kept in :mod:`lineage.order.reader` so that the service
can answer which samples a reader-fed training step saw; re-exported here for the reader."""

from lineage.order.reader import Block, EpochOrder, PassOrder, Remainder, Shard, WindowSlice, batch_of_turn, turns

__all__ = ["Block", "EpochOrder", "PassOrder", "Remainder", "Shard", "WindowSlice", "batch_of_turn", "turns"]
