"""Purging a takedown on real Delta tables, a second local tier and a real Ceph bucket: after it no removed
text is left anywhere under any tier root, in any decoded Parquet value or statistic, Delta log entry
or other file; live data is untouched; the withdrawn release is a tombstone that no override reads."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

import pipelines.parquet_out
import storage.delta
from lineage import errors
from lineage.client import Client
from lineage.gc import collect_garbage
from lineage.settings import Settings, TierConfig
from operators.schema import sample_id
from storage.tier import get_tier
from tests.support.fixtures_ceph import CephS3
from tests.support.takedowns import GONE, KEEP, MARKERS, corpus, markers_under, pipeline
from tests.support.training_export import train_tokenizer


@pytest.fixture(scope="module")
def tokenizer_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return train_tokenizer(tmp_path_factory.mktemp("tok") / "tokenizer.json")


@pytest.fixture(params=["local", "ceph"])
def world(
    request: pytest.FixtureRequest, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Client, str]]:
    """clean@v1 on the default tier with a verified replica on a second one (a local folder, or a real Ceph
    bucket) and a Megatron export, written as a catalog from before free-text statistics were dropped."""
    if request.param == "ceph":
        ceph: CephS3 = request.getfixturevalue("ceph_s3")
        settings.tiers.append(ceph.tier_config(name="second"))
    else:
        settings.tiers.append(TierConfig(name="second", kind="posix", root=str(tmp_path / "second")))
    settings.parquet_file_rows = 1  # a file per sample: most files hold none of the removed ones
    with Client(settings=settings) as c:
        with monkeypatch.context() as old:
            # texts in Parquet and Delta statistics, as files and logs written before #22 hold them
            old.setattr(pipelines.parquet_out, "UNINDEXED_COLUMNS", frozenset())
            old.setattr(storage.delta, "UNINDEXED_COLUMNS", frozenset())
            c.run_pipeline(pipeline(corpus(tmp_path / "raw")))
            c.create_release("clean@v1")
            c.copy_release("clean@v1", "second")
        c.export_release(
            "clean@v1", "exports/clean", "megatron", tokenizer=request.getfixturevalue("tokenizer_file"), tier="local"
        )
        yield c, request.param


def test_purge_leaves_no_removed_text_under_any_tier_and_keeps_live_data(world: tuple[Client, str]) -> None:
    client, _kind = world
    settings = client.service.settings
    tiers = [get_tier(t.name, settings) for t in settings.tiers]
    before: dict[str, list[str]] = {}
    for tier in tiers:
        for marker, files in markers_under(tier).items():
            before.setdefault(marker, []).extend(files)
    assert set(before) == set(MARKERS)  # the scan sees them: texts, meta, quarantine raw bytes, log statistics
    assert any("_delta_log" in f for f in before["zqxmarkalpha"])

    staged = settings.staging_dir / str(uuid.uuid4()) / "part.parquet"  # what a killed local run leaves behind
    staged.parent.mkdir(parents=True)
    pq.write_table(pa.table({"text": [GONE[0]["text"]]}), staged)

    request = client.create_takedown({"source": {"dataset": "raw", "path": "optout/*"}}, kind="copyright", reason="x")
    applied = client.apply_takedown(request.id, purge=True)
    (done,) = applied.successors
    purged = applied.purge
    assert purged is not None and purged.request.state == "purged"
    assert sorted(purged.successors_verified) == sorted(f"{t}:{done.successor}" for t in ("local", "second"))
    assert purged.files_deleted["local"] > 0 and purged.files_deleted["second"] > 0
    assert purged.quarantine_rows == 1 and purged.signature_rows == 2 and purged.samples == 2
    assert purged.versions_tombstoned == ["clean:v1"] and len(purged.exports_purged) == 1
    assert purged.log_files_rewritten > 0
    assert purged.files_deleted["staging"] == 1 and not staged.parent.exists()

    left = {t.name: markers_under(t) for t in tiers}
    assert left == {t.name: {} for t in tiers}

    # the successor is whole and verified on both tiers, its quarantine without the purged record
    from lineage.reader import open_release

    rows = list(open_release(done.successor, settings=settings, as_dicts=True))
    assert sorted(r["text"] for r in rows) == sorted(KEEP)
    for tier in ("local", "second"):
        assert client.verify_release(done.successor, tier).state == "verified"
    assert client.get_version("clean", done.version).quarantine_count == 0

    # the withdrawn release is a tombstone: its record stays, no override reads it
    old = client.get_release("clean@v1")
    assert old.state == "withdrawn" and old.successor == done.successor
    assert client.get_manifest("clean@v1").row_count == len(KEEP) + 2
    assert client.get_quality("clean@v1").report is not None  # the QC report stays
    assert client.get_manifest(done.successor).quarantine.delta_version > 0  # repointed without the record
    assert client.get_quality(done.successor).report is not None
    with pytest.raises(errors.DataPurged, match=f"use its successor {done.successor}"):
        open_release("clean@v1", settings=settings, override_reason="legal hold")
    with pytest.raises(errors.DataPurged):
        client.export_release("clean@v1", "/tmp/never", override_reason="legal hold")
    with pytest.raises(errors.DataPurged, match="deleted by takedown request"):
        client.export_sequence(purged.exports_purged[0], 0)
    assert client.sample_lineage(sample_id("raw", "id:o1")).versions  # lineage is kept

    assert {r.state for r in client.list_replicas("clean@v1")} == {"removed"}  # placement has nothing to move

    # again: nothing to delete; gc and Delta's own maintenance neither bring bytes back nor delete what the
    # successor needs
    again = client.purge_takedown(request.id)
    assert again.files_deleted == {} and again.request.state == "purged"
    collect_garbage(client.service.catalog, settings)
    local = get_tier("local", settings)
    table = DeltaTable(local.uri("datasets/clean/data"), storage_options=local.storage_options)
    table.optimize.compact()
    table.vacuum(dry_run=False)
    table.cleanup_metadata()
    client.apply_placement()
    assert {t.name: markers_under(t) for t in tiers} == {t.name: {} for t in tiers}
    assert client.verify_release(done.successor, "local").state == "verified"
