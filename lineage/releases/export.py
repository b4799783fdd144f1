"""Export a release: its samples as JSONL or Parquet files, or tokenized into Megatron or MDS training
shards (:mod:`lineage.releases.tokenized`). One operation, ``export_release``, for every format.

A release with a mixture is exported as it is served: each sample ``repeats`` times, whole passes
first (pass ``p`` writes the samples with more than ``p`` copies, in file order), each row with its
``repeat`` index; a release without one is written as before, each sample once."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lineage.catalog import Catalog
from lineage.catalog.queries import get_release
from lineage.errors import Invalid
from lineage.releases.tokenized import FORMATS as TRAINING_FORMATS
from lineage.releases.tokenized import ExportOptions, TokenizedExport, export_tokenized
from lineage.settings import Settings
from operators.mixture import served_repeats, serving_rules
from storage.delta import version_dataset
from storage.output_paths import output_file, output_folder
from storage.tier import get_tier

FORMATS = ("jsonl", "parquet", *TRAINING_FORMATS)
REPEAT = "repeat"  # a mixture release's exported copies: which repeat of its sample each is


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
        rules = serving_rules((release.manifest or {}).get("mixture"))
    target = output_file(output_folder(out_dir) / f"{name}.{fmt}")
    partial = target.with_suffix(target.suffix + ".partial")
    rows = 0
    schema = dataset.schema if rules is None else dataset.schema.append(pa.field(REPEAT, pa.int32(), nullable=False))
    if fmt == "parquet":
        with pq.ParquetWriter(partial, schema, compression="zstd") as writer:
            for batch in _served(dataset, rules):
                writer.write_batch(batch)
                rows += batch.num_rows
                progress(batch.num_rows)
    else:
        with partial.open("w", encoding="utf-8") as fh:
            for batch in _served(dataset, rules):
                for row in batch.to_pylist():
                    row["meta"] = json.loads(row["meta"]) if row["meta"] else None
                    fh.write(json.dumps(row, ensure_ascii=False))
                    fh.write("\n")
                rows += batch.num_rows
                progress(batch.num_rows)
    partial.replace(target)  # never leave a half-written export under the final name
    return Exported(str(target), rows)


def _served(dataset: Any, rules: dict[str, Any] | None) -> Iterator[pa.RecordBatch]:
    """The release's batches as served: once each, or by the mixture's rules, pass by pass."""
    if rules is None:
        yield from dataset.to_batches()
        return

    def copies(batch: pa.RecordBatch) -> np.ndarray:
        return served_repeats(rules, batch.column("sample_id").to_pylist(), batch.column("source_dataset").to_pylist())

    ids = dataset.to_batches(columns=["sample_id", "source_dataset"])
    passes = max((int(copies(b).max()) for b in ids if b.num_rows), default=0)
    for p in range(passes):
        for batch in dataset.to_batches():
            kept = batch.filter(pa.array(copies(batch) > p))
            if kept.num_rows:
                yield kept.append_column(REPEAT, pa.repeat(pa.scalar(p, pa.int32()), kept.num_rows))
