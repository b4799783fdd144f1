"""The one Arrow schema of a training sample, and the quarantine schema for records we refuse.

``sample_id`` derivation: :mod:`operators.sample_ids` (also in the README).

``content_hash`` = xxh3-128 (hex) of the text after Unicode NFKC normalisation and collapsing
every run of whitespace to one space, with leading/trailing whitespace stripped.
"""

from __future__ import annotations

import pyarrow as pa

from operators.sample_ids import sample_id, sample_key_from_id, sample_key_from_position  # noqa: F401  (re-exported)
from operators.text import content_hash, content_hashes  # noqa: F401  (re-exported)

SAMPLE_SCHEMA = pa.schema(
    [
        pa.field("sample_id", pa.string(), nullable=False),
        pa.field("text", pa.string(), nullable=False),
        pa.field("content_hash", pa.string(), nullable=False),
        pa.field("source_dataset", pa.string(), nullable=False),
        pa.field("source_version", pa.int64(), nullable=False),
        pa.field("source_uri", pa.string(), nullable=False),
        pa.field("source_path", pa.string(), nullable=False),
        pa.field("source_row", pa.int64(), nullable=False),
        pa.field("source_offset", pa.int64(), nullable=True),
        pa.field("meta", pa.string(), nullable=True),  # JSON object of the record's other fields
    ]
)

# Deterministic "first" for exact dedupe and ties: input order, independent of engine and tier.
SOURCE_ORDER = ["source_dataset", "source_path", "source_row"]

QUARANTINE_SCHEMA = pa.schema(
    [
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("source_dataset", pa.string(), nullable=False),
        pa.field("source_uri", pa.string(), nullable=False),
        pa.field("source_path", pa.string(), nullable=False),
        pa.field("source_row", pa.int64(), nullable=True),
        pa.field("source_offset", pa.int64(), nullable=True),
        pa.field("reason", pa.string(), nullable=False),
        pa.field("message", pa.string(), nullable=True),
        pa.field("raw", pa.binary(), nullable=True),  # truncated to settings.quarantine_raw_bytes
        pa.field("raw_size", pa.int64(), nullable=True),
    ]
)


def empty_samples() -> pa.Table:
    return SAMPLE_SCHEMA.empty_table()
