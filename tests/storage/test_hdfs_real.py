"""Against a real HDFS cluster, only when ``LINEAGE_TEST_HDFS_URI`` names a scratch folder
(e.g. ``hdfs://namenode:8020/tmp/lineage-test``). These are the only storage tests that skip.

Optional: ``LINEAGE_TEST_HDFS_OPTIONS`` as JSON Hadoop config (e.g. HA nameservice keys).
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.fs as pafs
import pytest
import xxhash
from deltalake import DeltaTable, write_deltalake

from lineage.settings import TierConfig
from storage.checksum import file_digest
from storage.tier import Tier

HDFS_URI = os.environ.get("LINEAGE_TEST_HDFS_URI")

pytestmark = [
    pytest.mark.hdfs,
    pytest.mark.skipif(not HDFS_URI, reason="set LINEAGE_TEST_HDFS_URI to a scratch HDFS folder to run"),
]


@pytest.fixture
def hdfs_tier() -> Iterator[Tier]:
    options = json.loads(os.environ.get("LINEAGE_TEST_HDFS_OPTIONS", "{}"))
    root = f"{HDFS_URI.rstrip('/')}/t-{uuid.uuid4().hex[:12]}"
    tier = Tier(TierConfig(name="hdfs", kind="hdfs", root=root, tier_class="cold", options=options))
    tier.filesystem.create_dir(tier.path(), recursive=True)
    yield tier
    tier.filesystem.delete_dir(tier.path())


def test_pyarrow_roundtrip_on_hdfs(hdfs_tier: Tier) -> None:
    fs, data = hdfs_tier.filesystem, os.urandom(3 << 20)
    with fs.open_output_stream(hdfs_tier.path("raw/blob.bin")) as out:
        out.write(data)
    with fs.open_input_file(hdfs_tier.path("raw/blob.bin")) as src:
        assert src.size() == len(data)
        src.seek(len(data) - 5)
        assert src.read() == data[-5:]
    listing = fs.get_file_info(pafs.FileSelector(hdfs_tier.path(), recursive=True))
    assert [hdfs_tier.relative(i.path) for i in listing if i.is_file] == ["raw/blob.bin"]
    digest = file_digest(hdfs_tier, "raw/blob.bin")
    assert (digest.hexdigest, digest.size) == (xxhash.xxh3_128_hexdigest(data), len(data))


def test_deltalake_time_travel_on_hdfs(hdfs_tier: Tier) -> None:
    uri, opts = hdfs_tier.uri("releases/r"), hdfs_tier.storage_options
    write_deltalake(uri, pa.table({"k": [1, 2]}), storage_options=opts)
    write_deltalake(uri, pa.table({"k": [3]}), mode="append", storage_options=opts)
    assert DeltaTable(uri, storage_options=opts).version() == 1
    for version, keys in ((0, [1, 2]), (1, [1, 2, 3])):
        ds = DeltaTable(uri, version=version, storage_options=opts).to_pyarrow_dataset(
            filesystem=hdfs_tier.subtree("releases/r")
        )
        assert sorted(ds.to_table().column("k").to_pylist()) == keys
