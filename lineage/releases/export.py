"""Export a release's samples to JSONL or Parquet files."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq

from lineage.catalog import Catalog
from lineage.catalog.queries import get_release
from lineage.errors import Invalid
from lineage.settings import Settings
from storage.delta import version_dataset
from storage.tier import get_tier


def export_release(
    catalog: Catalog,
    settings: Settings,
    ref: str,
    out_dir: Path,
    fmt: str = "jsonl",
    progress: Callable[[int], None] = lambda _n: None,
) -> tuple[Path, int]:
    """Write ``<out_dir>/<name>-<tag>.{jsonl,parquet}``; return (path, rows). ``meta`` is inlined
    as a JSON object in JSONL, kept as a JSON string column in Parquet."""
    if fmt not in ("jsonl", "parquet"):
        raise Invalid(f"unknown export format {fmt!r}: use jsonl or parquet")
    with catalog.session() as s:
        release = get_release(s, ref)
        dv = release.dataset_version
        tier = get_tier(dv.tier, settings)
        dataset = version_dataset(tier, dv.data_path, dv.data_delta_version)
        name = f"{release.name}-{release.tag}"
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{name}.{fmt}"
    partial = target.with_suffix(target.suffix + ".partial")
    rows = 0
    if fmt == "parquet":
        with pq.ParquetWriter(partial, dataset.schema, compression="zstd") as writer:
            for batch in dataset.to_batches():
                writer.write_batch(batch)
                rows += batch.num_rows
                progress(batch.num_rows)
    else:
        with partial.open("w", encoding="utf-8") as fh:
            for batch in dataset.to_batches():
                for row in batch.to_pylist():
                    row["meta"] = json.loads(row["meta"]) if row["meta"] else None
                    fh.write(json.dumps(row, ensure_ascii=False))
                    fh.write("\n")
                rows += batch.num_rows
                progress(batch.num_rows)
    partial.replace(target)  # never leave a half-written export under the final name
    return target, rows
