"""A JSONL block and its parsed columns handed to a parser process through shared memory, not a pipe.

Protocol, per block (:func:`operators.convert.operator._parsed` drives it):

1. the parent copies the block's lines into a segment it creates (:func:`share_lines`) and submits
   :func:`parse_shared` with the small :class:`SharedLines` handle;
2. the worker attaches, reads the lines, runs :func:`~operators.convert.json_objects.fast_columns`, writes
   the columns' byte buffers into a segment it creates and returns their :class:`SharedColumns` handle;
3. the parent copies the columns out (:func:`take_columns`) and unlinks both segments. A segment left
   behind by a failure is unlinked by the parent too (:class:`Segments`).

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

import os
import threading
import time
from array import array
from multiprocessing.shared_memory import SharedMemory
from typing import NamedTuple

from operators.convert.json_objects import SampleColumns, fast_columns


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


def _segment(size: int) -> SharedMemory:
    return SharedMemory(create=True, size=max(1, size))  # a segment cannot be empty


def share_lines(lines: list[bytes]) -> tuple[SharedMemory, SharedLines]:
    """The parent's side of step 1: the segment (the caller unlinks it) and the handle to submit."""
    data = b"".join(lines)
    segment = _segment(len(data))
    segment.buf[: len(data)] = data
    return segment, SharedLines(segment.name, array("q", map(len, lines)).tobytes())


def parse_shared(
    lines: SharedLines, text_field: str, id_field: str | None, dataset: str, path: str, first_row: int
) -> SharedColumns:
    """The worker's step 2: ``fast_columns`` of the shared lines, its buffers in a new segment."""
    source = SharedMemory(lines.name)
    try:
        view, at, block = source.buf, 0, []
        for n in array("q", lines.lengths):
            block.append(bytes(view[at : at + n]))
            at += n
        del view
    finally:
        source.close()
    made = fast_columns(block, text_field, id_field, dataset, path, first_row)
    buffers = [getattr(made, name) for name in _BUFFERS]
    out = _segment(sum(map(len, buffers)))
    try:
        at = 0
        for buffer in buffers:
            out.buf[at : at + len(buffer)] = buffer
            at += len(buffer)
    finally:
        out.close()  # the parent unlinks it once it has read it
    return SharedColumns(out.name, tuple(map(len, buffers)), made.taken, made.ids, made.meta_valid)


def take_columns(shared: SharedColumns) -> SampleColumns:
    """The parent's step 3: the columns, copied out of the worker's segment, which is then unlinked."""
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


def discard_columns(shared: SharedColumns) -> None:
    """Unlink the worker's segment of columns the parent will not take."""
    segment = SharedMemory(shared.name)
    segment.close()
    segment.unlink()


class Segments:
    """The parent's input segments of blocks in flight, unlinked as their columns arrive, and all of them
    by :meth:`close` (a failure, or the consumer stopping early)."""

    def __init__(self) -> None:
        self._open: dict[str, SharedMemory] = {}

    def share(self, lines: list[bytes]) -> SharedLines:
        segment, handle = share_lines(lines)
        self._open[segment.name] = segment
        return handle

    def release(self, handle: SharedLines) -> None:
        segment = self._open.pop(handle.name, None)
        if segment is not None:
            segment.close()
            segment.unlink()

    def close(self) -> None:
        for segment in self._open.values():
            segment.close()
            segment.unlink()
        self._open.clear()
