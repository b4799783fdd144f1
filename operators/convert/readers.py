"""Per-format record iterators. They never raise for bad data: they yield a record with a reason.

A reader yields :class:`RawRecord` values in file order. ``row`` is the record's 0-based index
in the file (JSONL/text lines: the line number; CSV: the data row after the header; Parquet:
the row), ``offset`` the byte offset of the record in the (decompressed) stream when the format
has one. A corrupt or truncated file yields the records before the damage, then one record with
reason ``corrupt_file``.

Readers are called as ``reader(fs, path, opts, name)``: ``path`` is what to open, ``name`` the
name the file is listed under, whose extension picks the decompression (``.gz``, ``.zst``) and the
TSV delimiter. They differ when ``path`` is where a symbolic link leads (see :mod:`storage.links`).
"""

from __future__ import annotations

import csv
import io
import json
import logging
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import zstandard

log = logging.getLogger(__name__)

_CORRUPTION_ERRORS = (OSError, EOFError, zlib.error, zstandard.ZstdError, pa.ArrowException, csv.Error)


@dataclass(slots=True)
class RawRecord:
    row: int | None
    offset: int | None
    value: Any = None  # parsed record: dict for JSONL/CSV/Parquet, str for text
    raw: bytes | None = None
    reason: str | None = None  # set when the record is bad
    message: str | None = None


@dataclass(frozen=True)
class ReadOptions:
    max_record_bytes: int
    text_mode: str = "file"  # text format: "file" (one doc per file) or "line"
    csv_delimiter: str | None = None
    batch_rows: int = 4096


class _GzipRaw(io.RawIOBase):
    """Gzip decompression that hands out every byte it could decompress before raising on damage.

    ``gzip.GzipFile`` under a large read buffer drops the last decompressed block when the file is
    truncated; here a truncated stream raises only once everything before the damage was read.
    Concatenated gzip members are supported.
    """

    def __init__(self, raw: IO[bytes]) -> None:
        self._raw = raw
        self._z = zlib.decompressobj(wbits=31)
        self._pending = b""
        self._done = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self._pending and not self._done:
            compressed = self._z.unused_data or self._raw.read(1 << 16)
            if self._z.unused_data:
                self._z = zlib.decompressobj(wbits=31)  # next gzip member
            if not compressed:
                if not self._z.eof:
                    raise EOFError("compressed file ended before the end-of-stream marker was reached")
                self._done = True
                break
            self._pending = self._z.decompress(compressed)
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n


def open_decompressed(fs: pafs.FileSystem, path: str, name: str | None = None) -> IO[bytes]:
    """A buffered binary stream of the file's content, decompressing .gz/.zst by the extension of
    ``name``: the name the file is listed under, when ``path`` is where a symbolic link leads."""
    raw = fs.open_input_stream(path, compression=None)
    lower = (name or path).lower()
    if lower.endswith(".gz"):
        return io.BufferedReader(_GzipRaw(raw), 1 << 16)
    if lower.endswith(".zst"):
        return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True), 1 << 20)
    return io.BufferedReader(raw, 1 << 20)


class _LineCursor:
    """Iterates lines with memory bounded by ``limit``; remembers where it is for error reports."""

    def __init__(self, stream: IO[bytes], limit: int) -> None:
        self.stream, self.limit = stream, limit
        self.line_no = 0  # index of the next line
        self.offset = 0  # byte offset of the next line

    def __iter__(self) -> Iterator[tuple[int, int, bytes, bool]]:
        """(line_no, offset, bytes_without_newline, too_large)."""
        while True:
            line = self.stream.readline(self.limit + 1)
            if not line:
                return
            too_large = len(line) > self.limit and not line.endswith(b"\n")
            size = len(line)
            if too_large:  # skip the rest of the oversized line without holding it
                while True:
                    rest = self.stream.readline(1 << 20)
                    size += len(rest)
                    if not rest or rest.endswith(b"\n"):
                        break
            yield self.line_no, self.offset, (line if too_large else line.rstrip(b"\r\n")), too_large
            self.offset += size
            self.line_no += 1


def _corrupt(row: int | None, offset: int | None, exc: BaseException) -> RawRecord:
    return RawRecord(row, offset, reason="corrupt_file", message=f"{type(exc).__name__}: {exc}")


def _text_lines(fs: pafs.FileSystem, path: str, opts: ReadOptions, name: str | None) -> Iterator[RawRecord]:
    """One record per line, decoded as UTF-8 (``value`` is the str), or a record with a reason:
    oversized, blank, invalid UTF-8, or the damage that ended a corrupt file."""
    cursor: _LineCursor | None = None
    try:
        with open_decompressed(fs, path, name) as stream:
            cursor = _LineCursor(stream, opts.max_record_bytes)
            for row, offset, line, too_large in cursor:
                if too_large:
                    message = f"record exceeds {opts.max_record_bytes} bytes"
                    yield RawRecord(row, offset, raw=line, reason="record_too_large", message=message)
                elif not line.strip():
                    yield RawRecord(row, offset, reason="blank_line")
                else:
                    try:
                        yield RawRecord(row, offset, value=line.decode("utf-8"), raw=line)
                    except UnicodeDecodeError as exc:
                        yield RawRecord(row, offset, raw=line, reason="invalid_utf8", message=str(exc))
    except _CORRUPTION_ERRORS as exc:
        yield _corrupt(cursor.line_no if cursor else 0, cursor.offset if cursor else 0, exc)


def read_jsonl(fs: pafs.FileSystem, path: str, opts: ReadOptions, name: str | None = None) -> Iterator[RawRecord]:
    for rec in _text_lines(fs, path, opts, name):
        if rec.reason is not None:
            yield rec
            continue
        try:
            value = json.loads(rec.value)
        except json.JSONDecodeError as exc:
            yield RawRecord(rec.row, rec.offset, raw=rec.raw, reason="invalid_json", message=str(exc))
            continue
        if not isinstance(value, dict):
            message = f"expected a JSON object, got {type(value).__name__}"
            yield RawRecord(rec.row, rec.offset, raw=rec.raw, reason="not_an_object", message=message)
            continue
        rec.value = value
        yield rec


def read_text(fs: pafs.FileSystem, path: str, opts: ReadOptions, name: str | None = None) -> Iterator[RawRecord]:
    if opts.text_mode == "line":
        yield from _text_lines(fs, path, opts, name)
        return
    try:
        with open_decompressed(fs, path, name) as stream:
            data = stream.read(opts.max_record_bytes + 1)
    except _CORRUPTION_ERRORS as exc:
        yield _corrupt(0, 0, exc)
        return
    if len(data) > opts.max_record_bytes:
        yield RawRecord(
            0, 0, raw=data, reason="record_too_large", message=f"file exceeds {opts.max_record_bytes} bytes"
        )
        return
    try:
        yield RawRecord(0, 0, value=data.decode("utf-8"), raw=data)
    except UnicodeDecodeError as exc:
        yield RawRecord(0, 0, raw=data, reason="invalid_utf8", message=str(exc))


def read_csv(fs: pafs.FileSystem, path: str, opts: ReadOptions, name: str | None = None) -> Iterator[RawRecord]:
    delimiter = opts.csv_delimiter or ("\t" if ".tsv" in (name or path).lower() else ",")
    row = -1
    try:
        with open_decompressed(fs, path, name) as stream:
            text = io.TextIOWrapper(stream, encoding="utf-8", errors="surrogateescape", newline="")
            reader = csv.reader(text, delimiter=delimiter)
            header = next(reader, None)
            if header is None:
                return
            for row, fields in enumerate(reader):
                raw = delimiter.join(fields).encode("utf-8", "surrogateescape")
                if len(raw) > opts.max_record_bytes:
                    yield RawRecord(
                        row,
                        None,
                        raw=raw,
                        reason="record_too_large",
                        message=f"record exceeds {opts.max_record_bytes} bytes",
                    )
                    continue
                if not fields or (len(fields) == 1 and not fields[0].strip()):
                    yield RawRecord(row, None, reason="blank_line")
                    continue
                if len(fields) != len(header):
                    yield RawRecord(
                        row,
                        None,
                        raw=raw,
                        reason="malformed_row",
                        message=f"{len(fields)} fields, header has {len(header)}",
                    )
                    continue
                try:
                    for field in fields:
                        field.encode("utf-8")
                except UnicodeEncodeError as exc:
                    yield RawRecord(row, None, raw=raw, reason="invalid_utf8", message=str(exc))
                    continue
                yield RawRecord(row, None, value=dict(zip(header, fields, strict=True)), raw=raw)
    except _CORRUPTION_ERRORS as exc:
        yield _corrupt(row + 1, None, exc)


def read_parquet(fs: pafs.FileSystem, path: str, opts: ReadOptions, name: str | None = None) -> Iterator[RawRecord]:
    row = 0
    try:
        with fs.open_input_file(path) as handle:
            reader = pq.ParquetFile(handle)
            for batch in reader.iter_batches(batch_size=opts.batch_rows):
                for value in batch.to_pylist():
                    raw = json.dumps(value, ensure_ascii=False, default=str).encode("utf-8")
                    if len(raw) > opts.max_record_bytes:
                        yield RawRecord(
                            row,
                            None,
                            raw=raw,
                            reason="record_too_large",
                            message=f"record exceeds {opts.max_record_bytes} bytes",
                        )
                    else:
                        yield RawRecord(row, None, value=value, raw=raw)
                    row += 1
    except _CORRUPTION_ERRORS as exc:
        yield _corrupt(row, None, exc)


READERS = {"jsonl": read_jsonl, "text": read_text, "csv": read_csv, "parquet": read_parquet}
