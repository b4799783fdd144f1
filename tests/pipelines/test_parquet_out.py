"""Row groups: the row cap, lowered for long rows by the byte cap."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lineage.settings import TierConfig
from operators.schema import SAMPLE_SCHEMA
from pipelines.parquet_out import PartWriter, embeds_arrow_schema
from storage.tier import Tier

SCHEMA = pa.schema([("text", pa.string())])


def _row_groups(tmp_path: Path, texts: list[str], **caps: int) -> list[int]:
    tier = Tier(TierConfig(name="t", kind="posix", root=str(tmp_path)))
    writer = PartWriter(tier, "table", "run", SCHEMA, file_rows=10_000, **caps)
    for start in range(0, len(texts), 7):  # small input batches still give full row groups
        writer.write(pa.table({"text": texts[start : start + 7]}, schema=SCHEMA))
    (part,) = writer.close()
    meta = pq.ParquetFile(tmp_path / "table" / part).metadata
    return [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]


def test_row_cap_alone(tmp_path: Path) -> None:
    assert _row_groups(tmp_path, ["x"] * 250, row_group_rows=100) == [100, 100, 50]


def test_byte_cap_lowers_rows_for_long_documents(tmp_path: Path) -> None:
    groups = _row_groups(tmp_path, ["y" * 1000] * 250, row_group_rows=100, row_group_bytes=20_000)
    assert sum(groups) == 250
    assert max(groups) <= 20  # 1,004 bytes a row (text + offset) → 19 rows per 20 kB
    assert all(g >= 15 for g in groups[:-1])


def test_short_rows_keep_the_row_cap(tmp_path: Path) -> None:
    assert _row_groups(tmp_path, ["z"] * 250, row_group_rows=100, row_group_bytes=1_000_000) == [100, 100, 50]


def _written(tmp_path: Path, table: pa.Table) -> Path:
    tier = Tier(TierConfig(name="t", kind="posix", root=str(tmp_path)))
    writer = PartWriter(tier, "table", "run", table.schema, file_rows=10_000, row_group_rows=100)
    writer.write(table)
    (part,) = writer.close()
    return tmp_path / "table" / part


def test_flat_files_leave_the_string_layout_to_the_reader(tmp_path: Path) -> None:
    assert not embeds_arrow_schema(SAMPLE_SCHEMA)  # release data
    schema = pa.schema([pa.field("s", pa.string(), nullable=False), pa.field("n", pa.int64())])
    table = pa.table({"s": ["a", "b" * 40], "n": [1, None]}, schema=schema)
    path = _written(tmp_path, table)
    assert b"ARROW:schema" not in (pq.ParquetFile(path).metadata.metadata or {})
    assert pq.read_table(path).equals(table)  # the same types and nullability without it
    views = pq.ParquetFile(path, binary_type=pa.binary_view()).read()
    assert views.schema.field("s").type == pa.string_view()
    assert views.column("s").to_pylist() == ["a", "b" * 40]


def test_free_text_has_no_statistics_and_distinct_columns_no_dictionary(tmp_path: Path) -> None:
    """A Parquet min/max of ``text`` is a copy of a record's bytes (#22), and a dictionary of ids, hashes or
    texts is built only to be discarded: neither is written. Repeated columns keep their dictionary."""
    rows = 50
    table = pa.table(
        {
            "sample_id": [f"id-{i:04d}" for i in range(rows)],
            "text": [f"text number {i} zqxsecret" for i in range(rows)],
            "content_hash": [f"{i:032x}" for i in range(rows)],
            "source_dataset": ["raw"] * rows,
            "source_version": [1] * rows,
            "source_uri": ["file:///a.jsonl"] * rows,
            "source_path": ["a.jsonl"] * rows,
            "source_row": list(range(rows)),
            "source_offset": list(range(rows)),
            "meta": ['{"url": "https://example.org"}'] * rows,
        },
        schema=SAMPLE_SCHEMA,
    )
    group = pq.ParquetFile(_written(tmp_path, table)).metadata.row_group(0)
    columns = {group.column(i).path_in_schema: group.column(i) for i in range(group.num_columns)}
    assert not columns["text"].is_stats_set and not columns["meta"].is_stats_set
    assert columns["sample_id"].statistics.min == "id-0000"  # what key ranges and Delta statistics read
    for name in ("sample_id", "text", "content_hash", "meta"):
        assert "RLE_DICTIONARY" not in columns[name].encodings, name
    assert "RLE_DICTIONARY" in columns["source_dataset"].encodings


def test_zoned_types_and_schema_metadata_keep_the_arrow_schema(tmp_path: Path) -> None:
    zoned = pa.table({"at": pa.array([0], pa.timestamp("ms", tz="Asia/Shanghai"))})
    assert embeds_arrow_schema(zoned.schema)
    assert pq.read_table(_written(tmp_path / "zoned", zoned)).schema == zoned.schema  # not tz=UTC
    tagged = pa.table({"s": ["x"]}).replace_schema_metadata({"origin": "test"})
    assert embeds_arrow_schema(tagged.schema)
    assert pq.read_table(_written(tmp_path / "tagged", tagged)).schema.metadata == {b"origin": b"test"}


def test_files_are_whole_at_close_and_a_failed_write_is_raised(tmp_path: Path) -> None:
    """Files are written on the writer's own thread: close waits for them (every file readable, the rows
    in order across many files), and an error there (the table's folder is a file) reaches the caller."""
    tier = Tier(TierConfig(name="t", kind="posix", root=str(tmp_path)))
    writer = PartWriter(tier, "table", "run", SCHEMA, file_rows=30, row_group_rows=10)
    for start in range(0, 1000, 7):
        writer.write(pa.table({"text": [str(i) for i in range(start, min(start + 7, 1000))]}, schema=SCHEMA))
    parts = writer.close()
    assert len(parts) == 34
    rows = [t for part in parts for t in pq.read_table(tmp_path / "table" / part).column("text").to_pylist()]
    assert rows == [str(i) for i in range(1000)]

    (tmp_path / "blocked").write_text("a file where the table's folder would be")
    broken = PartWriter(tier, "blocked", "run", SCHEMA, file_rows=30, row_group_rows=10)
    with pytest.raises(OSError):  # the first error: not the failed writes that follow from it
        for _ in range(0, 1000, 7):
            broken.write(pa.table({"text": ["x"] * 7}, schema=SCHEMA))
        broken.close()
