"""Gathering a decoded window's rows in shuffled order without copying their text.

A shuffled batch is a gather: its rows come from anywhere in the window. Gathering ``string``
columns copies every byte of every document again, which costs about as much as decoding them.
Instead, string and binary columns are turned into Arrow *view* arrays (``string_view``,
``binary_view``): 16 bytes per value, holding the length and either the value itself (up to 12
bytes) or a prefix, a buffer index and an offset into the decoded data. A window's views are
gathered into serving order once, right after decoding while they are in cache, and each batch is
a slice of them pointing at the window's data buffers (which it keeps alive), so a shuffled batch
costs about as much as a sequential one. View arrays read like strings everywhere in Arrow
(``to_pylist``, pandas, Polars, DuckDB); ``.cast(pa.string())`` gives offsets-based strings.

Other columns are gathered by Arrow's ``take``, once per window.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

_VIEW_TYPES = {pa.string(): pa.string_view(), pa.binary(): pa.binary_view()}
_PLAIN_TYPES = {view: plain for plain, view in _VIEW_TYPES.items()}


def plain_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with view types back to ``string``/``binary`` (what ``string_views=False`` gives)."""
    return pa.schema([f.with_type(_PLAIN_TYPES.get(f.type, f.type)) for f in schema], metadata=schema.metadata)


class _ViewColumn:
    """A string/binary column of a window as views over its chunks' data buffers, in the order
    the window's rows are served.

    Arrow's cast to a view type builds the views without copying the data; the chunks' views are
    joined into one array, their buffer indices shifted to a shared list of data buffers, and
    gathered into serving order at once, while the views are still in cache.
    """

    def __init__(self, column: pa.ChunkedArray, rows: np.ndarray) -> None:
        self.type = _VIEW_TYPES[column.type]
        self.data: list[pa.Buffer] = []
        views = np.empty((len(column), 4), dtype=np.int32)
        at = 0
        for chunk in column.chunks:
            viewed = chunk.cast(self.type)
            part = views[at : at + len(viewed)]
            part[:] = np.frombuffer(viewed.buffers()[1], dtype=np.int32).reshape(-1, 4)[
                viewed.offset : viewed.offset + len(viewed)
            ]
            if self.data:  # values over 12 bytes point into a data buffer: shift to the shared list
                part[part[:, 0] > 12, 2] += len(self.data)
            self.data.extend(viewed.buffers()[2:])
            at += len(viewed)
        self.views = views[rows]
        self.valid = None if column.null_count == 0 else np.asarray(column.is_valid())[rows]

    def slice(self, start: int, stop: int) -> pa.Array:
        validity, nulls = None, 0
        if self.valid is not None:
            keep = self.valid[start:stop]
            nulls = len(keep) - int(keep.sum())
            validity = pa.py_buffer(np.packbits(keep, bitorder="little")) if nulls else None
        views = pa.py_buffer(self.views[start:stop])
        return pa.Array.from_buffers(self.type, stop - start, [validity, views, *self.data], null_count=nulls)


class Window:
    """A decoded window's ``rows`` (indices into it), ready to be served in that order as batches."""

    def __init__(self, table: pa.Table, rows: np.ndarray) -> None:
        columns: list[_ViewColumn | pa.Array] = []
        fields = []
        for field, column in zip(table.schema, table.columns, strict=True):
            if field.type in _VIEW_TYPES:
                columns.append(_ViewColumn(column, rows))
                fields.append(field.with_type(_VIEW_TYPES[field.type]))
            else:
                taken = column.take(rows)
                columns.append(taken.combine_chunks() if isinstance(taken, pa.ChunkedArray) else taken)
                fields.append(field)
        self.columns = columns
        self.schema = pa.schema(fields, metadata=table.schema.metadata)
        self.num_rows = len(rows)

    def batch(self, start: int, stop: int) -> pa.RecordBatch:
        """Rows ``[start, stop)`` of the serving order."""
        arrays = [c.slice(start, stop) if isinstance(c, _ViewColumn) else c[start:stop] for c in self.columns]
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)
