"""Windows that several ranks of one node read, decoded once and shared through shared memory.

Ranks own contiguous slices of the epoch's order, so the window at the edge between two ranks is
read by both: with ``W`` ranks that is ``W − 1`` windows decoded twice, which matters when a rank's
share is only a few windows long. Ranks of the same node (torchrun numbers them
``node · local_world_size + local_rank``) instead share such a window: the first to need it
decodes it and publishes it as an uncompressed Arrow IPC file under ``/dev/shm`` (written to a
temporary name, then renamed, so a reader never sees a partial file); the others memory-map it.
Each sharer marks the window done when it has read it, and the last one deletes it. Files that a
crashed job left behind are deleted once they are a day old; until then a restarted job reuses
them (a window's contents depend only on the release, columns, seed, epoch and layout).

Losing the cache is never an error: any failure to publish or open a shared window falls back to
decoding it privately.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc

log = logging.getLogger(__name__)

STALE_SECONDS = 24 * 3600


class SharedWindows:
    def __init__(self, directory: Path, key: str) -> None:
        # one private folder per user: /dev/shm is writable by everyone, and a window planted by
        # someone else would be served as training data
        self.directory, self.key = directory / f"uid-{os.getuid()}", key
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = self.directory.stat()
        if info.st_uid != os.getuid() or info.st_mode & 0o077:
            raise PermissionError(f"{self.directory} is not private to this user; not sharing windows there")
        self._sweep()

    def _sweep(self) -> None:
        cutoff = time.time() - STALE_SECONDS
        for path in self.directory.iterdir():
            try:
                if path.stat().st_mtime < cutoff:
                    path.unlink()
            except OSError:
                continue

    def _path(self, window: int, suffix: str) -> Path:
        return self.directory / f"{self.key}-w{window}{suffix}"

    def get(self, window: int, decode: Callable[[], pa.Table]) -> pa.Table:
        """The window's table: memory-mapped if a sharer published it, else decoded and published."""
        path = self._path(window, ".arrow")
        try:
            with pa.memory_map(str(path)) as source:
                return ipc.open_file(source).read_all()
        except FileNotFoundError:
            pass
        except (OSError, pa.ArrowInvalid) as exc:
            log.warning("shared window %s unreadable (%s); decoding it here", path.name, exc)
        table = decode()
        tmp = self._path(window, f".{os.getpid()}.tmp")
        try:
            with pa.OSFile(str(tmp), "wb") as sink, ipc.new_file(sink, table.schema) as writer:
                writer.write_table(table)
            os.replace(tmp, path)
        except OSError as exc:  # e.g. /dev/shm full: the sharers decode it themselves
            log.warning("could not share window %s: %s", path.name, exc)
            tmp.unlink(missing_ok=True)
        return table

    def done(self, window: int, rank: int, sharers: int) -> None:
        """``rank`` has read the window; the last of its ``sharers`` deletes it."""
        self._path(window, f".r{rank}.done").touch()
        marks = list(self.directory.glob(f"{self.key}-w{window}.r*.done"))
        if len(marks) >= sharers:
            self._path(window, ".arrow").unlink(missing_ok=True)
            for mark in marks:
                mark.unlink(missing_ok=True)
