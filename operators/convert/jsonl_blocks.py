"""JSONL read in blocks of lines, each block's objects parsed in one pass.

The per-record reader (:func:`operators.convert.readers.read_jsonl`) is the reference: this module
gives the same records, only faster, and every line it is not sure about goes back to it.

* :func:`read_blocks` reads the decompressed stream in pieces of a few MB, decompressing the next
  piece on a second thread (zlib and zstd release the GIL), and splits them into
  :class:`LineBlock` values of at most ``batch_rows`` lines, in file order, each line cut exactly
  where :class:`~operators.convert.readers._LineCursor` cuts it (its line end, and at offset 0 a
  byte-order mark, removed), with its row and byte offset. An oversized line, and the damage that
  ends a corrupt file, come as the :class:`RawRecord` the per-record reader gives for them, between
  the blocks; a block is never held across one, so file order is kept.
* :func:`operators.convert.json_objects.parse_objects` parses a block's lines; every line it does not
  take, good or bad, is for :func:`~operators.convert.readers.line_record` and
  :func:`~operators.convert.readers.jsonl_record`: its reason, message and raw bytes are the
  per-record reader's because they are made by the same code.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import accumulate
from typing import IO, NamedTuple

import pyarrow.fs as pafs

from operators.convert.readers import (
    CORRUPTION_ERRORS,
    RawRecord,
    ReadOptions,
    corrupt_record,
    line_record,
    open_decompressed,
)

_BOM = b"\xef\xbb\xbf"
_PIECE_BYTES = 4 << 20  # decompressed bytes read ahead at a time


class LineBlock(NamedTuple):
    row: int  # row of lines[0]
    lines: list[bytes]  # as _LineCursor gives them: no line end, no BOM at offset 0; none oversized
    offsets: list[int]  # byte offset of each line in the decompressed stream


def _read_ahead(stream: IO[bytes]) -> tuple[bytes, BaseException | None]:
    """The stream's next piece: everything it could read, then the damage that stopped it, if any.
    ``read1`` does one raw read at a time, so no byte before the damage is lost."""
    parts: list[bytes] = []
    size = 0
    try:
        while size < _PIECE_BYTES:
            part = stream.read1(min(_PIECE_BYTES - size, 1 << 20))  # type: ignore[attr-defined]
            if not part:
                break
            parts.append(part)
            size += len(part)
    except CORRUPTION_ERRORS as exc:
        return b"".join(parts), exc
    return b"".join(parts), None


class _Splitter:
    """Cuts pieces of the stream into lines and groups them into blocks (state between pieces)."""

    def __init__(self, limit: int, block_lines: int) -> None:
        self.limit, self.block_lines = limit, block_lines
        self.row = 0  # row and offset of the next line
        self.offset = 0
        self.carry = b""  # the start of a line whose end was not read yet
        self.oversized: bytes | None = None  # the first limit + 1 bytes of an oversized line being skipped
        self.skipped = 0  # bytes of that line so far
        self.lines: list[bytes] = []  # the block being filled, and the row and offsets of its lines
        self.first_row = 0
        self.offsets: list[int] = []

    def feed(self, data: bytes) -> list[LineBlock | RawRecord]:
        out: list[LineBlock | RawRecord] = []
        if self.oversized is not None:
            end = data.find(b"\n")
            if end < 0:
                self.skipped += len(data)
                return out
            self._end_oversized(self.skipped + end + 1, out)
            data = data[end + 1 :]
        if self.carry:
            data = self.carry + data
        cut = data.rfind(b"\n") + 1
        self.carry = data[cut:]
        if cut:
            self._add_lines(data[:cut].split(b"\n")[:-1], out)
        if len(self.carry) > self.limit:  # a line longer than the limit: keep its head, skip the rest
            self.oversized, self.skipped, self.carry = self.carry[: self.limit + 1], len(self.carry), b""
        return out

    def finish(self) -> list[LineBlock | RawRecord]:
        """At the end of the stream: the last line, if it has no line end, and the last block."""
        out: list[LineBlock | RawRecord] = []
        if self.oversized is not None:
            self._end_oversized(self.skipped, out)
        elif self.carry:
            self._add_lines([self.carry], out, ended=False)
            self.carry = b""
        self.flush(out)
        return out

    def flush(self, out: list[LineBlock | RawRecord]) -> None:
        if self.lines:
            out.append(LineBlock(self.first_row, self.lines, self.offsets))
            self.lines, self.offsets = [], []

    def _end_oversized(self, size: int, out: list[LineBlock | RawRecord]) -> None:
        assert self.oversized is not None
        self.flush(out)
        head = self.oversized.removeprefix(_BOM) if self.offset == 0 else self.oversized
        out.append(line_record(self.row, self.offset, head, True, self.limit))
        self.row, self.offset, self.oversized = self.row + 1, self.offset + size, None

    def _add_lines(self, parts: list[bytes], out: list[LineBlock | RawRecord], ended: bool = True) -> None:
        if max(map(len, parts)) > self.limit:  # rare: one at a time around the oversized ones
            for part in parts:
                if len(part) > self.limit:
                    self.oversized = part[: self.limit + 1]
                    self._end_oversized(len(part) + ended, out)
                else:
                    self._add_lines([part], out, ended)
            return
        offsets = list(accumulate((len(p) + ended for p in parts), initial=self.offset))
        if self.offset == 0:
            parts[0] = parts[0].removeprefix(_BOM)
        if any(p.endswith(b"\r") for p in parts):
            parts = [p.rstrip(b"\r\n") for p in parts]
        if not self.lines:
            self.first_row = self.row
        self.row += len(parts)
        self.offset = offsets.pop()
        self.lines.extend(parts)
        self.offsets.extend(offsets)
        while len(self.lines) >= self.block_lines:
            n = self.block_lines
            out.append(LineBlock(self.first_row, self.lines[:n], self.offsets[:n]))
            self.lines, self.offsets, self.first_row = self.lines[n:], self.offsets[n:], self.first_row + n


def read_blocks(
    fs: pafs.FileSystem, path: str, opts: ReadOptions, name: str | None = None
) -> Iterator[LineBlock | RawRecord]:
    """A JSONL file's lines in blocks, with oversized lines and damage as records between them
    (see the module docstring). Never raises for bad data."""
    try:
        stream = open_decompressed(fs, path, name)
    except CORRUPTION_ERRORS as exc:
        yield corrupt_record(0, 0, exc)
        return
    splitter = _Splitter(opts.max_record_bytes, opts.batch_rows)
    with stream, ThreadPoolExecutor(1, thread_name_prefix="convert-read") as pool:
        ahead: Future[tuple[bytes, BaseException | None]] = pool.submit(_read_ahead, stream)
        while True:
            data, damage = ahead.result()
            if data and damage is None:
                ahead = pool.submit(_read_ahead, stream)
            out = splitter.feed(data) if data else []
            if damage is not None:
                # what the per-record reader does: the lines before the damage, then the damage at
                # the line it was reading (a line cut short by it is lost with it)
                splitter.flush(out)
                yield from out
                yield corrupt_record(splitter.row, splitter.offset, damage)
                return
            if not data:
                yield from out
                yield from splitter.finish()
                return
            yield from out
