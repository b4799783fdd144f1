"""The partition record protocol on real files: a record is trusted only when it is whole, names the same work
item and every file it names is there with its size and checksum; anything else is redone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.partitions import FOLDER, Partitions, TierPartitions, clear_scratch
from storage.tier import Tier, local_tier

KEY = "files:0:part-0.jsonl"


def _complete(parts: Partitions, index: int = 0) -> Path:
    tmp = parts.begin(index)
    (tmp / "samples").mkdir()
    (tmp / "samples" / "a.parquet").write_bytes(b"sample bytes")
    (tmp / "lineage.parquet").write_bytes(b"lineage bytes")
    parts.complete(index, KEY, {"samples": ["samples/a.parquet"], "lineage": ["lineage.parquet"]}, {"records": 3})
    return parts.root / str(index)


def test_a_completed_partition_is_reused_with_its_files_and_counters(tmp_path: Path) -> None:
    parts = Partitions(tmp_path)
    folder = _complete(parts)
    assert not (parts.root / "0.tmp").exists() and (parts.root / "0.json").exists()
    got = parts.reuse(0, KEY)
    assert got is not None and got.counters == {"records": 3}
    assert got.paths("samples") == [str(folder / "samples" / "a.parquet")] and got.paths("quarantine") == []


@pytest.mark.parametrize(
    "damage",
    ["same size, other bytes", "shorter", "file missing", "torn record", "record missing", "other format"],
)
def test_a_damaged_partition_is_not_trusted(tmp_path: Path, damage: str) -> None:
    parts = Partitions(tmp_path)
    folder = _complete(parts)
    staged, record = folder / "samples" / "a.parquet", parts.root / "0.json"
    if damage == "same size, other bytes":
        staged.write_bytes(b"sample bytez")
    elif damage == "shorter":
        staged.write_bytes(b"sample")
    elif damage == "file missing":
        staged.unlink()
    elif damage == "torn record":
        record.write_text(record.read_text()[:-5])
    elif damage == "record missing":
        record.unlink()
    else:
        record.write_text(json.dumps({**json.loads(record.read_text()), "format": 99}))
    assert parts.reuse(0, KEY) is None


def test_a_record_of_another_work_item_is_not_trusted(tmp_path: Path) -> None:
    parts = Partitions(tmp_path)
    _complete(parts)
    assert parts.reuse(0, "files:0:part-1.jsonl") is None and parts.reuse(1, KEY) is None


def test_files_without_a_record_are_never_trusted_and_begin_clears_them(tmp_path: Path) -> None:
    parts = Partitions(tmp_path)
    tmp = parts.begin(2)
    (tmp / "half.parquet").write_bytes(b"half")  # killed before the rename and the record
    assert parts.reuse(2, KEY) is None
    again = parts.begin(2)
    assert list(again.iterdir()) == []
    _complete(parts, 3)
    parts.begin(3)  # redoing a recorded partition drops its record first
    assert not (parts.root / "3.json").exists() and not (parts.root / "3").exists()


def test_clear_scratch_keeps_only_the_partitions(tmp_path: Path) -> None:
    parts = Partitions(tmp_path)
    _complete(parts)
    (tmp_path / "barrier-1").mkdir()
    (tmp_path / "barrier-1" / "dropped.parquet").write_bytes(b"x")
    (tmp_path / "stray.bin").write_bytes(b"x")
    clear_scratch(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == [FOLDER] and parts.reuse(0, KEY) is not None


# -- the rename-free protocol of Spark and Ray runs, on a POSIX tier and on real Ceph S3 -----------------
@pytest.fixture(params=["posix", "ceph"])
def tier(request: pytest.FixtureRequest, tmp_path: Path) -> Tier:
    return local_tier(tmp_path / "tier") if request.param == "posix" else request.getfixturevalue("ceph_tier")


def _put(tier: Tier, relative: str, data: bytes) -> None:
    tier.filesystem.create_dir(tier.path(relative.rsplit("/", 1)[0]), recursive=True)
    with tier.filesystem.open_output_stream(tier.path(relative)) as out:
        out.write(data)


def _read(tier: Tier, relative: str) -> bytes:
    with tier.filesystem.open_input_stream(tier.path(relative)) as fh:
        return fh.read()


def _record_on(tier: Tier, parts: TierPartitions, index: int = 0) -> str:
    folder = parts.attempt(index)
    _put(tier, f"{folder}/samples/parts/a.parquet", b"sample bytes")
    _put(tier, f"{folder}/lineage/parts/b.parquet", b"lineage bytes")
    files = {"samples": [f"{folder}/samples/parts/a.parquet"], "lineage": [f"{folder}/lineage/parts/b.parquet"]}
    parts.complete(index, KEY, files, {"rows.samples": 3})
    return folder


def test_a_tier_partition_is_reused_with_its_attempt_folder(tier: Tier) -> None:
    parts = TierPartitions(tier, "_staging/run-x")
    folder = _record_on(tier, parts)
    assert parts.reuse(0, "files:0:part-1.jsonl") is None and parts.reuse(1, KEY) is None
    got = parts.reuse(0, KEY)
    assert got is not None and got.counters == {"rows.samples": 3}
    assert got.paths("samples") == [f"{folder}/samples/parts/a.parquet"] and got.paths("quarantine") == []
    assert parts.written(0, KEY) == got and parts.recorded() == {0}
    assert TierPartitions(tier, "_staging/run-y").recorded() == set(), "no staging yet: nothing recorded"
    other = parts.attempt(0)
    _put(tier, f"{other}/samples/parts/a.parquet", b"half")  # a second attempt killed before its record
    assert other != folder and parts.reuse(0, KEY) == got, "files no record names change nothing"


@pytest.mark.parametrize("damage", ["same size, other bytes", "shorter", "file missing", "torn record", "no record"])
def test_a_damaged_tier_partition_is_not_trusted(tier: Tier, damage: str) -> None:
    parts = TierPartitions(tier, "_staging/run-x")
    folder = _record_on(tier, parts)
    staged, record = f"{folder}/samples/parts/a.parquet", f"{parts.root}/0.json"
    if damage == "same size, other bytes":
        _put(tier, staged, b"sample bytez")
    elif damage == "shorter":
        _put(tier, staged, b"sample")
    elif damage == "file missing":
        tier.filesystem.delete_file(tier.path(staged))
    elif damage == "torn record":
        _put(tier, record, _read(tier, record)[:-5])
    else:
        tier.filesystem.delete_file(tier.path(record))
    assert parts.reuse(0, KEY) is None
    if damage in ("torn record", "no record"):
        with pytest.raises(RuntimeError, match="record is missing or torn"):
            parts.written(0, KEY)
