"""A JSONL block and its parsed columns handed to a parser process through shared memory, not a pipe.

Protocol, per block (:func:`operators.convert.operator._parsed` drives it):

1. the parent copies the block's lines into a segment it creates (:func:`share_lines`) and submits
   :func:`parse_shared` with the small :class:`SharedLines` handle;
2. the worker attaches, reads the lines, runs :func:`~operators.convert.json_objects.fast_columns`, writes
   the columns' byte buffers into a segment it creates and returns their :class:`SharedColumns` handle;
3. the parent copies the columns out (:func:`take_columns`) and unlinks both segments. A segment left
   behind by a failure is unlinked by the parent too (:class:`Segments`).

A segment's pages are reserved when it is made (:func:`_segment`): tmpfs grants a segment any size and
then kills the process with SIGBUS at the first page it has no room for (Docker's /dev/shm is 64 MB by
default). When there is no room (or /dev/shm is read-only or missing), the parent parses that block itself
and a worker returns its columns through the pipe: slower, never a crash.

If the parent is killed, each worker exits within :data:`_WATCH_S` (:func:`exit_with`, its initializer:
a worker blocked on its call queue never sees the parent go, since it holds that pipe's write end as well),
and multiprocessing's resource tracker, which the workers share with the parent, unlinks every segment
still there once they are gone.

Why: through ``ProcessPoolExecutor``'s pipes a block (about 1.6 MB of lines) and its columns (about as
much) crossed in 64 KiB pieces, each waiting for a thread of the other side to be scheduled (the parent's
cores are busy building samples and sketching). At 254,724 documents the worker sat idle 12 ms between
consecutive 27 ms blocks, 0.76 s of a 2.5 s convert; the parse was the pipeline's slowest stage. Through
shared memory it idles 0.42 s there, and ``lineage dedupe`` of that file took 5.79-5.80 s against
6.24-6.36 s (of 20,000 documents, 1.09-1.13 s against 1.17-1.22 s; runs interleaved, same output).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from array import array
from multiprocessing.shared_memory import SharedMemory
from typing import NamedTuple

from operators.convert.json_objects import BlockFields, SampleColumns, fast_columns

log = logging.getLogger(__name__)


class SharedLines(NamedTuple):
    """Lines laid end to end in segment ``name``; ``lengths`` their byte lengths (int64)."""

    name: str
    lengths: bytes


class SharedColumns(NamedTuple):
    """A :class:`SampleColumns` whose byte buffers lie end to end in segment ``name`` (``sizes``, in the
    order of :data:`_BUFFERS`); the small fields travel with the handle."""

    name: str
    sizes: tuple[int, ...]
    taken: bytes
    ids: list[object] | None
    meta_valid: bytes


_BUFFERS = ("sample_ids", "text", "text_offsets", "meta", "meta_offsets")
_WATCH_S = 0.5  # how often a worker checks that its parent is alive


def exit_with(parent: int) -> None:
    """A worker's initializer: exit as soon as process ``parent`` is no longer its parent (it died and the
    worker was handed to another process)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(_WATCH_S)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


class NoRoom(Exception):
    """/dev/shm could not hold a segment: it is full, read-only or missing (the segment was not made)."""


def _segment(size: int) -> SharedMemory:
    """A new segment of ``size`` bytes (at least one: a segment cannot be empty), its pages reserved, or
    :class:`NoRoom`. Without the reservation a full tmpfs answers the first write past its limit with
    SIGBUS, which no ``try`` catches."""
    try:
        segment = SharedMemory(create=True, size=max(1, size))
    except OSError as exc:
        raise NoRoom(f"no shared memory segment of {size:,} bytes ({exc})") from exc
    try:
        os.posix_fallocate(segment._fd, 0, max(1, size))  # type: ignore[attr-defined]
    except OSError as exc:
        _unlink(segment)
        raise NoRoom(f"no room in /dev/shm for {size:,} bytes ({exc})") from exc
    return segment


def _unlink(segment: SharedMemory) -> None:
    segment.close()
    with contextlib.suppress(FileNotFoundError):  # gone already (e.g. systemd's RemoveIPC)
        segment.unlink()


def share_lines(lines: list[bytes]) -> tuple[SharedMemory, SharedLines]:
    """The parent's side of step 1: the segment (the caller unlinks it) and the handle to submit; or
    :class:`NoRoom`."""
    data = b"".join(lines)
    segment = _segment(len(data))
    segment.buf[: len(data)] = data
    return segment, SharedLines(segment.name, array("q", map(len, lines)).tobytes())


def parse_shared(lines: SharedLines, fields: BlockFields, first_row: int) -> SharedColumns | SampleColumns:
    """The worker's step 2: ``fast_columns`` of the shared lines, its buffers in a new segment (or, when
    /dev/shm has no room, the columns themselves, through the pipe)."""
    source = SharedMemory(lines.name)
    try:
        view, at, block = source.buf, 0, []
        for n in array("q", lines.lengths):
            block.append(bytes(view[at : at + n]))
            at += n
        del view
    finally:
        source.close()
    made = fast_columns(block, fields, first_row)
    buffers = [getattr(made, name) for name in _BUFFERS]
    try:
        out = _segment(sum(map(len, buffers)))
    except NoRoom:
        return made
    try:
        at = 0
        for buffer in buffers:
            out.buf[at : at + len(buffer)] = buffer
            at += len(buffer)
    except BaseException:
        _unlink(out)
        raise
    out.close()  # the parent unlinks it once it has read it
    return SharedColumns(out.name, tuple(map(len, buffers)), made.taken, made.ids, made.meta_valid)


def take_columns(shared: SharedColumns | SampleColumns) -> SampleColumns:
    """The parent's step 3: the columns, copied out of the worker's segment, which is then unlinked."""
    if isinstance(shared, SampleColumns):
        return shared
    segment = SharedMemory(shared.name)
    try:
        values, at = {}, 0
        for name, size in zip(_BUFFERS, shared.sizes, strict=True):
            values[name] = bytes(segment.buf[at : at + size])
            at += size
    finally:
        segment.close()
        segment.unlink()
    return SampleColumns(taken=shared.taken, ids=shared.ids, meta_valid=shared.meta_valid, **values)


def discard_columns(shared: SharedColumns | SampleColumns) -> None:
    """Unlink the worker's segment of columns the parent will not take."""
    if isinstance(shared, SharedColumns):
        with contextlib.suppress(FileNotFoundError):
            _unlink(SharedMemory(shared.name))


class Segments:
    """The parent's input segments of blocks in flight, unlinked as their columns arrive, and all of them
    by :meth:`close` (a failure, or the consumer stopping early)."""

    def __init__(self) -> None:
        self._open: dict[str, SharedMemory] = {}
        self._short = False  # /dev/shm had no room once (said once)

    def share(self, lines: list[bytes]) -> SharedLines | None:
        """The handle of a segment holding ``lines``, or None when /dev/shm has no room for it."""
        try:
            segment, handle = share_lines(lines)
        except NoRoom as exc:
            if not self._short:
                log.warning("%s: such blocks are parsed in this process, more slowly", exc)
            self._short = True
            return None
        self._open[segment.name] = segment
        return handle

    def release(self, handle: SharedLines) -> None:
        segment = self._open.pop(handle.name, None)
        if segment is not None:
            _unlink(segment)

    def close(self) -> None:
        for segment in self._open.values():
            _unlink(segment)
        self._open.clear()
