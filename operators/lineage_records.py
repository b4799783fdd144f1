"""The lineage record: one row per (operator run, input sample).

This module owns the schema. Every operator emits exactly one record per sample it sees:
``kept``, ``dropped`` or ``modified``, with a reason and related sample ids. Operator-specific
facts go in the single typed ``detail`` struct; new operators add fields to it rather than new
tables, so one Delta table answers every lineage question.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

import pyarrow as pa


class Verdict(StrEnum):
    KEPT = "kept"
    DROPPED = "dropped"
    MODIFIED = "modified"


SOURCE_DETAIL = pa.struct(
    [
        pa.field("dataset", pa.string()),
        pa.field("version", pa.int64()),
        pa.field("uri", pa.string()),
        pa.field("path", pa.string()),
        pa.field("row", pa.int64()),
        pa.field("offset", pa.int64()),
    ]
)

DUPLICATE_DETAIL = pa.struct(
    [
        pa.field("method", pa.string()),  # "exact" | "minhash"
        pa.field("cluster_id", pa.string()),
        pa.field("kept_id", pa.string()),
        pa.field("jaccard", pa.float64()),
        pa.field("cluster_size", pa.int64()),
    ]
)

RULE_RESULT = pa.struct(
    [
        pa.field("rule_set", pa.string()),  # the quality operator's name (before issue #16: its rule-set name)
        pa.field("rule", pa.string()),
        pa.field("value", pa.float64()),
        pa.field("threshold", pa.float64()),
        pa.field("comparison", pa.string()),  # "<", "<=", ">", ">=": the sample passes when value OP threshold
        pa.field("passed", pa.bool_()),
    ]
)

MODIFICATION_DETAIL = pa.struct(
    [
        pa.field("old_content_hash", pa.string()),
        pa.field("new_content_hash", pa.string()),
        pa.field("removed_count", pa.int64()),
        pa.field("removed", pa.list_(pa.string())),
    ]
)

CONTAMINATION_MATCH = pa.struct(
    [
        pa.field("evalset", pa.string()),  # NAME:vN
        pa.field("item_id", pa.string()),
        pa.field("matched_item_ngrams", pa.int64()),  # the item's distinct n-grams found in the sample
        pa.field("item_ngrams", pa.int64()),
        pa.field("matched_sample_ngrams", pa.int64()),  # the sample's n-grams that are the item's
        pa.field("sample_ngrams", pa.int64()),
    ]
)

CONTAMINATION_DETAIL = pa.struct(
    [
        pa.field("checked", pa.list_(pa.string())),  # the eval set versions checked against (NAME:vN)
        pa.field("contaminated", pa.bool_()),  # above the operator's threshold
        pa.field("matches", pa.list_(CONTAMINATION_MATCH)),  # one per item sharing an n-gram
    ]
)

DETAIL = pa.struct(
    [
        pa.field("source", SOURCE_DETAIL),
        pa.field("duplicate", DUPLICATE_DETAIL),
        pa.field("rules", pa.list_(RULE_RESULT)),
        pa.field("modification", MODIFICATION_DETAIL),
        pa.field("contamination", CONTAMINATION_DETAIL),
    ]
)

LINEAGE_SCHEMA = pa.schema(
    [
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("step", pa.int32(), nullable=False),  # position of the operator in the pipeline
        pa.field("operator", pa.string(), nullable=False),
        pa.field("operator_version", pa.string(), nullable=False),
        pa.field("sample_id", pa.string(), nullable=False),
        pa.field("verdict", pa.string(), nullable=False),
        pa.field("reason", pa.string(), nullable=True),
        pa.field("related_ids", pa.list_(pa.string()), nullable=True),
        pa.field("detail", DETAIL, nullable=True),
    ]
)


def lineage_batch(
    *,
    operator: str,
    operator_version: str,
    sample_ids: pa.Array | Sequence[str],
    verdicts: pa.Array | Sequence[str],
    reasons: pa.Array | Sequence[str | None] | None = None,
    related_ids: pa.Array | Sequence[list[str] | None] | None = None,
    detail: pa.Array | Sequence[dict | None] | None = None,
) -> pa.RecordBatch:
    """Build lineage records. ``run_id`` and ``step`` are stamped by the engine, not the operator."""
    n = len(sample_ids)

    def col(values: object, typ: pa.DataType) -> pa.Array:
        if values is None:
            return pa.nulls(n, typ)
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        if isinstance(values, pa.Array):
            return values if values.type == typ else values.cast(typ)
        return pa.array(values, type=typ)

    return pa.RecordBatch.from_arrays(
        [
            pa.repeat(pa.scalar("", pa.string()), n),
            pa.repeat(pa.scalar(0, pa.int32()), n),
            pa.repeat(pa.scalar(operator, pa.string()), n),
            pa.repeat(pa.scalar(operator_version, pa.string()), n),
            col(sample_ids, pa.string()),
            col(verdicts, pa.string()),
            col(reasons, pa.string()),
            col(related_ids, pa.list_(pa.string())),
            col(detail, DETAIL),
        ],
        schema=LINEAGE_SCHEMA,
    )


def stamp(batch: pa.RecordBatch, run_id: str, step: int) -> pa.RecordBatch:
    """Set the run id and step on records an operator produced."""
    n = batch.num_rows
    cols = list(batch.columns)
    cols[0] = pa.repeat(pa.scalar(run_id, pa.string()), n)
    cols[1] = pa.repeat(pa.scalar(step, pa.int32()), n)
    return pa.RecordBatch.from_arrays(cols, schema=LINEAGE_SCHEMA)


def detail_struct(length: int, **parts: pa.Array) -> pa.StructArray:
    """A ``detail`` column with the named sub-structs set (e.g. ``duplicate=...``) and the rest null."""
    unknown = set(parts) - set(DETAIL.names)
    if unknown:
        raise KeyError(f"unknown detail field(s) {sorted(unknown)}; known: {DETAIL.names}")
    arrays = [parts[f.name] if f.name in parts else pa.nulls(length, f.type) for f in DETAIL]
    return pa.StructArray.from_arrays(arrays, fields=list(DETAIL))
