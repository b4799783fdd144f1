"""Tiny sample batches for the quality operator tests."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from operators.lineage_records import LINEAGE_SCHEMA
from operators.schema import SAMPLE_SCHEMA, content_hash


def make_batch(texts: Sequence[str]) -> pa.RecordBatch:
    n = len(texts)
    return pa.RecordBatch.from_pydict(
        {
            "sample_id": [f"s{i}" for i in range(n)],
            "text": list(texts),
            "content_hash": [content_hash(t) for t in texts],
            "source_dataset": ["test"] * n,
            "source_version": [1] * n,
            "source_uri": ["mem://test"] * n,
            "source_path": ["test.jsonl"] * n,
            "source_row": list(range(n)),
            "source_offset": [None] * n,
            "meta": [None] * n,
        },
        schema=SAMPLE_SCHEMA,
    )


def run(operator, texts: Sequence[str]):
    """Apply ``operator`` and return (output, lineage rows as dicts)."""
    out = operator.apply(make_batch(texts))
    assert out.lineage.schema == LINEAGE_SCHEMA
    assert out.lineage.num_rows == len(texts)
    return out, out.lineage.to_pylist()


def rules_of(record: dict) -> dict[str, dict]:
    return {r["rule"]: r for r in record["detail"]["rules"]}


def words(n: int, word: str = "word") -> str:
    """``n`` space-separated copies of distinct-enough words (no duplicate lines)."""
    return " ".join(f"{word}{i % 10}x" if i % 3 else "the" for i in range(n))
