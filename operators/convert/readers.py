"""Per-format record iterators. They never raise for bad data: they yield a record with a reason.

A reader yields :class:`RawRecord` values in file order. ``row`` is the record's 0-based index
in the file (JSONL/text lines: the line number; CSV: the data row after the header; Parquet:
the row), ``offset`` the byte offset of the record in the (decompressed) stream when the format
has one. A corrupt or truncated file yields the records before the damage, then one record with
reason ``corrupt_file``. A UTF-8 byte-order mark at the start of a stream is not part of its
first record.

Readers are called as ``reader(fs, path, opts, name)``: ``path`` is what to open, ``name`` the
name the file is listed under, whose extension picks the decompression (``.gz``, ``.zst``) and the
TSV delimiter. They differ when ``path`` is where a symbolic link leads (see :mod:`storage.links`).
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import io
import json
import logging
import re
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any, NamedTuple

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import zstandard

from storage import gzip_codec

log = logging.getLogger(__name__)

CORRUPTION_ERRORS = (OSError, EOFError, *gzip_codec.ERRORS, zstandard.ZstdError, pa.ArrowException)


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


class _Decompressed(io.RawIOBase):
    """Decompression that hands out every byte it could decompress before raising on damage.

    The libraries' stream readers decompress ahead within one large read and lose that data when
    the read then fails (``gzip.GzipFile`` under a large buffer; zstandard's ``stream_reader``
    drops whole frames before a corrupt one), and zstandard's ends a truncated stream silently.
    Here damage raises only once everything before it was read, and a stream that ends inside a
    gzip member or zstd frame raises EOFError. Concatenated members or frames are read in turn.
    """

    def __init__(self, raw: IO[bytes], decompressor: Callable[[], Any]) -> None:
        self._raw, self._new = raw, decompressor  # decompressor(): a zlib-style decompress object
        self._z = decompressor()
        self._pending = b""
        self._done = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self._pending and not self._done:
            if self._z.eof:  # a member or frame ended: whatever follows starts the next one
                compressed = self._z.unused_data or self._raw.read(1 << 16)
                if not compressed:
                    self._done = True
                    break
                self._z = self._new()
            else:
                compressed = self._raw.read(1 << 16)
                if not compressed:
                    raise EOFError("compressed file ended before the end-of-stream marker was reached")
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
        return io.BufferedReader(_Decompressed(raw, gzip_codec.decompressor), 1 << 16)
    if lower.endswith(".zst"):
        return io.BufferedReader(_Decompressed(raw, lambda: zstandard.ZstdDecompressor().decompressobj()), 1 << 20)
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
            content = line if too_large else line.rstrip(b"\r\n")
            if self.offset == 0:
                content = content.removeprefix(codecs.BOM_UTF8)
            yield self.line_no, self.offset, content, too_large
            self.offset += size
            self.line_no += 1


def corrupt_record(row: int | None, offset: int | None, exc: BaseException) -> RawRecord:
    return RawRecord(row, offset, reason="corrupt_file", message=f"{type(exc).__name__}: {exc}")


def _text_lines(fs: pafs.FileSystem, path: str, opts: ReadOptions, name: str | None) -> Iterator[RawRecord]:
    """One record per line, decoded as UTF-8 (``value`` is the str), or a record with a reason:
    oversized, blank, invalid UTF-8, or the damage that ended a corrupt file."""
    cursor: _LineCursor | None = None
    try:
        with open_decompressed(fs, path, name) as stream:
            cursor = _LineCursor(stream, opts.max_record_bytes)
            for row, offset, line, too_large in cursor:
                yield line_record(row, offset, line, too_large, opts.max_record_bytes)
    except CORRUPTION_ERRORS as exc:
        yield corrupt_record(cursor.line_no if cursor else 0, cursor.offset if cursor else 0, exc)


def line_record(row: int, offset: int, line: bytes, too_large: bool, limit: int) -> RawRecord:
    """One line as a record: its text (``value``), or why not (oversized, blank, invalid UTF-8).

    ``line`` is as :class:`_LineCursor` gives it: without its line end (and, at offset 0, a BOM),
    or, when ``too_large``, the line's first ``limit + 1`` bytes as read."""
    if too_large:
        return RawRecord(row, offset, raw=line, reason="record_too_large", message=f"record exceeds {limit} bytes")
    if not line.strip():
        return RawRecord(row, offset, reason="blank_line")
    try:
        return RawRecord(row, offset, value=line.decode("utf-8"), raw=line)
    except UnicodeDecodeError as exc:
        return RawRecord(row, offset, raw=line, reason="invalid_utf8", message=str(exc))


def jsonl_record(rec: RawRecord) -> RawRecord:
    """A line's record (:func:`line_record`) parsed as a JSON object, or with the reason it is not one."""
    if rec.reason is None:
        rec.value, rec.reason, rec.message = _json_object(rec.value, rec.raw)  # type: ignore[arg-type]
    return rec


def _json_object(text: str, raw: bytes) -> tuple[Any, str | None, str | None]:
    """(value, reason, message): the line's JSON object, or why it is not one Arrow can hold."""
    try:
        value = json.loads(text)
        if isinstance(value, dict) and b"\\u" in raw:  # only a \u escape can make a lone surrogate
            json.dumps(value, ensure_ascii=False).encode("utf-8")
    except RecursionError:
        return None, "nesting_too_deep", "the JSON nests deeper than the parser's recursion limit"
    except UnicodeEncodeError as exc:
        char = exc.object[exc.start]
        return None, "invalid_unicode", f"a \\u escape gives the lone surrogate {char!r}, which is not a character"
    except ValueError as exc:  # JSONDecodeError, and integers longer than Python's digit limit
        return None, "invalid_json", str(exc)
    if not isinstance(value, dict):
        return None, "not_an_object", f"expected a JSON object, got {type(value).__name__}"
    return value, None, None


def read_jsonl(fs: pafs.FileSystem, path: str, opts: ReadOptions, name: str | None = None) -> Iterator[RawRecord]:
    """Record by record: the reference for :mod:`operators.convert.jsonl_blocks`, which reads the
    same files in blocks and gives each line it cannot take to :func:`jsonl_record`."""
    for rec in _text_lines(fs, path, opts, name):
        yield jsonl_record(rec)


def read_text(fs: pafs.FileSystem, path: str, opts: ReadOptions, name: str | None = None) -> Iterator[RawRecord]:
    if opts.text_mode == "line":
        yield from _text_lines(fs, path, opts, name)
        return
    try:
        with open_decompressed(fs, path, name) as stream:
            data = stream.read(opts.max_record_bytes + 1)
    except CORRUPTION_ERRORS as exc:
        yield corrupt_record(0, 0, exc)
        return
    if len(data) > opts.max_record_bytes:
        yield RawRecord(
            0, 0, raw=data, reason="record_too_large", message=f"file exceeds {opts.max_record_bytes} bytes"
        )
        return
    try:
        yield RawRecord(0, 0, value=data.decode("utf-8-sig"), raw=data)
    except UnicodeDecodeError as exc:
        yield RawRecord(0, 0, raw=data, reason="invalid_utf8", message=str(exc))


def _csv_condenser(delimiter: str) -> Callable[[str], str]:
    """A function that shrinks text without changing where csv.reader (strict, doubled quotes) ends
    a record or fails.

    That state machine tells apart only the quote, the delimiter, CR/LF and "anything else"; a run
    of other characters acts like one, a run of delimiters like one, and a run of quotes like one
    or two of the same parity. Each rewrite below keeps that, so the condensed rest of an oversized
    record ends, or fails, exactly where the real one would.
    """
    d = re.escape(delimiter)
    other = re.compile(f'[^{d}"\r\n]+')
    delimiters = re.compile(f"{d}{{2,}}")
    quote_pairs = re.compile('(?:""){2,}')
    placeholder = "y" if delimiter == "x" else "x"

    def condense(text: str) -> str:  # (a backslash delimiter must be escaped in a replacement)
        text = delimiters.sub(delimiter.replace("\\", "\\\\"), other.sub(placeholder, text))
        return quote_pairs.sub('""', text)

    return condense


class _Span(NamedTuple):
    """Where a CSV record, or the first line of one, came from."""

    offset: int
    raw: bytes  # its bytes, up to the record limit
    size: int
    fits: bool  # size is within the record limit


class _CsvLines:
    """Physical lines for ``csv.reader``, and where each record it parses came from.

    csv.reader pulls lines one by one, and between two records exactly the lines of one record, so
    :meth:`take` after each record gives its offset, raw bytes and size. Memory stays bounded by
    the record limit: past it the record's lines are fed condensed (:func:`_csv_condenser`), which
    still ends the record where CSV says while holding next to nothing. :meth:`retry` refuses a
    record that failed to parse as its first line alone and feeds the lines after it again: from
    memory, or by reading the file again when they did not fit.
    """

    _PIECE = 1 << 20  # bytes read at a time: an oversized line is never held whole

    def __init__(self, fs: pafs.FileSystem, path: str, name: str | None, limit: int, delimiter: str) -> None:
        self._fs, self._path, self._name, self._limit = fs, path, name, limit
        self._condense = _csv_condenser(delimiter)
        self._stream = open_decompressed(fs, path, name)
        self._offset = 0  # offset of the next byte of the stream
        self._replay: deque[tuple[int, bytes]] = deque()  # (offset, line) to feed before the stream
        self._new_record()

    def _new_record(self) -> None:
        self.offset: int | None = None  # the record's first byte, once a line of it was pulled
        self._raw = bytearray()  # the record's bytes, up to the limit
        self._lines: list[tuple[int, bytes]] = []  # (offset, bytes) of its lines, while all fit
        self._size = 0
        self._line_count = 0
        self._first: _Span | None = None  # its first line

    def close(self) -> None:
        self._stream.close()

    def __iter__(self) -> _CsvLines:
        return self

    def _piece(self) -> tuple[int, bytes]:
        if self._replay:
            return self._replay.popleft()
        offset, piece = self._offset, self._stream.readline(self._PIECE)
        self._offset += len(piece)
        return offset, piece

    def __next__(self) -> str:
        start, kept, condensed, size = None, bytearray(), [], 0
        while True:
            offset, piece = self._piece()
            if not piece:
                break
            start = offset if start is None else start
            room = max(self._limit - self._size - size, 0)
            size += len(piece)
            line_ends = piece.endswith(b"\n")
            if len(piece) > room:
                condensed.append(self._condense(piece[room:].decode("utf-8", "surrogateescape")))
                piece = piece[:room]
            kept += piece
            if line_ends:
                break
        if start is None:
            raise StopIteration
        if self.offset is None:
            self.offset, self._first = start, _Span(start, bytes(kept), size, size <= self._limit)
        self._size += size
        self._line_count += 1
        self._raw += kept
        if not condensed and self._size <= self._limit:
            self._lines.append((start, bytes(kept)))
        text = kept.decode("utf-8", "surrogateescape")
        return (text.removeprefix("\ufeff") if start == 0 else text) + "".join(condensed)

    def take(self) -> _Span:
        """Where the record csv.reader just returned came from."""
        span = _Span(self.offset or 0, bytes(self._raw), self._size, self._size <= self._limit)
        self._new_record()
        return span

    def retry(self) -> tuple[_Span, int]:
        """Refuse the record that failed to parse as its first line alone: (that line, lines the
        record had), and have the lines after that one read again."""
        assert self._first is not None
        first, lines = self._first, self._line_count
        if self._size <= self._limit:
            self._replay.extendleft(reversed(self._lines[1:]))
        else:  # the lines after the first were not kept: read them from the file again
            self._stream.close()
            self._replay.clear()
            self._stream = open_decompressed(self._fs, self._path, self._name)
            self._offset, end = 0, first.offset + first.size
            while self._offset < end:
                skipped = len(self._stream.read(min(end - self._offset, self._PIECE)))
                if not skipped:
                    raise EOFError(f"the file ended at byte {self._offset} when it was read again")
                self._offset += skipped
        self._new_record()
        return first, lines


def read_csv(fs: pafs.FileSystem, path: str, opts: ReadOptions, name: str | None = None) -> Iterator[RawRecord]:
    """Records of a CSV file with a header row, parsed strictly.

    A record may span lines only inside a quoted field. A record that does not parse (text after
    a closing quote, or a quote never closed) is refused as its first line alone and the lines
    after it are read as records of their own, so one bad quote cannot swallow the rest of the file.
    """
    delimiter = opts.csv_delimiter or ("\t" if ".tsv" in (name or path).lower() else ",")
    # _CsvLines enforces the record limit; csv's own field limit (process-wide, 128 KiB by default)
    # must only be high enough not to cut a field that fits it
    csv.field_size_limit(max(csv.field_size_limit(), 2 * opts.max_record_bytes))
    row, lines = 0, None
    try:
        lines = _CsvLines(fs, path, name, opts.max_record_bytes, delimiter)
        with contextlib.closing(lines):
            reader = csv.reader(lines, delimiter=delimiter, strict=True)
            try:
                header = next(reader, None)
            except csv.Error as exc:
                yield RawRecord(0, 0, reason="corrupt_file", message=f"the header row does not parse: {exc}")
                return
            if header is None:
                return
            problem = _csv_header_problem(header, lines.take(), opts.max_record_bytes)
            if problem:
                yield RawRecord(0, 0, reason="corrupt_file", message=problem)
                return
            while True:
                try:
                    fields = next(reader)
                except StopIteration:
                    return
                except csv.Error as exc:
                    first, n = lines.retry()
                    reason = "malformed_row" if first.fits else "record_too_large"
                    message = str(exc) if n == 1 else f"{exc}: a quote opened in this line is not closed properly"
                    yield RawRecord(row, first.offset, raw=first.raw, reason=reason, message=message)
                else:
                    yield _csv_record(row, header, fields, lines.take(), opts.max_record_bytes)
                row += 1
    except CORRUPTION_ERRORS as exc:
        yield corrupt_record(row, lines.offset if lines else 0, exc)


def _csv_header_problem(header: list[str], span: _Span, limit: int) -> str | None:
    if not span.fits:
        return f"the header row exceeds {limit} bytes"
    try:
        "".join(header).encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"the header row is not UTF-8: {exc}"
    if len(set(header)) != len(header):
        return f"the header row repeats a column name: {header!r}"
    return None


def _csv_record(row: int, header: list[str], fields: list[str], span: _Span, limit: int) -> RawRecord:
    offset, raw = span.offset, span.raw
    if not span.fits:
        return RawRecord(row, offset, raw=raw, reason="record_too_large", message=f"record exceeds {limit} bytes")
    if not fields or (len(fields) == 1 and not fields[0].strip()):
        return RawRecord(row, offset, reason="blank_line")
    if len(fields) != len(header):
        message = f"{len(fields)} fields, header has {len(header)}"
        return RawRecord(row, offset, raw=raw, reason="malformed_row", message=message)
    try:
        for field in fields:
            field.encode("utf-8")
    except UnicodeEncodeError as exc:
        return RawRecord(row, offset, raw=raw, reason="invalid_utf8", message=str(exc))
    return RawRecord(row, offset, value=dict(zip(header, fields, strict=True)), raw=raw)


_PYTHON_VALUE_ERRORS = (OverflowError, ValueError)  # e.g. a timestamp beyond year 9999


def _parquet_rows(batch: pa.RecordBatch) -> Iterator[tuple[dict | None, str | None]]:
    """(row, None) for each row of a batch, or (None, why) for a row holding a value Python
    cannot represent; such a row must not take the rest of the batch with it."""
    try:
        values = batch.to_pylist()
    except _PYTHON_VALUE_ERRORS:
        pass  # find the rows, one by one
    else:
        yield from ((value, None) for value in values)
        return
    for i in range(batch.num_rows):
        row = batch.slice(i, 1)
        try:
            yield row.to_pylist()[0], None
        except _PYTHON_VALUE_ERRORS as exc:
            bad = [name for name, column in zip(row.schema.names, row.columns, strict=True) if _unconvertible(column)]
            where = f"column {bad[0]!r}: " if bad else ""
            yield None, f"{where}{type(exc).__name__}: {exc}"


def _unconvertible(column: pa.Array) -> bool:
    try:
        column.to_pylist()
    except _PYTHON_VALUE_ERRORS:
        return True
    return False


def _parquet_batches(reader: pq.ParquetFile, batch_rows: int) -> Iterator[pa.RecordBatch]:
    """Batches one row group at a time, so damage in a row group loses no row before it."""
    for group in range(reader.num_row_groups):
        yield from reader.iter_batches(batch_size=batch_rows, row_groups=[group])


def read_parquet(fs: pafs.FileSystem, path: str, opts: ReadOptions, name: str | None = None) -> Iterator[RawRecord]:
    row = 0
    try:
        with fs.open_input_file(path) as handle:
            for batch in _parquet_batches(pq.ParquetFile(handle), opts.batch_rows):
                for value, problem in _parquet_rows(batch):
                    if problem is not None:
                        yield RawRecord(row, None, reason="invalid_value", message=problem)
                        row += 1
                        continue
                    raw = json.dumps(value, ensure_ascii=False, default=str).encode("utf-8")
                    if len(raw) > opts.max_record_bytes:
                        message = f"record exceeds {opts.max_record_bytes} bytes"
                        yield RawRecord(row, None, raw=raw, reason="record_too_large", message=message)
                    else:
                        yield RawRecord(row, None, value=value, raw=raw)
                    row += 1
    except CORRUPTION_ERRORS as exc:
        yield corrupt_record(row, None, exc)


READERS = {"jsonl": read_jsonl, "text": read_text, "csv": read_csv, "parquet": read_parquet}
