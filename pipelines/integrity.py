"""A run's two integrity rules, checked in one copy for every engine.

1. **Unique ids from convert on.** Every engine records the id and origin of each sample as
   ingest produces it (:data:`INGESTED_SCHEMA`, written before the first operator sees the
   sample) and calls :func:`check_unique_ids` once ingest ends, before any barrier step. Two
   samples with one ``sample_id`` (the same source given twice, repeated values in an id field,
   overlapping input versions) fail the run there, so no operator ever decides over twins.
2. **The output is what the last step kept.** :func:`check_output_rows` compares the rows an
   engine wrote with the survivors the lineage records of the last step count; a mismatch is an
   engine bug and fails the run before anything is committed.

Both raise :class:`RunError`; the runner marks the run failed and commits nothing.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from pipelines.config import ExecutionConfig
from storage.errors import RunFailed
from storage.tier import Tier

if TYPE_CHECKING:
    import duckdb

EXAMPLES = 5  # duplicated ids an error names
COPIES = 3  # origins it names per id

INGESTED_SCHEMA = pa.schema(
    [
        pa.field("sample_id", pa.string(), nullable=False),
        pa.field("input", pa.int32(), nullable=False),  # position of the input in the pipeline, 0-based
        pa.field("source_dataset", pa.string(), nullable=False),
        pa.field("source_path", pa.string(), nullable=False),
        pa.field("source_row", pa.int64(), nullable=False),
    ]
)


class RunError(RunFailed):
    """A run failed; nothing it wrote became visible (the tree's ``RunFailed``, under its old name)."""


def duplicate_ids(con: duckdb.DuckDBPyConnection, relation: str) -> tuple[int, list[str]]:
    """How many ids occur more than once in ``relation``, and the smallest few of them."""
    rows = con.sql(
        f"SELECT sample_id, count(*) OVER () FROM {relation} GROUP BY sample_id HAVING count(*) > 1 "
        f"ORDER BY sample_id LIMIT {EXAMPLES}"
    ).fetchall()
    return (rows[0][1] if rows else 0), [r[0] for r in rows]


def check_unique_ids(tier: Tier, paths: Sequence[str], config: ExecutionConfig) -> None:
    """Fail the run if two ingested samples share a ``sample_id``; ``paths`` (``tier.path`` form) hold their ids."""
    if not paths:
        return
    # start-up: DuckDB, and pyarrow.dataset (which loads pandas), only when a run checks its ids
    import duckdb
    import pyarrow.dataset as pads

    config.staging_dir.mkdir(parents=True, exist_ok=True)
    with (
        tempfile.TemporaryDirectory(prefix="ids-spill-", dir=config.staging_dir) as spill,
        duckdb.connect(config={"memory_limit": config.duckdb_memory_limit, "temp_directory": spill}) as con,
    ):
        con.register(
            "ingested",
            pads.dataset(list(paths), filesystem=tier.filesystem, schema=INGESTED_SCHEMA, format="parquet"),
        )
        total, ids = duplicate_ids(con, "ingested")
        if not total:
            return
        copies = con.sql(
            "SELECT sample_id, input, source_dataset, source_path, source_row FROM ingested "
            "WHERE list_contains(?, sample_id) ORDER BY ALL",
            params=[ids],
        ).fetchall()
    where: dict[str, list[str]] = {i: [] for i in ids}
    for sid, position, dataset, path, row in copies:
        where[sid].append(f"input {position + 1}: {dataset}/{path} row {row}")
    examples = ", ".join(
        f"{sid} ({'; '.join(w[:COPIES])}{f'; {len(w) - COPIES} more' if len(w) > COPIES else ''})"
        for sid, w in where.items()
    )
    raise RunError(
        f"duplicate sample_id values after convert: {total} id(s) occur more than once, e.g. {examples}. "
        "The same source is probably an input twice, or its id field has repeated values; nothing was committed"
    )


def survivors(steps: Sequence[dict[str, Any]], last_step: int, input_rows: int) -> int:
    """Samples the lineage says leave the pipeline: those the last step kept or modified.

    ``steps`` is the per-step verdict table; a step without records saw no samples. With no
    operators the survivors are convert's plus ``input_rows``, the rows of input dataset versions.
    """
    by_index = {s["step"]: s for s in steps}
    if last_step == 0:
        convert = by_index.get(0)
        return input_rows + (convert["kept"] + convert["modified"] if convert else 0)
    last = by_index.get(last_step)
    return last["kept"] + last["modified"] if last else 0


def check_output_rows(steps: Sequence[dict[str, Any]], last_step: int, input_rows: int, output_rows: int) -> None:
    """Fail the run unless the engine wrote exactly the samples the last step kept."""
    expected = survivors(steps, last_step, input_rows)
    if output_rows != expected:
        raise RunError(
            f"internal error: the engine wrote {output_rows} samples but the lineage of step {last_step} "
            f"keeps {expected}; nothing was committed"
        )
