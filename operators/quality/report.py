"""Per-rule counts from lineage records, for the release QC report."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from operators.lineage_records import Verdict
from operators.quality.names import current_rule

RULE_COUNTS_SCHEMA = pa.schema(
    [
        pa.field("operator", pa.string(), nullable=False),
        pa.field("rule", pa.string(), nullable=False),
        pa.field("dropped", pa.int64(), nullable=False),
        pa.field("modified", pa.int64(), nullable=False),
        pa.field("failed", pa.int64(), nullable=False),
    ]
)


def rule_counts(lineage: pa.Table | pa.RecordBatch) -> pa.Table:
    """Aggregate LINEAGE_SCHEMA records into one row per (operator, rule).

    ``dropped``/``modified`` count records with that verdict whose ``reason`` is the rule (a drop
    names the first failing rule, so drops add up to the samples removed); ``failed`` counts
    samples on which the rule failed at all, from ``detail.rules`` (several per sample possible).
    Rows are sorted by operator and rule; a pure function of its input. Rules recorded under an old
    rule-set name (``default:min_words``, before issue #16) count under today's (``quality:min_words``).
    """
    table = lineage if isinstance(lineage, pa.Table) else pa.Table.from_batches([lineage])
    verdicts = _verdict_counts(table)
    failures = _failure_counts(table)
    joined = verdicts.join(failures, keys=["operator", "rule"], join_type="full outer")
    columns = [
        joined["operator"],
        joined["rule"],
        *(pc.fill_null(joined[name], 0).cast(pa.int64()) for name in ("dropped", "modified", "failed")),
    ]
    result = pa.Table.from_arrays(columns, schema=RULE_COUNTS_SCHEMA)
    return result.sort_by([("operator", "ascending"), ("rule", "ascending")])


def _verdict_counts(table: pa.Table) -> pa.Table:
    flagged = table.filter(pc.and_(pc.is_valid(table["reason"]), pc.not_equal(table["verdict"], Verdict.KEPT.value)))
    if flagged.num_rows == 0:
        return _empty(["dropped", "modified"])
    small = pa.table(
        {
            "operator": flagged["operator"],
            "rule": _current(flagged["reason"]),
            "dropped": pc.cast(pc.equal(flagged["verdict"], Verdict.DROPPED.value), pa.int64()),
            "modified": pc.cast(pc.equal(flagged["verdict"], Verdict.MODIFIED.value), pa.int64()),
        }
    )
    grouped = small.group_by(["operator", "rule"]).aggregate([("dropped", "sum"), ("modified", "sum")])
    return grouped.select(["operator", "rule", "dropped_sum", "modified_sum"]).rename_columns(
        ["operator", "rule", "dropped", "modified"]
    )


def _failure_counts(table: pa.Table) -> pa.Table:
    rules = pc.struct_field(table["detail"], "rules").combine_chunks() if table.num_rows else None
    if rules is None or len(rules.flatten()) == 0:
        return _empty(["failed"])
    flat = rules.flatten()
    operators = table["operator"].combine_chunks().take(pc.list_parent_indices(rules))
    small = pa.table(
        {
            "operator": operators,
            "rule": _current(pc.binary_join_element_wise(flat.field("rule_set"), flat.field("rule"), ":")),
            "failed": pc.cast(pc.invert(flat.field("passed")), pa.int64()),
        }
    )
    grouped = small.group_by(["operator", "rule"]).aggregate([("failed", "sum")])
    return grouped.select(["operator", "rule", "failed_sum"]).rename_columns(["operator", "rule", "failed"])


def _current(rules: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Each ``<name>:<rule>`` under today's operator name (mapped once per distinct value)."""
    encoded = (rules.combine_chunks() if isinstance(rules, pa.ChunkedArray) else rules).dictionary_encode()
    names = [None if r is None else current_rule(r) for r in encoded.dictionary.to_pylist()]
    return pa.array(names, pa.string()).take(encoded.indices)


def _empty(value_columns: list[str]) -> pa.Table:
    return pa.table(
        {"operator": pa.array([], pa.string()), "rule": pa.array([], pa.string())}
        | {c: pa.array([], pa.int64()) for c in value_columns}
    )
