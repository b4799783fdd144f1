"""Export a release: its samples as JSONL or Parquet files, or tokenized into Megatron or MDS training
shards (:mod:`lineage.releases.tokenized`). One operation, ``export_release``, for every format."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from lineage.catalog import Catalog
from lineage.catalog.queries import get_release
from lineage.errors import Invalid
from lineage.releases.tokenized import FORMATS as TRAINING_FORMATS
from lineage.releases.tokenized import ExportOptions, TokenizedExport, export_tokenized
from lineage.settings import Settings
from storage.delta import version_dataset
from storage.tier import get_tier

FORMATS = ("jsonl", "parquet", *TRAINING_FORMATS)


@dataclass(frozen=True)
class Exported:
    path: str  # the file (jsonl, parquet) or the shard folder (megatron, mds)
    rows: int  # samples exported
    tier: str | None = None  # the shard folder's tier
    manifest: dict[str, Any] | None = None  # a training export's manifest.json
    resumed_shards: int = 0
    training: TokenizedExport | None = None


def export_release(
    catalog: Catalog,
    settings: Settings,
    ref: str,
    out_dir: Path | str,
    fmt: str = "jsonl",
    progress: Callable[[int], None] = lambda _n: None,
    training: ExportOptions | None = None,
    tier: str | None = None,
    engine: str = "local",
) -> Exported:
    """JSONL/Parquet: write ``<out_dir>/<name>-<tag>.{jsonl,parquet}`` (``meta`` inlined as a JSON
    object in JSONL, kept as a JSON string column in Parquet). Megatron/MDS: ``training`` holds the
    tokenizer and packing options, and ``out_dir`` is a folder on ``tier`` (a local folder if none)."""
    if fmt not in FORMATS:
        raise Invalid(f"unknown export format {fmt!r}: use {', '.join(FORMATS)}")
    if fmt in TRAINING_FORMATS:
        if training is None or training.format != fmt:
            raise Invalid(f"--format {fmt} needs a tokenizer: --tokenizer PATH/tokenizer.json")
        done = export_tokenized(catalog, settings, ref, str(out_dir), training, tier, progress, engine)
        return Exported(done.path, done.manifest["samples"], done.tier, done.manifest, done.resumed_shards, done)
    if training is not None or tier is not None or engine != "local":
        raise Invalid(
            f"--format {fmt} writes samples as they are: tokenizer, packing, tier and engine are for megatron and mds"
        )
    out_dir = Path(out_dir)
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
    return Exported(str(target), rows)
