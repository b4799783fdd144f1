from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from lineage.dedupe_files import dedupe_files
from lineage.settings import Settings
from tests.pipelines.test_minhash_pipeline import BASE, CHINESE, NEAR, OTHER


def test_jsonl_gz_keeps_records_byte_for_byte_and_reports_duplicates(tmp_path: Path, settings: Settings) -> None:
    lines = [
        json.dumps({"doc": "a", "body": BASE, "extra": [1, 2]}),
        json.dumps({"doc": "b", "body": NEAR + " Tail.", "extra": None}),
        '{"doc": "c",   "body": ' + json.dumps(OTHER) + "}",  # odd spacing must survive
        "this line is not json",
        json.dumps({"doc": "d", "body": CHINESE}),
        json.dumps({"doc": "e", "body": CHINESE + "另外"}),
    ]
    src = tmp_path / "in.jsonl.gz"
    src.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    summary = dedupe_files([src], tmp_path / "out.jsonl.gz", settings=settings, text_field="body", id_field="doc")
    assert (summary.records, summary.kept, summary.dropped, summary.quarantined) == (5, 3, 2, 1)
    kept = gzip.decompress((tmp_path / "out.jsonl.gz").read_bytes()).decode().splitlines()
    assert kept == [lines[1], lines[2], lines[5]]  # the longest of each cluster, unchanged
    report = pq.read_table(summary.report).sort_by("id").to_pylist()
    assert [(r["id"], r["kept_id"]) for r in report] == [("a", "b"), ("d", "e")]
    assert all(0.8 <= r["jaccard"] < 1 for r in report)
    assert pq.read_table(tmp_path / "out.jsonl.gz.quarantine.parquet").column("reason").to_pylist() == ["invalid_json"]


def test_parquet_inputs_across_files(tmp_path: Path, settings: Settings) -> None:
    pq.write_table(pa.table({"id": [1, 2], "text": [BASE, OTHER]}), tmp_path / "x.parquet")
    pq.write_table(pa.table({"id": [3], "text": [NEAR + " Much longer now, with a tail."]}), tmp_path / "y.parquet")
    dedupe_files([tmp_path / "x.parquet", tmp_path / "y.parquet"], tmp_path / "out", settings=settings, id_field="id")
    assert pq.read_table(tmp_path / "out" / "x.parquet").column("id").to_pylist() == [2]
    assert pq.read_table(tmp_path / "out" / "y.parquet").column("id").to_pylist() == [3]
    (row,) = pq.read_table(tmp_path / "out" / "duplicates.parquet").to_pylist()
    assert (row["id"], row["kept_id"]) == ("1", "3")
