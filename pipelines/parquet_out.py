"""Write a stream of Arrow batches as Parquet part files in a run's folder of a Delta table.

Every engine's tasks use this, so file naming, row groups and schemas are the same everywhere. The
cut into files and row groups depends only on the rows written, in order, never on how they came in
batches (a DuckDB reader's, a Spark task's Arrow batches, a Ray block), and each row group is written
from one contiguous chunk (Parquet pages are cut per chunk): the same rows give the same bytes.
"""

from __future__ import annotations

import functools
import io
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from storage.delta import UNINDEXED_COLUMNS
from storage.tier import Tier

#: Columns whose values are (nearly) all distinct: a dictionary page of them is built only to be thrown
#: away when Parquet falls back to plain encoding, which costs about a tenth of a file's write time and a
#: few percent of its size. Free text is in the set too, and gets no Parquet min/max statistics either,
#: as it gets none in the Delta log (``UNINDEXED_COLUMNS``): a statistic is a copy of a record's bytes.
DISTINCT_VALUED = frozenset({"sample_id", "content_hash"}) | UNINDEXED_COLUMNS

# Arrow types that Parquet's own logical types read back exactly, with no embedded Arrow schema
_PARQUET_NATIVE = {
    pa.string(),
    pa.binary(),
    pa.bool_(),
    pa.int32(),
    pa.int64(),
    pa.float32(),
    pa.float64(),
}


def embeds_arrow_schema(schema: pa.Schema) -> bool:
    """Whether part files of ``schema`` carry the serialized Arrow schema in their footer.

    Only when it is needed to read the data back as written (nested or zoned types, schema
    metadata). A file without it lets a reader choose the Arrow layout of its strings: the training
    reader decodes them straight into string views, which costs less than decoding ``string``
    columns and then viewing them (figures in the README). Every reader still gets the same types
    by default.
    """
    return bool(schema.metadata) or any(field.type not in _PARQUET_NATIVE for field in schema)


@functools.lru_cache(maxsize=64)
def leaf_columns(schema: pa.Schema, leave_out: frozenset[str]) -> tuple[str, ...]:
    """Parquet column paths of ``schema`` (a nested field's leaves, ``l.list.element``), but those of the
    top-level fields in ``leave_out``: per-column writer options name leaves, not fields."""
    sink = io.BytesIO()
    pq.write_table(schema.empty_table(), sink)
    parquet = pq.ParquetFile(io.BytesIO(sink.getvalue())).schema
    paths = (parquet.column(i).path for i in range(len(parquet)))
    return tuple(p for p in paths if p.split(".", 1)[0] not in leave_out)  # cached: not to be changed


def row_sizes(data: pa.Table | pa.RecordBatch) -> np.ndarray:
    """Bytes of each row's values (strings' bytes and offsets, fixed widths, nested values summed).

    A measure of the content alone: unlike ``nbytes`` it does not depend on how the rows are chunked,
    sliced or whether a column without nulls carries a validity buffer.
    """
    out = np.zeros(data.num_rows, np.int64)
    for column in data.columns:
        chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
        if chunks:
            out += np.concatenate([_value_sizes(c) for c in chunks]) if len(chunks) > 1 else _value_sizes(chunks[0])
    return out


def _value_sizes(array: pa.Array) -> np.ndarray:
    kind = array.type
    if (
        pa.types.is_string(kind)
        or pa.types.is_binary(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_large_binary(kind)
    ):
        lengths = pc.binary_length(array).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        return lengths + (8 if pa.types.is_large_string(kind) or pa.types.is_large_binary(kind) else 4)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        values = _value_sizes(array.flatten())
        parents = pc.list_parent_indices(array).to_numpy(zero_copy_only=False)
        nested = np.bincount(parents, weights=values, minlength=len(array)).astype(np.int64)
        return nested + (8 if pa.types.is_large_list(kind) else 4)
    if pa.types.is_struct(kind):
        fields = array.flatten()
        return sum((_value_sizes(f) for f in fields), np.zeros(len(array), np.int64))
    width = getattr(kind, "bit_width", 64)  # fixed width; other types count as 8 bytes a row
    return np.full(len(array), max(1, width // 8), np.int64)


QUEUED = 2  # file operations waiting for the writer's thread: a row group being compressed, the next one


class PartWriter:
    """Rolls over to a new part file every ``file_rows`` rows. Not thread-safe.

    Files are opened, written and closed on one background thread per writer, in the order asked:
    compressing a row group (zstd, which releases the GIL) overlaps the caller's work on the next rows,
    and the bytes are those a synchronous writer writes. :meth:`close` returns once every file is whole.

    A row group holds ``row_group_rows`` rows, or fewer when they would exceed ``row_group_bytes``
    of values (:func:`row_sizes`; a single larger row is a row group of its own): readers hold
    whole row groups in memory (the training reader's shuffle window is a few of them), so long
    documents must not make them huge. Each group is the longest run of the next rows within both
    caps, so the cut depends on the rows alone.
    """

    def __init__(
        self,
        tier: Tier,
        table_path: str,
        prefix: str,
        schema: pa.Schema,
        *,
        file_rows: int,
        row_group_rows: int,
        row_group_bytes: int | None = None,
        part_label: str = "part",
    ) -> None:
        self.tier, self.table_path, self.prefix, self.schema = tier, table_path, prefix, schema
        self.file_rows, self.row_group_rows, self.part_label = file_rows, row_group_rows, part_label
        self.row_group_bytes = row_group_bytes
        self.files: list[str] = []
        self._writer: pq.ParquetWriter | None = None  # touched by the background thread only
        self._file_open = False
        self._rows_in_file = 0
        self._buffer: list[pa.Table] = []
        self._buffered = 0
        self._buffered_bytes = 0
        self._thread: ThreadPoolExecutor | None = None
        self._queued: deque[Future[None]] = deque()

    # -- the file operations, in order on one background thread ----------------------------------
    def _submit(self, operation: Callable[..., None], *args: object) -> None:
        """Queue a file operation. At most :data:`QUEUED` wait, so memory stays a few row groups; the first
        error of any, in their order, is raised here or by :meth:`close`."""
        while len(self._queued) >= QUEUED or (self._queued and self._queued[0].done()):
            self._queued.popleft().result()
        if self._thread is None:
            self._thread = ThreadPoolExecutor(1, thread_name_prefix="parquet-writer")
        self._queued.append(self._thread.submit(operation, *args))

    def _wait(self, *, errors: bool = True) -> None:
        """Every queued operation done; its first error raised (``errors``), or none: one is being raised."""
        try:
            while self._queued:
                future = self._queued.popleft()
                if errors:
                    future.result()
                else:
                    future.exception()
        finally:
            if self._thread is not None:
                self._thread.shutdown(wait=True, cancel_futures=True)
                self._thread = None

    def _do_open(self, relative: str) -> None:
        self.tier.filesystem.create_dir(self.tier.path(self.table_path, self.prefix), recursive=True)
        sink = self.tier.filesystem.open_output_stream(self.tier.path(self.table_path, relative))
        self._writer = pq.ParquetWriter(
            sink,
            self.schema,
            compression="zstd",
            use_dictionary=list(leaf_columns(self.schema, DISTINCT_VALUED)),
            write_statistics=list(leaf_columns(self.schema, UNINDEXED_COLUMNS)),
            store_schema=embeds_arrow_schema(self.schema),
        )

    def _do_write(self, group: pa.Table) -> None:
        assert self._writer is not None
        self._writer.write_table(group, row_group_size=group.num_rows)

    def _do_close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    # -- the caller's side ---------------------------------------------------------------------
    def _open(self) -> None:
        relative = f"{self.prefix}/{self.part_label}-{len(self.files):05d}.parquet"
        self.files.append(relative)
        self._file_open, self._rows_in_file = True, 0
        self._submit(self._do_open, relative)

    def write(self, batch: pa.RecordBatch | pa.Table) -> None:
        """Buffer rows and write full row groups, so small input batches give full row groups."""
        if batch.num_rows == 0:
            return
        table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
        if table.schema != self.schema:
            table = table.cast(self.schema)
        self._buffer.append(table)
        self._buffered += table.num_rows
        self._buffered_bytes += table.nbytes
        if self._buffered >= self.row_group_rows or (
            self.row_group_bytes is not None and self._buffered_bytes >= self.row_group_bytes
        ):
            self._drain(final=False)

    def _drain(self, final: bool) -> None:
        """Write every row group the buffered rows complete (all of them when ``final``)."""
        pending = pa.concat_tables(self._buffer) if self._buffer else self.schema.empty_table()
        self._buffer, self._buffered, self._buffered_bytes = [], 0, 0
        ends = None
        if self.row_group_bytes is not None and pending.num_rows:
            ends = np.concatenate([[0], np.cumsum(row_sizes(pending))])
        offset, left = 0, pending.num_rows
        while left:
            in_file = self._rows_in_file if self._file_open else 0
            if in_file >= self.file_rows:
                in_file = 0
            limit = min(self.row_group_rows, self.file_rows - in_file)
            take = min(limit, left)
            if ends is not None:  # rows whose values fit the byte cap, at least one
                fit = int(np.searchsorted(ends, ends[offset] + self.row_group_bytes, side="right")) - 1 - offset
                take = min(take, max(1, fit))
            if take == left < limit and not final:
                break  # the next rows decide where this group ends
            if not self._file_open or self._rows_in_file >= self.file_rows:
                self.close_file()
                self._open()
            group = pending.slice(offset, take).combine_chunks()  # one chunk: pages cut the same for any batching
            self._submit(self._do_write, group)
            self._rows_in_file += take
            offset, left = offset + take, left - take
        if left:
            rest = pending.slice(offset)
            self._buffer, self._buffered, self._buffered_bytes = [rest], rest.num_rows, rest.nbytes

    def close_file(self) -> None:
        if self._file_open:
            self._file_open = False
            self._submit(self._do_close)

    def close(self) -> list[str]:
        """Write what is buffered, close the last file and wait for every write: the files are whole."""
        try:
            self._drain(final=True)
            self.close_file()
        except BaseException:
            self._wait(errors=False)  # the error raised is the first one, not what followed from it
            raise
        self._wait()
        return self.files

    def write_all(self, batches: Iterable[pa.RecordBatch]) -> list[str]:
        for batch in batches:
            self.write(batch)
        return self.close()
