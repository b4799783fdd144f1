"""A torch ``IterableDataset`` over a release or one of its training exports (install the ``[torch]`` extra).

**Workers.** With DataLoader workers, a rank's share of the epoch is split into one contiguous piece
per worker, sizes differing by at most one (:class:`~lineage.reader.order.Shard`), so the workers
together deliver exactly the rank's share, every sample once, whatever the remainders. A worker
process already reads while the training step runs, so its reader decodes in the worker's own
thread (``prefetch=False``), and the node's cores are counted as shared by its ranks' workers.

**Resume.** The DataLoader hands out batches from its workers in turn (``in_order``), skipping
workers that have run out. :class:`ReleaseDataLoader` counts the batches the training loop took, so
:meth:`ReleaseDataset.state_dict` knows how many samples each worker's piece delivered and which
worker's batch comes next. A loader resumed from that state gives its worker ``j`` the piece of
worker ``(j + next) % num_workers``, each continuing after its delivered samples: the batches that
follow are exactly those the interrupted loader would have given.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from lineage.errors import Invalid
from lineage.reader.export_reader import ExportReader
from lineage.reader.order import turns
from lineage.reader.release_reader import ReleaseReader

DATASET_STATE_VERSION = 1


class ReleaseDataset(IterableDataset):
    """Yields dict rows (or Arrow batches with ``as_dicts=False``) of one rank's share; with
    ``export=ID``, the export's sequences as ``{"sequence": int, "tokens": LongTensor}``."""

    def __init__(
        self, ref: str, *, rank: int = 0, world_size: int = 1, export: str | None = None, **reader_kwargs: Any
    ) -> None:
        super().__init__()
        self.ref, self.rank, self.world_size, self.export = ref, rank, world_size, export
        self.reader_kwargs = reader_kwargs if export else {"as_dicts": True, **reader_kwargs}
        self.epoch = self.reader_kwargs.pop("epoch", 0)
        self._resume: dict[str, Any] | None = None  # what the next iteration starts from
        self._reader: ReleaseReader | ExportReader | None = None  # the in-process reader (num_workers=0)
        self._loader: _Progress | None = None  # set by ReleaseDataLoader while it iterates

    def _open(self, part: int, parts: int, in_worker: bool) -> ReleaseReader | ExportReader:
        kwargs = {"prefetch": False, **self.reader_kwargs} if in_worker else self.reader_kwargs
        opener = ExportReader if self.export else ReleaseReader
        extra = {"export": self.export} if self.export else {}
        return opener(
            self.ref,
            rank=self.rank,
            world_size=self.world_size,
            epoch=self.epoch,
            worker=part,
            num_workers=parts,
            **extra,
            **kwargs,
        )

    def __iter__(self):  # type: ignore[no-untyped-def]
        info = get_worker_info()
        workers, worker = (1, 0) if info is None else (info.num_workers, info.id)
        state = self._resume
        rotation = 0
        if state is not None:
            if state["num_workers"] != workers:
                raise Invalid(
                    f"cannot resume: the state is of {state['num_workers']} DataLoader worker(s) (0 counts as 1), "
                    f"this loader has {workers}"
                )
            rotation = state["rotation"]
        part = (worker + rotation) % workers
        reader = self._open(part, workers, info is not None)
        if state is not None:
            reader.load_state_dict(state["readers"][part])
        self._reader = reader  # in a worker process, that process's copy of the dataset
        it = iter(reader)
        if self.export:
            return (_as_tensors(item) for item in it)
        return it

    def set_epoch(self, epoch: int) -> None:
        """Start another epoch; call it before iterating the loader for that epoch (not with
        ``persistent_workers``, whose workers keep the dataset they were started with)."""
        self.epoch, self._resume, self._reader = epoch, None, None
        if self._loader is not None:
            self._loader = None

    def state_dict(self) -> dict[str, Any]:
        """Where the training loop is: with a :class:`ReleaseDataLoader`, after the batches it has
        handed out (any ``num_workers``, from the moment it is iterated); else after the samples the
        in-process reader yielded (``num_workers=0``)."""
        if self._loader is not None:
            return self._loader.state()
        if self._reader is not None:
            return _state(1, 0, [self._reader.state_dict()])
        if self._resume is not None:
            return self._resume
        raise Invalid(
            "state_dict(): this dataset has not been iterated in this process; iterate it through a "
            "ReleaseDataLoader (any num_workers: a plain DataLoader's workers are other processes, and "
            "their progress cannot be known here)"
        )

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume from :meth:`state_dict` (or from a bare reader's ``state_dict()``, one worker)."""
        if "samples_consumed" in state:  # an open_release reader's state
            state = _state(1, 0, [state])
        if state.get("version") != DATASET_STATE_VERSION or state.get("kind") != "ReleaseDataset":
            raise Invalid(f"not a ReleaseDataset state (version {state.get('version')!r})")
        self._resume, self._reader, self._loader = state, None, None
        self.epoch = state["readers"][0]["epoch"]


class ReleaseDataLoader(DataLoader):
    """A ``DataLoader`` over a :class:`ReleaseDataset` that counts the batches it hands out, so that
    ``dataset.state_dict()`` (or ``loader.state_dict()``) works with any ``num_workers`` and resumes exactly."""

    def __init__(self, dataset: ReleaseDataset, *args: Any, **kwargs: Any) -> None:
        if not isinstance(dataset, ReleaseDataset):
            raise Invalid("ReleaseDataLoader reads a ReleaseDataset")
        if kwargs.get("in_order", True) is False:
            raise Invalid("ReleaseDataLoader needs in_order=True: resuming relies on the workers' turn order")
        super().__init__(dataset, *args, **kwargs)

    def __iter__(self):  # type: ignore[no-untyped-def]
        dataset: ReleaseDataset = self.dataset  # type: ignore[assignment]
        progress = _Progress(dataset, max(1, self.num_workers), self.batch_size, self.drop_last)
        batches = super().__iter__()  # pickles the dataset for the workers, with its resume state
        dataset._loader = progress
        for batch in batches:
            progress.batches += 1
            yield batch

    def state_dict(self) -> dict[str, Any]:
        return self.dataset.state_dict()  # type: ignore[attr-defined]

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.dataset.load_state_dict(state)  # type: ignore[attr-defined]


class _Progress:
    """One pass of a :class:`ReleaseDataLoader`: the pieces' sizes, where they started, and the
    batches taken so far."""

    def __init__(self, dataset: ReleaseDataset, workers: int, batch_size: int | None, drop_last: bool) -> None:
        start = dataset._resume
        if start is not None and start["num_workers"] != workers:
            raise Invalid(
                f"cannot resume: the state is of {start['num_workers']} DataLoader worker(s) (0 counts as 1), "
                f"this loader has {workers}"
            )
        # the pieces' identity and sizes, from the release's manifest (opened here, in the main process)
        probe = dataset._open(0, workers, False)
        template = probe.state_dict()
        sizes = [hi - lo for lo, hi in (probe.shard.part_range(p) for p in range(workers))]
        self.readers = start["readers"] if start else [{**template, "worker": p} for p in range(workers)]
        self.rotation = start["rotation"] if start else 0
        self.done = [r["samples_consumed"] for r in self.readers]
        self.remaining = [size - done for size, done in zip(sizes, self.done, strict=True)]
        self.batch_size, self.drop_last, self.batches = batch_size or 1, bool(drop_last and batch_size), 0

    def state(self) -> dict[str, Any]:
        delivered, rotation = turns(self.remaining, self.batch_size, self.drop_last, self.rotation, self.batches)
        pairs = zip(self.readers, self.done, delivered, strict=True)
        readers = [{**r, "samples_consumed": done + got} for r, done, got in pairs]
        return _state(len(readers), rotation, readers)


def _state(workers: int, rotation: int, readers: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "version": DATASET_STATE_VERSION,
        "kind": "ReleaseDataset",
        "num_workers": workers,
        "rotation": rotation,
        "readers": readers,
    }


def _as_tensors(item: dict[str, Any]) -> dict[str, Any]:
    return {"sequence": item["sequence"], "tokens": torch.from_numpy(item["tokens"].astype("int64"))}
