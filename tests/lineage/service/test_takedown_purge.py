"""Purging a takedown on real Delta tables, a second local tier and a real Ceph bucket: after it no removed
text is left anywhere under any tier root, in any decoded Parquet value or statistic, Delta log entry
or other file; live data is untouched; the withdrawn release is a tombstone that no override reads."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

import storage.delta
from lineage import errors
from lineage.client import Client
from lineage.gc import collect_garbage
from lineage.settings import Settings, TierConfig
from operators.schema import sample_id
from storage.tier import Tier, get_tier
from tests.support.fixtures_ceph import CephS3
from tests.support.helpers import write_jsonl
from tests.support.training_export import train_tokenizer

MARKERS = ("zqxmarkalpha", "zqxmarkbeta", "zqxmarkgamma", "zqxmarkdelta")
KEEP = [
    "the quick brown fox jumps over the lazy dog near the river bank today",
    "a library for parsing command line options in small portable programs",
    "tools to convert image formats between png jpeg and webp quickly",
    "documentation for the standard c library with examples and manual pages",
]
GONE = [
    {
        "id": "o1",
        "text": "an opted out page about zqxmarkalpha kites and their strings",
        "url": "https://x/zqxmarkdelta",
    },
    {"id": "o2", "text": "another opted out document mentioning zqxmarkbeta gardens in spring"},
]


def _corpus(root: Path) -> Path:
    write_jsonl(root / "keep" / "a.jsonl", [{"id": f"k{i}", "text": t} for i, t in enumerate(KEEP)])
    path = write_jsonl(root / "optout" / "b.jsonl", GONE)
    with path.open("a") as fh:
        fh.write('{"id": "o3", "text": "a broken zqxmarkgamma line\n')  # bad JSON: quarantined with its raw bytes
    return root


def _pipeline(root: Path) -> dict:
    return {
        "name": "purge-test",
        "inputs": [{"dataset": "raw", "path": str(root), "id_field": "id"}],
        "operators": [
            {"name": "exact_dedupe"},
            {"name": "minhash_dedupe"},
            {"name": "quality", "params": {"min_words": 3}},
        ],
        "output": {"dataset": "clean", "owner": "t", "license": "CC0-1.0"},
    }


def _decoded(fs: pafs.FileSystem, path: str) -> str:
    """Everything a file says, decoded: Parquet values and footer statistics, gunzipped or raw bytes."""
    with fs.open_input_file(path) as fh:
        body = fh.read()
    if body[:4] == b"PAR1":
        with fs.open_input_file(path) as fh:
            parquet = pq.ParquetFile(fh)
            values = json.dumps(parquet.read().to_pylist(), default=repr)
            meta = parquet.metadata
            stats = [
                repr((meta.row_group(g).column(c).statistics or "").__str__())
                for g in range(meta.num_row_groups)
                for c in range(meta.num_columns)
            ]
        return values + "".join(stats)
    if body[:2] == b"\x1f\x8b":
        body = gzip.decompress(body)
    return body.decode("utf-8", errors="replace")


def _markers_under(tier: Tier) -> dict[str, list[str]]:
    """marker -> the files under the tier's root that still hold it."""
    found: dict[str, list[str]] = {}
    selector = pafs.FileSelector(tier.path(""), recursive=True, allow_not_found=True)
    for info in tier.filesystem.get_file_info(selector):
        if info.type != pafs.FileType.File:
            continue
        text = _decoded(tier.filesystem, info.path).lower()
        for marker in MARKERS:
            if marker in text:
                found.setdefault(marker, []).append(info.path)
    return found


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
            old.setattr(storage.delta, "UNINDEXED_COLUMNS", frozenset())  # texts in Delta statistics, as before
            c.run_pipeline(_pipeline(_corpus(tmp_path / "raw")))
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
        for marker, files in _markers_under(tier).items():
            before.setdefault(marker, []).extend(files)
    assert set(before) == set(MARKERS)  # the scan sees them: texts, meta, quarantine raw bytes, log statistics
    assert any("_delta_log" in f for f in before["zqxmarkalpha"])

    staged = settings.staging_dir / "a-killed-run" / "part.parquet"  # what a killed local run leaves behind
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

    left = {t.name: _markers_under(t) for t in tiers}
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
    assert {t.name: _markers_under(t) for t in tiers} == {t.name: {} for t in tiers}
    assert client.verify_release(done.successor, "local").state == "verified"
