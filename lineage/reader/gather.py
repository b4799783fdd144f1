"""Gathering a decoded window's rows in shuffled order without copying their text.

A shuffled batch is a gather: its rows come from anywhere in the window. Gathering ``string``
columns copies every byte of every document again, which costs about as much as decoding them.
Instead, string and binary columns are turned into Arrow *view* arrays (``string_view``,
``binary_view``): 16 bytes per value, holding the length and either the value itself (up to 12
bytes) or a prefix, a buffer index and an offset into the decoded data. A batch then gathers
16-byte views and points at the window's data buffers (which it keeps alive), so a shuffled batch
costs about as much as a sequential one. View arrays read like strings everywhere in Arrow
(``to_pylist``, pandas, Polars, DuckDB); ``.cast(pa.string())`` gives offsets-based strings.

Other columns are gathered by Arrow's ``take``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

_VIEW_TYPES = {pa.string(): pa.string_view(), pa.binary(): pa.binary_view()}
PLAIN_TYPES = {view: plain for plain, view in _VIEW_TYPES.items()}


class _ViewColumn:
    """A string/binary column of a window as views over its chunks' data buffers.

    Arrow's cast to a view type builds the views without copying the data; the chunks' views are
    joined into one array, their buffer indices shifted to a shared list of data buffers.
    """

    def __init__(self, column: pa.ChunkedArray) -> None:
        self.type = _VIEW_TYPES[column.type]
        self.data: list[pa.Buffer] = []
        parts: list[np.ndarray] = []
        for chunk in column.chunks:
            viewed = chunk.cast(self.type)
            views = np.frombuffer(viewed.buffers()[1], dtype=np.int32).reshape(-1, 4)
            views = views[viewed.offset : viewed.offset + len(viewed)].copy()
            views[views[:, 0] > 12, 2] += len(self.data)  # values over 12 bytes live in a data buffer
            parts.append(views)
            self.data.extend(viewed.buffers()[2:])
        self.views = np.concatenate(parts) if parts else np.zeros((0, 4), dtype=np.int32)
        self.valid = None if column.null_count == 0 else np.asarray(column.is_valid())

    def take(self, rows: np.ndarray) -> pa.Array:
        validity, nulls = None, 0
        if self.valid is not None:
            keep = self.valid[rows]
            nulls = len(rows) - int(keep.sum())
            validity = pa.py_buffer(np.packbits(keep, bitorder="little")) if nulls else None
        views = pa.py_buffer(np.ascontiguousarray(self.views[rows]))
        return pa.Array.from_buffers(self.type, len(rows), [validity, views, *self.data], null_count=nulls)


class Window:
    """A decoded window, ready to give its rows in any order as record batches."""

    def __init__(self, table: pa.Table) -> None:
        columns: list[_ViewColumn | pa.ChunkedArray] = []
        fields = []
        for field, column in zip(table.schema, table.columns, strict=True):
            if field.type in _VIEW_TYPES:
                columns.append(_ViewColumn(column))
                fields.append(field.with_type(_VIEW_TYPES[field.type]))
            else:
                columns.append(column.combine_chunks() if column.num_chunks > 1 else column)
                fields.append(field)
        self.columns = columns
        self.schema = pa.schema(fields, metadata=table.schema.metadata)
        self.num_rows = table.num_rows

    def take(self, rows: np.ndarray) -> pa.RecordBatch:
        arrays = [c.take(rows) if isinstance(c, _ViewColumn) else _chunk(c.take(rows)) for c in self.columns]
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


def _chunk(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
