"""A torch ``IterableDataset`` over a release (install the ``[torch]`` extra).

With DataLoader workers, each worker reads its own slice: worker ``w`` of ``k`` on rank ``r`` of
``W`` acts as rank ``r·k + w`` of ``W·k``, so the samples are still each read exactly once. A
node's ``L`` ranks then run ``L·k`` readers, which share the node's cores and edge windows as
``L·k`` ranks would. A worker process already reads while the training step runs, so its reader
decodes in the worker's own thread (``prefetch=False``), not in a second one.
"""

from __future__ import annotations

from typing import Any

from torch.utils.data import IterableDataset, get_worker_info

from lineage.reader.release_reader import ReleaseReader, node_world_size


class ReleaseDataset(IterableDataset):
    """Yields dict rows (or Arrow batches with ``as_dicts=False``) of one rank's share."""

    def __init__(self, ref: str, *, rank: int = 0, world_size: int = 1, **reader_kwargs: Any) -> None:
        super().__init__()
        self.ref, self.rank, self.world_size = ref, rank, world_size
        self.reader_kwargs = {"as_dicts": True, **reader_kwargs}
        self.epoch = self.reader_kwargs.pop("epoch", 0)
        self._state: dict[str, Any] | None = None
        self._reader: ReleaseReader | None = None

    def _open(self) -> ReleaseReader:
        info = get_worker_info()
        if info is None:
            workers, worker, kwargs = 1, 0, self.reader_kwargs
        else:
            workers, worker = info.num_workers, info.id
            local = node_world_size(self.reader_kwargs.get("local_world_size"))
            kwargs = {"prefetch": False, **self.reader_kwargs, "local_world_size": local * workers}
        return ReleaseReader(
            self.ref,
            rank=self.rank * workers + worker,
            world_size=self.world_size * workers,
            epoch=self.epoch,
            **kwargs,
        )

    def __iter__(self):  # type: ignore[no-untyped-def]
        reader = self._open()
        if self._state is not None:
            reader.load_state_dict(self._state)
            self._state = None
        self._reader = reader
        return iter(reader)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def state_dict(self) -> dict[str, Any]:
        """Resume state of the in-process reader (``num_workers=0``); per-worker state is not tracked."""
        if self._reader is None:
            raise RuntimeError("state_dict() before iteration started")
        return self._reader.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._state = state
