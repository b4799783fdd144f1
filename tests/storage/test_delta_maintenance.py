"""Releases survive the Delta maintenance data engineers run as routine: VACUUM and log cleanup.

Real tables from real pipeline runs, maintained with deltalake's own ``vacuum``,
``create_checkpoint`` and ``cleanup_metadata``. Time is moved forward the only way a test can:
the tables are made to look 60 days old (file times, and the times their log records), beyond
Delta's default retention (7 days for removed files, 30 days for the log).
"""

from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, Schema
from deltalake.transaction import AddAction, create_table_with_add_actions

import lineage
from lineage.catalog import Catalog
from lineage.client import Client
from lineage.gc import collect_garbage
from lineage.releases import get_release
from lineage.releases.replicas import copy_release
from lineage.settings import Settings, TierConfig
from operators.schema import sample_id
from storage.delta import (
    CHECKPOINT_INTERVAL,
    TABLE_PROPERTIES,
    commit_snapshot,
    describe_file,
    version_dataset,
    version_files,
)
from storage.tier import Tier, get_tier, local_tier
from tests.support.helpers import lineage_of, publish_records

AGE = timedelta(days=60)
# What an operator "tuning" a table would set, and what a table without properties gets anyway.
DELTA_DEFAULTS = {
    "delta.logRetentionDuration": "interval 30 days",
    "delta.deletedFileRetentionDuration": "interval 1 week",
}
_TIMES = (("commitInfo", "timestamp"), ("metaData", "createdTime"), ("add", "modificationTime"))
_TIMES += (("remove", "deletionTimestamp"),)


def age_table(root: Path, age: timedelta = AGE) -> None:
    """Make the table at ``root`` look ``age`` older: its log's recorded times and every file's mtime."""
    shift_ms, shift_s = int(age.total_seconds() * 1000), age.total_seconds()
    log_dir = root / "_delta_log"
    assert not list(log_dir.glob("*.checkpoint.parquet")), "only JSON commits are aged here"
    for commit in sorted(log_dir.glob("*.json")):
        actions = [json.loads(line) for line in commit.read_text().splitlines() if line.strip()]
        for action in actions:
            for kind, key in _TIMES:
                if action.get(kind, {}).get(key) is not None:
                    action[kind][key] -= shift_ms
        commit.write_text("".join(json.dumps(a) + "\n" for a in actions))
    for path in root.rglob("*"):
        if path.is_file():
            st = path.stat()
            os.utime(path, (st.st_atime - shift_s, st.st_mtime - shift_s))


def two_runs(tmp_path: Path, settings: Settings, catalog: Catalog) -> str:
    """Release ``d@v1`` (one record quarantined), then a second run overwrites every table: v1's files
    leave the latest snapshot."""
    settings.parquet_file_rows = 40
    first = [{"id": i, "text": f"first run, document {i}"} for i in range(100)] + [{"id": "no-text"}]
    ref = publish_records(tmp_path, settings, catalog, first, "d@v1")
    second = [{"id": i, "text": f"second run, document {i}"} for i in range(50, 130)]
    publish_records(tmp_path, settings, catalog, second, "d@v2")
    return ref


def pinned(settings: Settings, catalog: Catalog, ref: str) -> dict[str, tuple[Tier, str, int]]:
    with catalog.session() as s:
        dv = get_release(s, ref).dataset_version
        return {kind: (get_tier(dv.tier, settings), path, v) for kind, (path, v) in dv.pinned_tables.items()}


def rows(table: pa.Table) -> list[str]:
    return sorted(json.dumps(row, sort_keys=True, default=str) for row in table.to_pylist())


def what_a_release_reads(settings: Settings, catalog: Catalog, ref: str) -> dict[str, Any]:
    """Everything a user reads of a release: its samples through the training reader, each pinned
    Delta version's rows, and a sample's lineage through the service (DuckDB over the pinned tables)."""
    reader = lineage.open_release(ref, settings=settings, shuffle=False)
    out: dict[str, Any] = {"release": pa.Table.from_batches(list(reader))}
    for kind, (tier, path, version) in pinned(settings, catalog, ref).items():
        out[kind] = rows(version_dataset(tier, path, version).to_table())
    out["lineage_of_v1_only_sample"] = lineage_of(settings, sample_id("d", "id:3"), dataset="d").model_dump()
    return out


def test_vacuum_never_deletes_a_file_a_release_needs(tmp_path: Path, settings: Settings, catalog: Catalog) -> None:
    ref = two_runs(tmp_path, settings, catalog)
    before = what_a_release_reads(settings, catalog, ref)
    for tier, path, version in pinned(settings, catalog, ref).values():
        age_table(Path(tier.path(path)))
        table = DeltaTable(tier.uri(path))
        # the release's files are out of the latest snapshot: only the retention keeps them
        unenforced = table.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=True)
        assert {f["path"] for f in version_files(tier, path, version)} <= set(unenforced)
        assert table.vacuum(dry_run=False) == [], f"{path}: vacuum deleted files"
        assert table.vacuum(dry_run=False, full=True) == [], f"{path}: full vacuum deleted files"
        with pytest.raises(Exception, match="retention"):  # VACUUM ... RETAIN 168 HOURS is refused
            table.vacuum(retention_hours=7 * 24, dry_run=False)
    assert what_a_release_reads(settings, catalog, ref) == before


def test_log_cleanup_never_removes_a_version_a_release_pins(
    tmp_path: Path, settings: Settings, catalog: Catalog
) -> None:
    ref = two_runs(tmp_path, settings, catalog)
    before = what_a_release_reads(settings, catalog, ref)
    for tier, path, version in pinned(settings, catalog, ref).values():
        age_table(Path(tier.path(path)))
        table = DeltaTable(tier.uri(path))
        table.create_checkpoint()
        table.cleanup_metadata()
        assert DeltaTable(tier.uri(path), version=version).version() == version
    assert what_a_release_reads(settings, catalog, ref) == before


def _files(tier: Tier, n: int) -> list:
    os.makedirs(tier.path("t", f"run-{n}"))
    pq.write_table(pa.table({"n": [n]}), tier.path("t", f"run-{n}/part.parquet"))
    return [describe_file(tier, "t", f"run-{n}/part.parquet")]


def test_commits_write_checkpoints_and_every_version_outlives_log_cleanup(tmp_path: Path) -> None:
    tier = local_tier(tmp_path / "tier")
    schema = pa.schema([("n", pa.int64())])
    versions = [commit_snapshot(tier, "t", _files(tier, n), schema) for n in range(2 * CHECKPOINT_INTERVAL)]
    assert versions == list(range(2 * CHECKPOINT_INTERVAL))
    log_dir = tmp_path / "tier" / "t" / "_delta_log"
    checkpoints = sorted(p.name.split(".")[0] for p in log_dir.glob("*.checkpoint.parquet"))
    assert [int(c) for c in checkpoints] == [CHECKPOINT_INTERVAL - 1, 2 * CHECKPOINT_INTERVAL - 1]

    for path in log_dir.iterdir():  # the log looks old: cleanup may remove whatever retention allows
        os.utime(path, (path.stat().st_atime - AGE.total_seconds(), path.stat().st_mtime - AGE.total_seconds()))
    DeltaTable(tier.uri("t")).cleanup_metadata()
    for n in versions:
        assert version_dataset(tier, "t", n).to_table().column("n").to_pylist() == [n]


def test_a_table_written_without_the_properties_gets_them_at_its_next_commit(tmp_path: Path) -> None:
    tier = local_tier(tmp_path / "tier")
    schema = pa.schema([("n", pa.int64())])
    (legacy,) = _files(tier, 0)  # what older versions wrote: a table with no retention properties
    action = AddAction(legacy.path, legacy.size, {}, 0, True, json.dumps(legacy.stats))
    create_table_with_add_actions(tier.uri("t"), Schema.from_arrow(schema), [action])
    assert not set(TABLE_PROPERTIES) & set(DeltaTable(tier.uri("t")).metadata().configuration)

    version = commit_snapshot(tier, "t", _files(tier, 1), schema)
    assert TABLE_PROPERTIES.items() <= DeltaTable(tier.uri("t")).metadata().configuration.items()
    assert version_dataset(tier, "t", version).to_table().column("n").to_pylist() == [1]
    assert version_dataset(tier, "t", 0).to_table().column("n").to_pylist() == [0]


def test_gc_gives_retention_back_to_tables_that_lost_it(tmp_path: Path, settings: Settings, catalog: Catalog) -> None:
    """Dataset tables and release replicas whose retention was shortened get ours back from gc,
    and a release then survives vacuum and log cleanup after a later run."""
    settings.tiers.append(TierConfig(name="cold", kind="posix", root=str(tmp_path / "cold-tier"), tier_class="cold"))
    ref = publish_records(tmp_path, settings, catalog, [{"id": i, "text": f"doc {i}"} for i in range(60)], "d@v1")
    replica = copy_release(catalog, settings, ref, "cold")
    tables = {f"local:{path}": (tier, path) for tier, path, _ in pinned(settings, catalog, ref).values()}
    tables[f"cold:{replica.table_path}"] = (get_tier("cold", settings), replica.table_path)
    for tier, path in tables.values():
        table = DeltaTable(tier.uri(path))
        assert TABLE_PROPERTIES.items() <= table.metadata().configuration.items(), f"{path} was written without them"
        table.alter.set_table_properties(DELTA_DEFAULTS)

    assert sorted(collect_garbage(catalog, settings, dry_run=True).retention_set) == sorted(tables)
    assert sorted(collect_garbage(catalog, settings).retention_set) == sorted(tables)
    assert collect_garbage(catalog, settings).retention_set == []
    for tier, path in tables.values():
        assert TABLE_PROPERTIES.items() <= DeltaTable(tier.uri(path)).metadata().configuration.items()

    publish_records(tmp_path, settings, catalog, [{"id": i, "text": f"later {i}"} for i in range(40)], "d@v2")
    before = what_a_release_reads(settings, catalog, ref)
    for tier, path in tables.values():
        age_table(Path(tier.path(path)))
        table = DeltaTable(tier.uri(path))
        assert table.vacuum(dry_run=False, full=True) == []
        table.create_checkpoint()
        table.cleanup_metadata()
    assert what_a_release_reads(settings, catalog, ref) == before
    cold = version_dataset(get_tier("cold", settings), replica.table_path, 0).to_table()
    assert rows(cold) == before["data"]


def test_release_detail_names_each_table_and_pinned_version(
    tmp_path: Path, settings: Settings, catalog: Catalog
) -> None:
    ref = two_runs(tmp_path, settings, catalog)
    client = Client(settings=settings)
    try:
        tables = client.release(ref).tables
    finally:
        client.close()
    with catalog.session() as s:
        manifest = get_release(s, ref).manifest
    assert sorted(tables) == ["data", "lineage", "quarantine"]
    for kind, table in tables.items():
        assert (table.tier, table.table, table.delta_version) == (
            manifest["tier"],
            manifest[kind]["table"],
            manifest[kind]["delta_version"],
        )
    tier = get_tier(tables["data"].tier, settings)
    data = DeltaTable(tier.uri(tables["data"].table), version=tables["data"].delta_version)
    assert sorted(p.removeprefix(tier.uri(tables["data"].table) + "/") for p in data.file_uris()) == sorted(
        f["path"] for f in manifest["files"]
    )
    assert tables["data"].delta_version == 0 < DeltaTable(tier.uri(tables["data"].table)).version()


def test_free_text_columns_get_no_statistics_in_the_log(tmp_path: Path) -> None:
    """A statistic is a copy of a record's bytes that would outlive a purge of its file (issue #22):
    ``text`` and ``meta`` get none; the columns readers prune on keep theirs."""
    from storage.delta import describe_file
    from storage.tier import local_tier

    tier = local_tier(tmp_path, name="t")
    (tmp_path / "tbl").mkdir()
    pq.write_table(
        pa.table({"sample_id": ["a", "b"], "text": ["secret one", "secret two"], "meta": ["{}", "{}"]}),
        tmp_path / "tbl" / "f.parquet",
    )
    stats = describe_file(tier, "tbl", "f.parquet").stats
    assert stats["minValues"] == {"sample_id": "a"} and stats["maxValues"] == {"sample_id": "b"}
    assert "secret" not in json.dumps(stats)
