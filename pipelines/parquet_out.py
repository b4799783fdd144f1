"""Write a stream of Arrow batches as Parquet part files in a run's folder of a Delta table.

Every engine's tasks use this, so file naming, row groups and schemas are the same everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa
import pyarrow.parquet as pq

from storage.tier import Tier


class PartWriter:
    """Rolls over to a new part file every ``file_rows`` rows. Not thread-safe."""

    def __init__(
        self,
        tier: Tier,
        table_path: str,
        prefix: str,
        schema: pa.Schema,
        *,
        file_rows: int,
        row_group_rows: int,
        part_label: str = "part",
    ) -> None:
        self.tier, self.table_path, self.prefix, self.schema = tier, table_path, prefix, schema
        self.file_rows, self.row_group_rows, self.part_label = file_rows, row_group_rows, part_label
        self.files: list[str] = []
        self._writer: pq.ParquetWriter | None = None
        self._rows_in_file = 0
        self._buffer: list[pa.Table] = []
        self._buffered = 0

    def _open(self) -> None:
        relative = f"{self.prefix}/{self.part_label}-{len(self.files):05d}.parquet"
        self.tier.filesystem.create_dir(self.tier.path(self.table_path, self.prefix), recursive=True)
        sink = self.tier.filesystem.open_output_stream(self.tier.path(self.table_path, relative))
        self._writer = pq.ParquetWriter(sink, self.schema, compression="zstd", write_statistics=True)
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
        if self._buffered >= self.row_group_rows:
            self._drain(final=False)

    def _drain(self, final: bool) -> None:
        pending = pa.concat_tables(self._buffer) if self._buffer else self.schema.empty_table()
        self._buffer, self._buffered = [], 0
        offset = 0
        while pending.num_rows - offset >= (1 if final else self.row_group_rows):
            if self._writer is None or self._rows_in_file >= self.file_rows:
                self.close_file()
                self._open()
            take = min(self.row_group_rows, self.file_rows - self._rows_in_file, pending.num_rows - offset)
            assert self._writer is not None
            self._writer.write_table(pending.slice(offset, take), row_group_size=take)
            self._rows_in_file += take
            offset += take
        if offset < pending.num_rows:
            rest = pending.slice(offset)
            self._buffer, self._buffered = [rest], rest.num_rows

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
