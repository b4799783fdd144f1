from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from lineage.dedupe_files import dedupe_files
from lineage.settings import Settings
from tests.support.cli import lineage
from tests.support.minhash_texts import BASE, CHINESE, NEAR, OTHER


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
    assert summary.quarantine == tmp_path / "out.jsonl.gz.quarantine.parquet"
    assert pq.read_table(summary.quarantine).column("reason").to_pylist() == ["invalid_json"]


def test_parquet_inputs_across_files(tmp_path: Path, settings: Settings) -> None:
    pq.write_table(pa.table({"id": [1, 2], "text": [BASE, OTHER]}), tmp_path / "x.parquet")
    pq.write_table(pa.table({"id": [3], "text": [NEAR + " Much longer now, with a tail."]}), tmp_path / "y.parquet")
    dedupe_files([tmp_path / "x.parquet", tmp_path / "y.parquet"], tmp_path / "out", settings=settings, id_field="id")
    assert pq.read_table(tmp_path / "out" / "x.parquet").column("id").to_pylist() == [2]
    assert pq.read_table(tmp_path / "out" / "y.parquet").column("id").to_pylist() == [3]
    (row,) = pq.read_table(tmp_path / "out" / "duplicates.parquet").to_pylist()
    assert (row["id"], row["kept_id"]) == ("1", "3")


def test_command_takes_script_layout_and_verify_and_prints_the_settings_it_used(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    texts = {"a": CHINESE, "b": CHINESE + "另外", "c": BASE, "d": NEAR}
    src.write_text("".join(json.dumps({"doc": k, "text": v}, ensure_ascii=False) + "\n" for k, v in texts.items()))
    home, out = tmp_path / "home", str(tmp_path / "out.jsonl")

    default = lineage(home, "dedupe", str(src), "--output", out, "--id-field", "doc").stdout
    assert (
        "settings: threshold 0.8; shingles: word 2-grams and character 5-grams, script mixed, verified by characters; "
        "128 permutations, seed 1; "
        "LSH 21 bands x 6 rows (from the threshold, weights 0.002/0.998); verify exact; survivor longest"
    ) in default
    assert "kept 2, dropped 2 near-duplicates" in default and "quarantined records" not in default
    with src.open("a") as more:
        more.write("{not json\n")
    bad_line = lineage(home, "dedupe", str(src), "--output", out, "--id-field", "doc").stdout
    assert f"quarantined records and why: {out}.quarantine.parquet" in bad_line

    # as words, each Chinese text is a single word (no spaces), so the two are no longer near
    chosen = lineage(
        home, "dedupe", str(src), "-o", out, "--script", "latin", "--bands", "16", "--rows", "8", "--verify", "estimate"
    ).stdout
    assert "script latin;" in chosen and "LSH 16 bands x 8 rows (as set); verify estimate;" in chosen
    assert "kept 3, dropped 1 near-duplicates" in chosen

    for bad, message in [
        (["--script", "klingon"], "script must be one of"),
        (["--bands", "16"], "set both bands and rows"),
        (["--verify", "maybe"], "verify must be one of"),
    ]:
        result = lineage(home, "dedupe", str(src), "-o", out, *bad, check=False)
        assert result.returncode == 3 and message in result.stdout + result.stderr, (bad, result)  # Invalid
    unreadable = tmp_path / "notes.csv"
    unreadable.write_text("text\nhello\n")
    result = lineage(home, "dedupe", str(unreadable), "-o", out, check=False)
    assert result.returncode == 3 and "Traceback" not in result.stderr, result.stderr
    assert f"{unreadable}: lineage dedupe reads JSONL (plain or .gz) and Parquet files" in result.stderr
