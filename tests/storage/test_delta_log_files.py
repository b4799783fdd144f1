"""Reading a version's files from its Delta log: the statistics a commit that keeps them needs, the
per-file key ranges a takedown plans by, and the rows of a few files by key (real Delta tables)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from operators.schema import SAMPLE_SCHEMA
from storage.delta import (
    DataFile,
    commit_snapshot,
    describe_file,
    key_ranges,
    logged_files,
    rows_with_keys,
)
from storage.tier import Tier, local_tier


def _samples(ids: list[str]) -> pa.Table:
    n = len(ids)
    return pa.table(
        {
            "sample_id": ids,
            "text": [f"text of {i}" for i in ids],
            "content_hash": ids,
            "source_dataset": ["raw"] * n,
            "source_version": [1] * n,
            "source_uri": ["file:///raw/a.jsonl"] * n,
            "source_path": ["a.jsonl"] * n,
            "source_row": list(range(n)),
            "source_offset": [10 * k for k in range(n)],
            "meta": [None] * n,
        },
        schema=SAMPLE_SCHEMA,
    )


def _table(tmp_path: Path, files: dict[str, list[str]], *, text_stats: bool = False) -> tuple[Tier, list[DataFile]]:
    tier = local_tier(tmp_path)
    (tmp_path / "t").mkdir()
    described = []
    for name, ids in files.items():
        pq.write_table(_samples(ids), tmp_path / "t" / name)
        described.append(describe_file(tier, "t", name))
    if text_stats:  # what an older writer logged: the texts' extremes
        for f in described:
            f.stats["minValues"]["text"] = "text of a secret"
            f.stats["maxValues"]["text"] = "text of z secret"
    commit_snapshot(tier, "t", described, SAMPLE_SCHEMA)
    return tier, described


def test_logged_files_carry_the_footers_statistics_without_opening_a_file(tmp_path: Path) -> None:
    tier, described = _table(tmp_path, {"a.parquet": ["a1", "a2"], "b.parquet": ["b1", "b2", "b3"]})
    for f in described:
        (tmp_path / "t" / f.path).rename(tmp_path / "t" / f"{f.path}.moved")  # the log alone must answer
    assert logged_files(tier, "t", 0) == sorted(described, key=lambda f: f.path)


def test_logged_files_drop_the_statistics_of_unindexed_columns_an_older_writer_logged(tmp_path: Path) -> None:
    tier, _ = _table(tmp_path, {"a.parquet": ["a1", "a2"]}, text_stats=True)
    log = (tmp_path / "t" / "_delta_log" / "00000000000000000000.json").read_text()
    assert "secret" in log  # the old entry holds the texts' extremes
    (kept,) = logged_files(tier, "t", 0)
    assert "text" not in kept.stats["minValues"] and "text" not in kept.stats["maxValues"]
    assert kept.stats["minValues"]["sample_id"] == "a1"
    commit_snapshot(tier, "t", [kept], SAMPLE_SCHEMA)  # a commit that keeps the file does not copy them
    assert "secret" not in (tmp_path / "t" / "_delta_log" / "00000000000000000001.json").read_text()
    assert [f.path for f in logged_files(tier, "t", 1)] == ["a.parquet"]


def test_key_ranges_and_rows_with_keys_read_only_the_files_that_can_hold_a_key(tmp_path: Path) -> None:
    tier, _ = _table(tmp_path, {"a.parquet": ["a1", "a2"], "b.parquet": ["b1", "b2", "b3"]})
    assert key_ranges(tier, "t", 0, "sample_id") == [("a.parquet", "a1", "a2"), ("b.parquet", "b1", "b3")]
    rows = rows_with_keys(
        tier, "t", ["b.parquet", "a.parquet"], ["sample_id", "text"], "sample_id", pa.array(["a2", "b3", "zz"])
    )
    assert rows.to_pylist() == [
        {"sample_id": "b3", "text": "text of b3", "__filename": "b.parquet"},
        {"sample_id": "a2", "text": "text of a2", "__filename": "a.parquet"},
    ]
    none = rows_with_keys(tier, "t", [], ["sample_id"], "sample_id", pa.array(["a2"]))
    assert none.num_rows == 0 and none.column_names == ["sample_id", "__filename"]
