from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from operators.convert import ConvertOperator, SourceSpec, plan_chunks
from operators.schema import content_hash, sample_id
from storage.tier import local_tier
from tests.support.convert_harness import convert
from tests.support.helpers import write_jsonl


def test_jsonl_samples_have_schema_provenance_and_meta(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "d.jsonl", [{"text": "hello world", "lang": "en", "n": 1}, {"text": "second doc"}])
    samples, lineage, quarantine, _ = convert(tmp_path, "d.jsonl")
    assert samples.num_rows == 2 and quarantine.num_rows == 0
    first = samples.to_pylist()[0]
    assert first["text"] == "hello world"
    assert json.loads(first["meta"]) == {"lang": "en", "n": 1}
    assert first["source_dataset"] == "ds" and first["source_version"] == 3
    assert first["source_path"] == "d.jsonl" and first["source_row"] == 0 and first["source_offset"] == 0
    assert first["source_uri"] == str(tmp_path / "d.jsonl")
    first_line = json.dumps({"text": "hello world", "lang": "en", "n": 1})
    assert samples.column("source_offset").to_pylist()[1] == len(first_line) + 1
    assert first["content_hash"] == content_hash("hello world")
    # one lineage record per sample, kept, with the source in detail
    assert lineage.num_rows == 2
    rec = lineage.to_pylist()[0]
    assert rec["verdict"] == "kept" and rec["operator"] == "convert"
    assert rec["detail"]["source"]["path"] == "d.jsonl" and rec["detail"]["source"]["row"] == 0


def test_sample_id_is_path_relative_and_stable_across_roots(tmp_path: Path) -> None:
    for root in ("tier-a/datasets/x", "tier-b/other/place"):
        write_jsonl(tmp_path / root / "part" / "f.jsonl", [{"text": "a"}, {"text": "b"}])
    ids_a = convert(tmp_path / "tier-a/datasets/x", "")[0].column("sample_id").to_pylist()
    ids_b = convert(tmp_path / "tier-b/other/place", "")[0].column("sample_id").to_pylist()
    assert ids_a == ids_b
    assert ids_a[1] == sample_id("ds", "pos:part/f.jsonl\x001")
    assert len(set(ids_a)) == 2


def test_id_field_gives_ids_from_the_record_key(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "f.jsonl", [{"id": "pkg", "text": "a"}, {"id": 7, "text": "b"}])
    samples = convert(tmp_path, "f.jsonl", id_field="id")[0]
    assert samples.column("sample_id").to_pylist() == [sample_id("ds", "id:pkg"), sample_id("ds", "id:7")]


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b'{"text": "ok", ', "invalid_json"),
        (b'{"text": "caf\xe9"}', "invalid_utf8"),
        (b'{"title": "no text"}', "missing_text_field"),
        (b'{"text": 42}', "text_not_string"),
        (b'{"text": null}', "text_not_string"),
        (b'{"text": "   "}', "empty_text"),
        (b'["not", "an", "object"]', "not_an_object"),
        (b'{"text": "' + b"x" * 200 + b'"}', "record_too_large"),
    ],
)
def test_bad_jsonl_records_go_to_quarantine(tmp_path: Path, line: bytes, reason: str) -> None:
    good = b'{"text": "fine"}\n'
    (tmp_path / "f.jsonl").write_bytes(good + line + b"\n" + good)
    samples, _, quarantine, _ = convert(tmp_path, "f.jsonl", max_record_bytes=100, quarantine_raw_bytes=16)
    assert samples.num_rows == 2
    assert samples.column("source_row").to_pylist() == [0, 2]
    (rec,) = quarantine.to_pylist()
    assert rec["reason"] == reason
    assert rec["source_row"] == 1 and rec["source_offset"] == len(good)
    assert rec["source_path"] == "f.jsonl" and rec["run_id"] == "run-1"
    assert rec["raw"] == line[:16] and rec["raw_size"] == (len(line) if reason != "record_too_large" else 101)
    assert rec["message"]


def test_missing_id_is_quarantined(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "f.jsonl", [{"id": "a", "text": "x"}, {"text": "y"}, {"id": {"x": 1}, "text": "z"}])
    samples, _, quarantine, _ = convert(tmp_path, "f.jsonl", id_field="id")
    assert samples.num_rows == 1
    assert quarantine.column("reason").to_pylist() == ["missing_id_field", "invalid_id"]


def test_blank_lines_are_counted_not_quarantined(tmp_path: Path) -> None:
    (tmp_path / "f.jsonl").write_text('{"text": "a"}\n\n   \n{"text": "b"}\n')
    samples, _, quarantine, stats = convert(tmp_path, "f.jsonl")
    assert samples.column("source_row").to_pylist() == [0, 3]
    assert quarantine.num_rows == 0 and stats["blank_lines"] == 2


def test_compressed_jsonl_gz_and_zst(tmp_path: Path) -> None:
    data = b'{"text": "one"}\n{"text": "two"}\n'
    (tmp_path / "a.jsonl.gz").write_bytes(gzip.compress(data))
    (tmp_path / "b.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(data))
    samples = convert(tmp_path, "*.jsonl.*")[0]
    assert samples.column("text").to_pylist() == ["one", "two", "one", "two"]
    assert samples.column("source_path").to_pylist() == ["a.jsonl.gz"] * 2 + ["b.jsonl.zst"] * 2


def test_truncated_gzip_keeps_earlier_records_and_other_files(tmp_path: Path) -> None:
    lines = b"".join(b'{"text": "record %d with some padding text"}\n' % i for i in range(2000))
    blob = gzip.compress(lines)
    (tmp_path / "a-broken.jsonl.gz").write_bytes(blob[: len(blob) // 2])
    write_jsonl(tmp_path / "b-ok.jsonl", [{"text": "survivor"}])
    samples, _, quarantine, _ = convert(tmp_path, "")
    by_file = samples.group_by("source_path").aggregate([("text", "count")]).to_pylist()
    counts = {r["source_path"]: r["text_count"] for r in by_file}
    assert 0 < counts["a-broken.jsonl.gz"] < 2000
    assert counts["b-ok.jsonl"] == 1
    (rec,) = quarantine.to_pylist()
    assert rec["reason"] == "corrupt_file" and rec["source_path"] == "a-broken.jsonl.gz"
    assert rec["source_row"] == counts["a-broken.jsonl.gz"]  # the first record it could not read
    assert "EOFError" in rec["message"] or "Error" in rec["message"]


def test_corrupt_parquet_file_is_quarantined_and_others_read(tmp_path: Path) -> None:
    (tmp_path / "a.parquet").write_bytes(b"PAR1 this is not parquet")
    pq.write_table(pa.table({"text": ["p1", None, "p3"], "score": [1.0, 2.0, 3.0]}), tmp_path / "b.parquet")
    samples, _, quarantine, _ = convert(tmp_path, "*.parquet")
    assert samples.column("text").to_pylist() == ["p1", "p3"]
    assert samples.column("source_row").to_pylist() == [0, 2]
    assert json.loads(samples.column("meta")[0].as_py()) == {"score": 1.0}
    assert sorted(quarantine.column("reason").to_pylist()) == ["corrupt_file", "text_not_string"]


def test_csv_with_custom_text_field_and_bad_rows(tmp_path: Path) -> None:
    (tmp_path / "f.csv").write_bytes(
        b'id,body,lang\n1,"multi\nline text",en\n2,short,en,extra\n3,caf\xe9,fr\n4,,en\n5,last,de\n'
    )
    samples, _, quarantine, _ = convert(tmp_path, "f.csv", text_field="body")
    assert samples.column("text").to_pylist() == ["multi\nline text", "last"]
    assert samples.column("source_row").to_pylist() == [0, 4]
    assert json.loads(samples.column("meta")[0].as_py()) == {"id": "1", "lang": "en"}
    assert quarantine.column("reason").to_pylist() == ["malformed_row", "invalid_utf8", "empty_text"]


def test_text_one_doc_per_file_and_per_line(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("first document\nwith two lines\n")
    (tmp_path / "docs" / "b.txt").write_bytes(b"bad \xff bytes")
    per_file, _, quarantine, _ = convert(tmp_path, "docs")
    assert per_file.column("text").to_pylist() == ["first document\nwith two lines\n"]
    assert quarantine.column("reason").to_pylist() == ["invalid_utf8"]
    per_line = convert(tmp_path, "docs/a.txt", text_mode="line")[0]
    assert per_line.column("text").to_pylist() == ["first document", "with two lines"]


def test_folder_and_glob_listing_is_sorted_and_relative(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "ds" / "z.jsonl", [{"text": "z"}])
    write_jsonl(tmp_path / "ds" / "sub" / "a.jsonl", [{"text": "a"}])
    (tmp_path / "ds" / "_SUCCESS").write_text("")
    paths = convert(tmp_path, "ds")[0].column("source_path").to_pylist()
    assert paths == ["sub/a.jsonl", "z.jsonl"]
    globbed = convert(tmp_path, "ds/**/*.jsonl")[0].column("source_path").to_pylist()
    assert globbed == ["sub/a.jsonl"]


def test_unknown_params_and_missing_input_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown parameter"):
        ConvertOperator({"text_feild": "x"})
    with pytest.raises(FileNotFoundError):
        plan_chunks(SourceSpec("ds", local_tier(tmp_path), "nothing-*.jsonl"), 1)
