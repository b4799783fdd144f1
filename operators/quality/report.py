"""Per-rule counts from lineage records, for the release QC report."""

from __future__ import annotations

import numpy as np
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

    Counted over integer codes of the columns' distinct values (:func:`_tally`), not with Acero's
    group-by and join: those load ``pyarrow.dataset`` and with it pandas (0.4 s), and the groups are few.
    """
    table = lineage if isinstance(lineage, pa.Table) else pa.Table.from_batches([lineage])
    counts: dict[tuple[str, str], dict[str, int]] = {}
    flagged = table.filter(pc.and_(pc.is_valid(table["reason"]), pc.not_equal(table["verdict"], Verdict.KEPT.value)))
    operators, reasons = _codes(flagged["operator"]), _codes(_current(flagged["reason"]))
    verdicts = flagged["verdict"]
    _tally(counts, operators, reasons, None, None)
    for verdict, column in ((Verdict.DROPPED, "dropped"), (Verdict.MODIFIED, "modified")):
        _tally(counts, operators, reasons, _mask(pc.equal(verdicts, verdict.value)), column)
    rules = pc.struct_field(table["detail"], "rules").combine_chunks() if table.num_rows else None
    if rules is not None and len(rules.flatten()):
        flat = rules.flatten()
        codes, names = _codes(table["operator"])
        of_rule = (codes[pc.list_parent_indices(rules).to_numpy()], names)
        rule_names = _rule_codes(flat.field("rule_set"), flat.field("rule"))
        _tally(counts, of_rule, rule_names, None, None)  # a rule that never failed still has its row
        _tally(counts, of_rule, rule_names, _mask(pc.invert(flat.field("passed"))), "failed")
    ordered = sorted(counts)
    columns: dict[str, list] = {"operator": [o for o, _ in ordered], "rule": [r for _, r in ordered]}
    for name in ("dropped", "modified", "failed"):
        columns[name] = [counts[k].get(name, 0) for k in ordered]
    return pa.table(columns, schema=RULE_COUNTS_SCHEMA)


# A column as (integer code per row, the distinct values): counting pairs of codes is a few numpy
# passes, where joining two string columns per row (millions of rule results) and hashing them was
# most of a release's QC report.
Codes = tuple[np.ndarray, list[str]]


def _codes(values: pa.Array | pa.ChunkedArray) -> Codes:
    encoded = (values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values).dictionary_encode()
    return encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64), encoded.dictionary.to_pylist()


def _rule_codes(rule_sets: pa.Array, rules: pa.Array) -> Codes:
    """``<rule set>:<rule>`` per rule result under today's name, from the two columns' codes."""
    (sets, set_names), (names, rule_names) = _codes(rule_sets), _codes(rules)
    width = max(len(rule_names), 1)
    pair = sets * width + names
    present = np.flatnonzero(np.bincount(pair, minlength=len(set_names) * width))
    renumber = np.zeros(len(set_names) * width, dtype=np.int64)
    renumber[present] = np.arange(len(present))
    joined = [current_rule(f"{set_names[p // width]}:{rule_names[p % width]}") for p in present.tolist()]
    return renumber[pair], joined


def _mask(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return np.asarray(values.to_numpy(zero_copy_only=False), dtype=bool)


def _tally(
    counts: dict[tuple[str, str], dict[str, int]],
    first: Codes,
    second: Codes,
    mask: np.ndarray | None,
    column: str | None,
) -> None:
    """Count the rows per (first, second) value, into ``column`` (None: only make sure the row exists)."""
    (a, a_names), (b, b_names) = first, second
    width = max(len(b_names), 1)
    pair = a * width + b
    found = np.bincount(pair if mask is None else pair[mask], minlength=len(a_names) * width)
    keys = np.flatnonzero(found)
    for key, n in zip(keys.tolist(), found[keys].tolist(), strict=True):
        row = counts.setdefault((a_names[key // width], b_names[key % width]), {})
        if column is not None:
            row[column] = row.get(column, 0) + n


def _current(rules: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Each ``<name>:<rule>`` under today's operator name (mapped once per distinct value)."""
    encoded = (rules.combine_chunks() if isinstance(rules, pa.ChunkedArray) else rules).dictionary_encode()
    names = [None if r is None else current_rule(r) for r in encoded.dictionary.to_pylist()]
    return pa.array(names, pa.string()).take(encoded.indices)
