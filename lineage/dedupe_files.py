"""Near-duplicate removal for someone who just has files (``lineage dedupe``, ``Service.dedupe_files``).

Runs a throw-away pipeline (convert → ``minhash_dedupe``) on the chosen engine, then streams each
input once more and writes the kept records *byte for byte* in the input's own format, plus a
Parquet report of the dropped ones: ``id``, ``cluster_id``, ``kept_id``, ``jaccard``, where ids are
the ``--id-field`` values (or ``file:row`` without one). Bad records go to a quarantine file.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import logging
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from lineage.catalog import Catalog
from lineage.catalog.queries import dataset_version
from lineage.errors import Invalid, MissingFile
from lineage.runs import Runner
from lineage.settings import Settings, TierConfig
from operators.convert.readers import open_decompressed
from operators.minhash.lsh import band_layout
from operators.minhash.params import MinHashParams
from pipelines.spec import PipelineSpec
from storage.delta import version_dataset
from storage.tier import get_tier, local_tier

log = logging.getLogger(__name__)

REPORT_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string()),
        pa.field("cluster_id", pa.string()),
        pa.field("kept_id", pa.string()),
        pa.field("jaccard", pa.float64()),
    ]
)


@dataclass
class DedupeSummary:
    inputs: int
    records: int
    kept: int
    dropped: int
    quarantined: int
    outputs: list[Path]
    report: Path
    params: MinHashParams

    def settings(self) -> str:
        """The near-duplicate settings the run used, on one line, with the LSH layout resolved."""
        p = self.params
        bands, rows = band_layout(p)
        how = "as set"
        if p.bands is None:
            how = f"from the threshold, weights {p.false_positive_weight}/{p.false_negative_weight}"
        script = f"auto, cjk_ratio {p.cjk_ratio}" if p.script == "auto" else p.script
        return (
            f"threshold {p.threshold}; shingles: {p.ngram}-grams, script {script}; {p.num_perm} permutations, "
            f"seed {p.seed}; LSH {bands} bands x {rows} rows ({how}); verify {p.verify}; survivor {p.survivor}"
        )


def _format(path: Path) -> str:
    name = path.name.lower().removesuffix(".gz")
    if name.endswith((".jsonl", ".json", ".ndjson")):
        return "jsonl"
    if name.endswith((".parquet", ".pq")) and not path.name.lower().endswith(".gz"):
        return "parquet"
    raise Invalid(f"{path}: lineage dedupe reads JSONL (plain or .gz) and Parquet files")


def _targets(inputs: list[Path], output: Path) -> tuple[list[Path], Path]:
    """Output file per input, and the report path."""
    if len(inputs) == 1 and not (output.is_dir() or str(output).endswith("/")):
        return [output], output.with_name(output.name + ".duplicates.parquet")
    output.mkdir(parents=True, exist_ok=True)
    names = [p.name for p in inputs]
    if len(set(names)) != len(names):
        raise Invalid("inputs with the same file name cannot share one output folder")
    return [output / n for n in names], output / "duplicates.parquet"


def dedupe_files(
    inputs: list[Path],
    output: Path,
    *,
    settings: Settings,
    params: MinHashParams | None = None,
    engine: str = "local",
    text_field: str = "text",
    id_field: str | None = None,
) -> DedupeSummary:
    """Write the kept records of ``inputs`` to ``output`` (a file for one input, else a folder), with the
    report beside them. Bad paths and formats are refused before any work."""
    params = params or MinHashParams()
    inputs = [p.resolve() for p in inputs]
    for p in inputs:
        if not p.is_file():
            raise MissingFile(f"no such file: {p}")
        _format(p)
    targets, report_path = _targets(inputs, output)
    with tempfile.TemporaryDirectory(prefix="lineage-dedupe-") as tmp:
        # a private home: nothing of this run lands in the user's catalog or tiers
        work = settings.model_copy(
            update={
                "home": Path(tmp),
                "catalog_url": f"sqlite:///{tmp}/catalog.db",
                "default_tier": "local",
                "tiers": [TierConfig(name="local", kind="posix", root=f"{tmp}/data")],
            }
        )
        catalog = Catalog(work.catalog_url or "")
        spec = PipelineSpec.model_validate(
            {
                "name": "dedupe",
                "inputs": [
                    {"dataset": f"input{i}", "path": str(p), "text_field": text_field, "id_field": id_field}
                    for i, p in enumerate(inputs)
                ],
                "operators": [{"name": "minhash_dedupe", "params": params.to_dict()}],
                "output": {"dataset": "dedupe"},
            }
        )
        outcome = Runner(work, catalog).run(spec, engine=engine)
        with catalog.session() as s:
            dv = dataset_version(s, "dedupe", outcome.version)
            tier = get_tier(dv.tier, work)
            data = version_dataset(tier, dv.data_path, dv.data_delta_version)
            lineage = version_dataset(tier, dv.lineage_path, dv.lineage_delta_version)
            quarantine = version_dataset(tier, dv.quarantine_path, dv.quarantine_delta_version)
        with duckdb.connect() as con:
            con.register("data", data)
            con.register("lin", lineage)
            kept_rows = con.sql("SELECT source_dataset, source_row FROM data").fetchall()
            dropped = con.sql(
                "SELECT d.sample_id, d.detail.duplicate.cluster_id, d.detail.duplicate.kept_id, "
                "d.detail.duplicate.jaccard FROM lin d WHERE d.operator = 'minhash_dedupe' AND d.verdict = 'dropped'"
            ).fetchall()
            members = {r[0] for r in dropped} | {r[1] for r in dropped} | {r[2] for r in dropped}
            con.register("members", pa.table({"sample_id": pa.array(sorted(members), pa.string())}))
            where = con.sql(
                "SELECT l.sample_id, l.detail.source.dataset, l.detail.source.row FROM lin l "
                "SEMI JOIN members m USING (sample_id) WHERE l.step = 0"
            ).fetchall()
        quarantine_table = quarantine.to_table()

    keep: dict[int, set[int]] = {i: set() for i in range(len(inputs))}
    for ds, row in kept_rows:
        keep[int(ds.removeprefix("input"))].add(row)
    position = {sid: (int(ds.removeprefix("input")), row) for sid, ds, row in where}
    wanted: dict[int, dict[int, str | None]] = {i: {} for i in range(len(inputs))}
    for file_index, row in position.values():
        wanted[file_index][row] = None

    for i, (src, dst) in enumerate(zip(inputs, targets, strict=True)):
        _write_kept(src, dst, keep[i], wanted[i], id_field)

    def user_id(sample: str) -> str:
        file_index, row = position[sample]
        value = wanted[file_index].get(row)
        return value if value is not None else f"{inputs[file_index].name}:{row}"

    report = pa.table(
        {
            "id": [user_id(r[0]) for r in dropped],
            "cluster_id": [user_id(r[1]) for r in dropped],
            "kept_id": [user_id(r[2]) for r in dropped],
            "jaccard": [r[3] for r in dropped],
        },
        schema=REPORT_SCHEMA,
    )
    pq.write_table(report, report_path)
    if quarantine_table.num_rows:
        pq.write_table(quarantine_table, report_path.with_name(report_path.name.replace("duplicates", "quarantine")))
    steps = outcome.counts["steps"]
    return DedupeSummary(
        len(inputs),
        steps[0]["in"],
        outcome.row_count,
        len(dropped),
        quarantine_table.num_rows,
        targets,
        report_path,
        params,
    )


def _id_of(record: Any, id_field: str | None) -> str | None:
    if id_field is None or not isinstance(record, dict) or record.get(id_field) is None:
        return None
    return str(record[id_field])


def _write_kept(src: Path, dst: Path, keep: set[int], wanted: dict[int, str | None], id_field: str | None) -> None:
    """Copy the kept records of ``src`` to ``dst`` unchanged; note ids of report rows in ``wanted``."""
    partial = dst.with_name(dst.name + ".partial")
    if _format(src) == "parquet":
        reader = pq.ParquetFile(src)
        with pq.ParquetWriter(partial, reader.schema_arrow) as writer:
            row = 0
            for batch in reader.iter_batches():
                mask = [row + k in keep for k in range(batch.num_rows)]
                if id_field is not None and wanted:
                    ids = batch.column(id_field).to_pylist() if id_field in batch.schema.names else []
                    for k, value in enumerate(ids):
                        if row + k in wanted and value is not None:
                            wanted[row + k] = str(value)
                writer.write_batch(batch.filter(pa.array(mask)))
                row += batch.num_rows
    else:
        fs = local_tier(src.parent).filesystem
        with open_decompressed(fs, str(src)) as stream:
            opener = _gzip_writer if src.name.lower().endswith(".gz") else _plain_writer
            with opener(partial) as out:
                for row, line in enumerate(stream):
                    if row in wanted and id_field is not None:
                        with contextlib.suppress(ValueError):
                            wanted[row] = _id_of(json.loads(line), id_field)
                    if row in keep:
                        out.write(line if line.endswith(b"\n") else line + b"\n")
    partial.replace(dst)


def _plain_writer(path: Path) -> Any:
    return path.open("wb")


def _gzip_writer(path: Path) -> Any:
    return gzip.open(path, "wb")
