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

    Counted with hash kernels (``value_counts`` of an ``operator`` / ``rule`` key), not Acero's group-by
    and join: those load ``pyarrow.dataset`` and with it pandas (0.4 s), and the groups are few.
    """
    table = lineage if isinstance(lineage, pa.Table) else pa.Table.from_batches([lineage])
    counts: dict[str, dict[str, int]] = {}
    flagged = table.filter(pc.and_(pc.is_valid(table["reason"]), pc.not_equal(table["verdict"], Verdict.KEPT.value)))
    keys = _keys(flagged["operator"], _current(flagged["reason"]))
    _count(counts, keys, None)
    for verdict, column in ((Verdict.DROPPED, "dropped"), (Verdict.MODIFIED, "modified")):
        _count(counts, keys.filter(pc.equal(flagged["verdict"], verdict.value)), column)
    rules = pc.struct_field(table["detail"], "rules").combine_chunks() if table.num_rows else None
    if rules is not None and len(rules.flatten()):
        flat = rules.flatten()
        operators = table["operator"].combine_chunks().take(pc.list_parent_indices(rules))
        keys = _keys(operators, _current(pc.binary_join_element_wise(flat.field("rule_set"), flat.field("rule"), ":")))
        _count(counts, keys, None)  # a rule that never failed still has its row
        _count(counts, keys.filter(pc.invert(flat.field("passed"))), "failed")
    ordered = sorted(tuple(key.split(_SEP, 1)) for key in counts)
    columns: dict[str, list] = {"operator": [o for o, _ in ordered], "rule": [r for _, r in ordered]}
    for name in ("dropped", "modified", "failed"):
        columns[name] = [counts[_SEP.join(k)].get(name, 0) for k in ordered]
    return pa.table(columns, schema=RULE_COUNTS_SCHEMA)


_SEP = "\x1f"  # joins operator and rule into one hash key; neither name holds it


def _keys(operators: pa.Array | pa.ChunkedArray, rules: pa.Array | pa.ChunkedArray) -> pa.Array:
    joined = pc.binary_join_element_wise(operators, rules, _SEP)
    return joined.combine_chunks() if isinstance(joined, pa.ChunkedArray) else joined


def _count(counts: dict[str, dict[str, int]], keys: pa.Array, column: str | None) -> None:
    for entry in pc.value_counts(keys).to_pylist():
        found = counts.setdefault(entry["values"], {})
        if column is not None:
            found[column] = found.get(column, 0) + entry["counts"]


def _current(rules: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Each ``<name>:<rule>`` under today's operator name (mapped once per distinct value)."""
    encoded = (rules.combine_chunks() if isinstance(rules, pa.ChunkedArray) else rules).dictionary_encode()
    names = [None if r is None else current_rule(r) for r in encoded.dictionary.to_pylist()]
    return pa.array(names, pa.string()).take(encoded.indices)
