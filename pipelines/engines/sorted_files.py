"""The cut of a sorted output table (data, lineage, signatures) into part files, by content alone.

A table of ``N`` rows and a file size of ``R`` rows (``parquet_file_rows``) has ``B = ceil(N / R)``
files, and a row goes to file ``floor(h * B / 2**32)``, ``h`` the value of the first 8 hex digits of
its ``sample_id``. Sample ids are xxh3-128 hex digests (:mod:`operators.schema`; an id field's values
are hashed too), so ``h`` is uniform: a file holds about ``R`` rows (give or take ``sqrt(R)``), and as
``h`` grows with the id, files are contiguous ranges of the sort order, in file order.

Every engine gathers each file's rows, sorts them by the table's keys and writes them as one
:class:`~pipelines.parquet_out.PartWriter` stream named after the file's first key
(:class:`SortedFiles`), whose row groups depend only on the rows. So the same rows give the same
files, names and bytes on every engine and for any partitioning, and one content digest of a release
(:mod:`lineage.releases.manifest`). The cut nests: ``floor(floor(h * B * S / 2**32) / S)`` is
``floor(h * B / 2**32)``, so the in-process engine may sort ``S`` finer buckets of a file one at a time
(to bound memory) and write the same file.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipelines.arrow_util import conform
from pipelines.config import ExecutionConfig
from pipelines.engines.base import TableTarget
from pipelines.parquet_out import PartWriter

SORT_KEYS_DATA = ("sample_id",)  # data and signature tables
SORT_KEYS_LINEAGE = ("sample_id", "step")
FILE = "_file"  # the column of a row's file number, while the distributed engines shuffle by it
FILE_FIELD = pa.field(FILE, pa.int64(), nullable=False)
PREFIX_DIGITS = 8  # hex digits of the id that place it: 32 bits, so h * files stays exact in uint64
MAX_FILES = 2**32

_HEX = np.full(256, -1, dtype=np.int64)
_HEX[np.frombuffer(b"0123456789abcdef", np.uint8)] = np.arange(16)


def hex_prefix(ids: pa.Array | pa.ChunkedArray, digits: int = PREFIX_DIGITS) -> np.ndarray:
    """The value of each id's first ``digits`` hex characters, vectorised (ids are lowercase hex hashes).

    Only lowercase digits count, so the value grows with the id's string order."""
    if isinstance(ids, pa.ChunkedArray):
        ids = ids.combine_chunks()
    prefix = pc.utf8_slice_codeunits(ids, 0, digits).cast(pa.binary())
    offsets = np.frombuffer(prefix.buffers()[1], np.int32)[prefix.offset : prefix.offset + len(prefix) + 1]
    if np.any(np.diff(offsets) != digits):
        raise ValueError("sample ids must be lowercase hex digests")
    data = np.frombuffer(prefix.buffers()[2], np.uint8)[offsets[0] : offsets[-1]].reshape(-1, digits)
    values = _HEX[data]
    if (values < 0).any():
        raise ValueError("sample ids must be lowercase hex digests")
    return (values * (16 ** np.arange(digits - 1, -1, -1))).sum(axis=1)


def file_count(rows: int, file_rows: int) -> int:
    """How many part files a table of ``rows`` rows has: ``ceil(rows / file_rows)``, none when empty."""
    if rows < 0 or file_rows < 1:
        raise ValueError(f"file_count({rows}, {file_rows})")
    return min(math.ceil(rows / file_rows), MAX_FILES)


def file_of(ids: pa.Array | pa.ChunkedArray, files: int) -> np.ndarray:
    """Each id's file of ``files`` (``floor(h * files / 2**32)``): monotone in the id."""
    if not 1 <= files <= MAX_FILES:
        raise ValueError(f"{files} files: between 1 and {MAX_FILES}")
    h = hex_prefix(ids).astype(np.uint64)
    return ((h * np.uint64(files)) >> np.uint64(32)).astype(np.int64)


def label(batch: pa.RecordBatch | pa.Table, keys: tuple[str, ...]) -> str:
    """A file's name part: its first row's keys, so names sort as the rows do and name only content."""
    parts = []
    for key in keys:
        value = batch.column(key)[0].as_py()
        parts.append(f"{value:010d}" if isinstance(value, int) else str(value))
    return "part-" + "-".join(parts)


class SortedFiles:
    """Writes one sorted table's part files: rows arrive in (file, keys) order, each file one
    :class:`PartWriter` stream named after its first key. Not thread-safe."""

    def __init__(self, config: ExecutionConfig, target: TableTarget, schema: pa.Schema, keys: tuple[str, ...]) -> None:
        self.config, self.target, self.schema, self.keys = config, target, schema, keys
        self.rows = 0
        self.files: list[str] = []
        self._file = -1
        self._writer: PartWriter | None = None

    def write(self, batch: pa.RecordBatch | pa.Table, file: int) -> None:
        """Rows of file ``file``, in key order, after every row of the files before it."""
        if batch.num_rows == 0:
            return
        if file < self._file:
            raise RuntimeError(f"rows of file {file} after file {self._file}: not in file order")
        if file != self._file:
            self._close_file()
            s = self.config
            self._writer = PartWriter(
                self.target.tier,
                self.target.table_path,
                self.target.prefix,
                self.schema,
                file_rows=sys.maxsize,  # one stream a file: its size is the cut's
                row_group_rows=s.parquet_row_group_rows,
                row_group_bytes=s.parquet_row_group_bytes,
                part_label=label(batch, self.keys),
            )
            self._file = file
        assert self._writer is not None
        self._writer.write(conform(batch, self.schema))
        self.rows += batch.num_rows

    def write_numbered(self, batch: pa.RecordBatch | pa.Table) -> None:
        """Rows with a :data:`FILE` column, in (file, keys) order."""
        if batch.num_rows == 0:
            return
        numbers = np.asarray(batch.column(FILE).to_numpy(zero_copy_only=False), np.int64)
        rows = batch.select(self.schema.names)
        starts = [0, *(np.flatnonzero(np.diff(numbers)) + 1).tolist(), len(numbers)]
        for start, end in zip(starts, starts[1:], strict=False):
            self.write(rows.slice(start, end - start), int(numbers[start]))

    def _close_file(self) -> None:
        if self._writer is not None:
            self.files += self._writer.close()
            self._writer = None

    def close(self) -> list[str]:
        """The files written, relative to the table folder, in order."""
        self._close_file()
        return self.files


@dataclass(frozen=True)
class Numbered:
    """Rows of a sorted table with their file number (:data:`FILE`) appended: what the distributed
    engines shuffle by, so each task gets whole files."""

    files: int

    def __call__(self, data: pa.Table | pa.RecordBatch) -> pa.Table | pa.RecordBatch:
        return data.append_column(FILE_FIELD, pa.array(file_of(data.column("sample_id"), self.files), pa.int64()))
