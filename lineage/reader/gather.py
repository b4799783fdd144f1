"""Gathering a decoded window's rows in shuffled order without copying their text.

A shuffled batch is a gather: its rows come from anywhere in the window. Gathering ``string``
columns copies every byte of every document again, which costs about as much as decoding them.
Instead, string and binary columns are turned into Arrow *view* arrays (``string_view``,
``binary_view``): 16 bytes per value, holding the length and either the value itself (up to 12
bytes) or a prefix, a buffer index and an offset into the decoded data. Release files leave
their string layout to the reader, so Parquet decodes row groups straight into views; files that
embed an Arrow schema with ``string`` columns are cast to views by the thread that decoded them,
while their data is in cache (:func:`as_views`). A window's views are joined (Arrow renumbers
their buffer indices, the data is not copied) and gathered into serving order once, as
fixed-size 16-byte values; each batch is then a zero-copy slice pointing at the window's data
buffers (which it keeps alive), so a shuffled batch costs about as much as a sequential one.
View arrays read like strings everywhere in Arrow (``to_pylist``, pandas, Polars, DuckDB);
``.cast(pa.string())`` gives offsets-based strings.

Other columns are gathered by Arrow's ``take``, once per window.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

_VIEW_TYPES = {pa.string(): pa.string_view(), pa.binary(): pa.binary_view()}
_PLAIN_TYPES = {view: plain for plain, view in _VIEW_TYPES.items()}
_VIEW = pa.binary(16)  # one view: length, then the value inline or (prefix, buffer index, offset)


def as_views(table: pa.Table) -> pa.Table:
    """``table`` with its string and binary columns cast to views (the data buffers are shared, not
    copied); columns already decoded as views are left as they are."""
    fields = [f.with_type(_VIEW_TYPES[f.type]) if f.type in _VIEW_TYPES else f for f in table.schema]
    return table if fields == list(table.schema) else table.cast(pa.schema(fields, metadata=table.schema.metadata))


def plain_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with view types back to ``string``/``binary`` (what ``string_views=False`` gives)."""
    return pa.schema([f.with_type(_PLAIN_TYPES.get(f.type, f.type)) for f in schema], metadata=schema.metadata)


def _gathered_views(column: pa.ChunkedArray, rows: np.ndarray) -> pa.Array:
    """A view column's ``rows``, in order, over its chunks' data buffers.

    Arrow has no ``take`` for view types, so the views (with their validity) are taken as 16-byte
    fixed-size values and wrapped again with the joined data buffers.
    """
    joined = pa.concat_arrays(column.chunks) if column.num_chunks else pa.array([], column.type)
    validity, views, *data = joined.buffers()
    fixed = pa.Array.from_buffers(_VIEW, len(joined), [validity, views], offset=joined.offset)
    taken = fixed.take(rows)
    return pa.Array.from_buffers(column.type, len(taken), [*taken.buffers(), *data])


class Window:
    """A decoded window's ``rows`` (indices into it), ready to be served in that order as batches.

    ``table`` is the window's row groups after :func:`as_views`.
    """

    def __init__(self, table: pa.Table, rows: np.ndarray) -> None:
        arrays = []
        for field, column in zip(table.schema, table.columns, strict=True):
            if field.type in _PLAIN_TYPES:
                arrays.append(_gathered_views(column, rows))
            else:
                taken = column.take(rows)
                arrays.append(taken.combine_chunks() if isinstance(taken, pa.ChunkedArray) else taken)
        self.served = pa.RecordBatch.from_arrays(arrays, schema=table.schema)
        self.num_rows = len(rows)

    def batch(self, start: int, stop: int) -> pa.RecordBatch:
        """Rows ``[start, stop)`` of the serving order."""
        return self.served.slice(start, stop - start)
