"""A torch ``IterableDataset`` over a release (install the ``[torch]`` extra).

With DataLoader workers, each worker reads its own slice: worker ``w`` of ``k`` on rank ``r`` of
``W`` acts as rank ``r·k + w`` of ``W·k``, so the samples are still each read exactly once.
"""

from __future__ import annotations

from typing import Any

from torch.utils.data import IterableDataset, get_worker_info

from lineage.reader.release_reader import ReleaseReader


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
        workers, worker = (info.num_workers, info.id) if info is not None else (1, 0)
        return ReleaseReader(
            self.ref,
            rank=self.rank * workers + worker,
            world_size=self.world_size * workers,
            epoch=self.epoch,
            **self.reader_kwargs,
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
