"""Small Arrow helpers shared by the engines."""

from __future__ import annotations

import pyarrow as pa


def conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """Reorder/cast ``batch`` to ``schema`` exactly (types and nullability flags).

    Engines round-trip data through DuckDB, Spark or Ray, which report fields as nullable and
    may pick other string widths; operators expect the canonical schemas.
    """
    if batch.schema == schema:
        return batch
    columns = []
    for field in schema:
        column = batch.column(field.name)
        columns.append(column if column.type == field.type else column.cast(field.type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)
