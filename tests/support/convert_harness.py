"""The convert operator run over a local folder, as an engine would: its samples, lineage, quarantine and stats."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from operators.convert import ConvertOperator, SourceSpec, plan_chunks
from operators.lineage_records import LINEAGE_SCHEMA
from operators.schema import QUARANTINE_SCHEMA, SAMPLE_SCHEMA
from storage.tier import local_tier


def convert(
    root: Path,
    pattern: str,
    dataset: str = "ds",
    *,
    blocks: bool = True,
    processes: int = 0,
    here: bool = True,
    meta: bool = True,
    **params,
) -> tuple[pa.Table, pa.Table, pa.Table, dict]:
    """``blocks=False``: JSONL record by record, the reference the block path is checked against;
    ``processes``: blocks parsed in that many worker processes too (``here=False``: only there,
    after the first few); ``meta=False``: no ``meta`` kept (``lineage dedupe``)."""
    chunks = plan_chunks(SourceSpec(dataset, local_tier(root), pattern), 3)
    op = ConvertOperator(params, run_id="run-1", blocks=blocks, meta=meta)
    op.parse_processes = processes
    op.parse_here = here
    samples, lineage, quarantine, stats = [], [], [], {}
    for batch in chunks.to_batches():
        for out in op.read(batch):
            samples.append(out.samples)
            lineage.append(out.lineage)
            quarantine.append(out.quarantine)
            for k, v in out.stats.items():
                stats[k] = stats.get(k, 0) + v
    return (
        pa.Table.from_batches(samples, SAMPLE_SCHEMA),
        pa.Table.from_batches(lineage, LINEAGE_SCHEMA),
        pa.Table.from_batches(quarantine, QUARANTINE_SCHEMA),
        stats,
    )
