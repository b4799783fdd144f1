"""The content-only cut of sorted tables into part files (pipelines.engines.sorted_files)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import xxhash
from sqlalchemy import select

from lineage.catalog import Catalog, DatasetVersion
from lineage.runs import Runner
from lineage.settings import Settings, TierConfig
from operators.schema import sample_id
from pipelines.engines.base import TableTarget
from pipelines.engines.sorted_files import FILE, FILE_FIELD, Numbered, SortedFiles, file_count, file_of
from pipelines.spec import PipelineSpec
from storage.tier import Tier, get_tier
from tests.support import engine_corpus
from tests.support.part_files import part_files

IDS = pa.array(sorted(sample_id("src", f"id:{i}") for i in range(5000)))


def test_file_count_is_the_rows_over_the_file_size_rounded_up() -> None:
    assert [file_count(n, 30) for n in (0, 1, 29, 30, 31, 60, 61)] == [0, 1, 1, 1, 2, 2, 3]
    with pytest.raises(ValueError):
        file_count(5, 0)


def test_files_are_contiguous_ranges_of_the_id_order_of_about_equal_size() -> None:
    files = file_of(IDS, 10)
    assert (np.diff(files) >= 0).all(), "the file number grows with the id"
    assert set(files.tolist()) == set(range(10))
    sizes = np.bincount(files)
    assert sizes.min() > 400 and sizes.max() < 600, sizes  # 500 ± a few sqrt(500)
    assert (file_of(IDS, 10) == files).all()
    assert (file_of(IDS, 1) == 0).all()


def test_the_cut_is_at_the_id_prefix_boundaries() -> None:
    def at(prefix: int) -> str:
        return f"{prefix:08x}" + "0" * 24

    cut = -(-(2**32) // 3)  # the first prefix of file 1 of 3: ceil(2**32 / 3)
    ids = pa.array([at(0), at(cut - 1), at(cut), at(2**32 - 1)])
    assert file_of(ids, 3).tolist() == [0, 0, 1, 2]


def test_finer_buckets_nest_in_the_files() -> None:
    for files, per_file in ((3, 7), (10, 4), (1, 16)):
        assert (file_of(IDS, files * per_file) // per_file == file_of(IDS, files)).all()


@pytest.mark.parametrize("bad", ["", "0123abc", "ABCDEF0123456789", "zz" * 16])
def test_ids_that_are_not_lowercase_hex_digests_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="lowercase hex"):
        file_of(pa.array([sample_id("s", "k"), bad]), 4)


def _written(tmp_path: Path, table: pa.Table, batch_rows: int, settings: Settings) -> list[tuple[str, int, str]]:
    tier = Tier(TierConfig(name="t", kind="posix", root=str(tmp_path / str(batch_rows))))
    files = file_count(table.num_rows, settings.parquet_file_rows)
    out = SortedFiles(settings.execution(), TableTarget(tier, "table", "run"), table.schema, ("sample_id",))
    numbered = Numbered(files)(table).sort_by([(FILE, "ascending"), ("sample_id", "ascending")])
    for batch in numbered.to_batches(max_chunksize=batch_rows):
        out.write_numbered(batch)
    names = out.close()
    got = []
    for name in names:
        data = (tmp_path / str(batch_rows) / "table" / name).read_bytes()
        got.append((name, pq.ParquetFile(tmp_path / str(batch_rows) / "table" / name).metadata.num_rows, data))
    return [(n, rows, xxhash.xxh3_128_hexdigest(b)) for n, rows, b in got]


def test_the_same_rows_give_the_same_files_for_any_batching(tmp_path: Path, settings: Settings) -> None:
    settings.parquet_file_rows, settings.parquet_row_group_rows = 700, 64
    settings.parquet_row_group_bytes = 4000  # binds: rows of 20-200 bytes
    texts = [("w" * (20 + (i * 37) % 180)) for i in range(len(IDS))]
    table = pa.table({"sample_id": IDS, "text": pa.array(texts)})
    written = {rows: _written(tmp_path, table, rows, settings) for rows in (1, 7, 100, 5000)}
    assert written[7] == written[1] == written[100] == written[5000]
    files = written[1]
    assert len(files) == 8 and sum(rows for _, rows, _ in files) == len(IDS)
    first = [n.removeprefix("run/part-").removesuffix("-00000.parquet") for n, _, _ in files]
    assert first == sorted(first) and first[0] == IDS[0].as_py(), "each file is named after its first id"
    meta = pq.ParquetFile(tmp_path / "1" / "table" / files[0][0]).metadata
    groups = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    assert max(groups) < 64, "the byte cap cut the row groups"


def test_an_empty_table_has_no_files(tmp_path: Path, settings: Settings) -> None:
    tier = Tier(TierConfig(name="t", kind="posix", root=str(tmp_path)))
    schema = pa.schema([pa.field("sample_id", pa.string())])
    out = SortedFiles(settings.execution(), TableTarget(tier, "table", "run"), schema, ("sample_id",))
    out.write_numbered(schema.append(FILE_FIELD).empty_table())
    assert out.close() == [] and file_count(0, 10) == 0
    assert not (tmp_path / "table").exists()


def _version(catalog: Catalog, run_id: str) -> DatasetVersion:
    with catalog.session() as s:
        return s.scalars(select(DatasetVersion).where(DatasetVersion.run_id == run_id)).one()


def test_the_in_process_engine_cuts_the_same_files_whatever_its_sort_buckets(
    tmp_path: Path, settings: Settings, catalog: Catalog
) -> None:
    """Its final sorts split a table into finer buckets when it is larger than ``sort_bucket_bytes``
    and stream ``batch_rows`` at a time; neither moves a file boundary or a byte. A table of fewer
    rows than ``parquet_file_rows`` is one file."""
    raw = engine_corpus.build(tmp_path / "raw")
    spec = {"name": "cut", "inputs": [{"dataset": "raw", "path": str(raw), "id_field": "id"}]}
    spec |= {"operators": [{"name": "exact_dedupe"}]}
    settings.parquet_file_rows = 40
    got = {}
    for name, bucket_bytes, batch_rows in (("whole", 1 << 30, 4096), ("fine", 2000, 3)):
        settings.sort_bucket_bytes, settings.batch_rows = bucket_bytes, batch_rows
        outcome = Runner(settings, catalog).run(PipelineSpec.model_validate(spec | {"output": {"dataset": name}}))
        dv = _version(catalog, outcome.run_id)
        tier = get_tier(dv.tier, settings)
        data = part_files(tier, dv.data_path, dv.data_delta_version)
        lineage = part_files(tier, dv.lineage_path, dv.lineage_delta_version, checksums=False)
        got[name] = (outcome.row_count, data, lineage)
    rows, data, lineage = got["whole"]
    assert got["fine"] == got["whole"]
    assert len(data) == file_count(rows, 40) > 1 and sum(n for _, n, _ in data) == rows
    assert len(lineage) == file_count(sum(n for _, n, _ in lineage), 40)
    settings.parquet_file_rows = 10_000  # fewer rows than a file
    outcome = Runner(settings, catalog).run(PipelineSpec.model_validate(spec | {"output": {"dataset": "small"}}))
    dv = _version(catalog, outcome.run_id)
    small = part_files(get_tier(dv.tier, settings), dv.data_path, dv.data_delta_version)
    assert [(n, rows) for n, rows, _ in small] == [(data[0][0], rows)], "one file, named after the first id"
