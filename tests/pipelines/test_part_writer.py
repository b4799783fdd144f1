"""Row groups: the row cap, lowered for long rows by the byte cap."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from lineage.settings import TierConfig
from pipelines.parquet_out import PartWriter
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
