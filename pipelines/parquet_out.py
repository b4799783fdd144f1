"""Write a stream of Arrow batches as Parquet part files in a run's folder of a Delta table.

Every engine's tasks use this, so file naming, row groups and schemas are the same everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa
import pyarrow.parquet as pq

from storage.tier import Tier

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


class PartWriter:
    """Rolls over to a new part file every ``file_rows`` rows. Not thread-safe.

    A row group holds ``row_group_rows`` rows, or fewer when they would exceed about
    ``row_group_bytes`` of Arrow data: readers hold whole row groups in memory (the training
    reader's shuffle window is a few of them), so long documents must not make them huge.
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
        self._writer: pq.ParquetWriter | None = None
        self._rows_in_file = 0
        self._buffer: list[pa.Table] = []
        self._buffered = 0
        self._buffered_bytes = 0

    def _open(self) -> None:
        relative = f"{self.prefix}/{self.part_label}-{len(self.files):05d}.parquet"
        self.tier.filesystem.create_dir(self.tier.path(self.table_path, self.prefix), recursive=True)
        sink = self.tier.filesystem.open_output_stream(self.tier.path(self.table_path, relative))
        self._writer = pq.ParquetWriter(
            sink,
            self.schema,
            compression="zstd",
            write_statistics=True,
            store_schema=embeds_arrow_schema(self.schema),
        )
        self.files.append(relative)
        self._rows_in_file = 0

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

    def _group_rows(self, pending: pa.Table) -> int:
        """Rows per row group for this data: the row cap, lowered by the byte cap (by mean row size)."""
        if self.row_group_bytes is None or pending.num_rows == 0:
            return self.row_group_rows
        mean_row_bytes = max(1.0, pending.nbytes / pending.num_rows)
        return max(1, min(self.row_group_rows, int(self.row_group_bytes / mean_row_bytes)))

    def _drain(self, final: bool) -> None:
        pending = pa.concat_tables(self._buffer) if self._buffer else self.schema.empty_table()
        self._buffer, self._buffered, self._buffered_bytes = [], 0, 0
        group = self._group_rows(pending)
        offset = 0
        while pending.num_rows - offset >= (1 if final else group):
            if self._writer is None or self._rows_in_file >= self.file_rows:
                self.close_file()
                self._open()
            take = min(group, self.file_rows - self._rows_in_file, pending.num_rows - offset)
            assert self._writer is not None
            self._writer.write_table(pending.slice(offset, take), row_group_size=take)
            self._rows_in_file += take
            offset += take
        if offset < pending.num_rows:
            rest = pending.slice(offset)
            self._buffer, self._buffered, self._buffered_bytes = [rest], rest.num_rows, rest.nbytes

    def close_file(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def close(self) -> list[str]:
        self._drain(final=True)
        self.close_file()
        return self.files

    def write_all(self, batches: Iterable[pa.RecordBatch]) -> list[str]:
        for batch in batches:
            self.write(batch)
        return self.close()
