"""The Ceph tier against a real RGW: pyarrow S3, deltalake with time travel, DuckDB over Arrow."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from storage.tier import Tier, TierPathError


def test_pyarrow_small_and_multipart_roundtrip(ceph_tier: Tier) -> None:
    fs = ceph_tier.filesystem
    small = b"hello ceph\n"
    big = os.urandom(3 << 20) * 7  # 21 MiB: pyarrow switches to a multipart upload
    with fs.open_output_stream(ceph_tier.path("raw/small.txt")) as out:
        out.write(small)
    with fs.open_output_stream(ceph_tier.path("raw/big.bin")) as out:
        out.write(big)
    with fs.open_input_stream(ceph_tier.path("raw/small.txt")) as src:
        assert src.read() == small
    with fs.open_input_file(ceph_tier.path("raw/big.bin")) as src:
        assert src.size() == len(big)
        src.seek(len(big) - 10)
        assert src.read() == big[-10:]
    listing = fs.get_file_info(pafs.FileSelector(ceph_tier.path("raw"), recursive=True))
    assert sorted(ceph_tier.relative(i.path) for i in listing) == ["raw/big.bin", "raw/small.txt"]


def test_parquet_through_tier_filesystem(ceph_tier: Tier) -> None:
    table = pa.table({"id": list(range(1000)), "text": [f"doc {i}" for i in range(1000)]})
    pq.write_table(table, ceph_tier.path("p/part-0.parquet"), filesystem=ceph_tier.filesystem)
    assert pq.read_table(ceph_tier.path("p"), filesystem=ceph_tier.filesystem).equals(table)


def test_tier_prefix_confines_objects(ceph_s3, ceph_tier: Tier) -> None:
    """Objects written through a tier land under its prefix, whatever their names look like."""
    fs = ceph_tier.filesystem
    # literal names for pyarrow: the AWS SDK percent-encodes them, RGW must not decode them to '..'
    names = ["a/b.txt", "%2e%2e/x", "a/%2E%2E/%2e%2e/y", "q?x=1", "frag#z", "sp ace"]
    for name in names:
        with fs.open_output_stream(ceph_tier.path(name)) as out:
            out.write(name.encode())
    prefix = ceph_tier.path()
    everything = ceph_s3.filesystem().get_file_info(pafs.FileSelector(ceph_s3.bucket, recursive=True))
    mine = sorted(i.path for i in everything if i.is_file and i.path.startswith(prefix + "/"))
    assert mine == sorted(ceph_tier.path(n) for n in names)
    assert not [i.path for i in everything if i.path.startswith(f"{ceph_s3.bucket}/x")]
    for name in names:
        with fs.open_input_stream(ceph_tier.path(name)) as src:
            assert src.read() == name.encode()
    for bad in ("../x", "a/../../x", "/lineage-test/x", "a\\..\\..\\x"):
        with pytest.raises(TierPathError):
            ceph_tier.path(bad)


def test_deltalake_addresses_literal_names_through_the_tier_uri(ceph_tier: Tier) -> None:
    """A URL parser would cut at '?'/'#' or decode '%': through `Tier.uri` deltalake writes and
    reads exactly the objects pyarrow names literally, inside the tier's prefix. (A name holding
    '%' plus two hex digits is escaped correctly too, but delta-rs 1.x decodes such a table path
    twice when it reads it back; table paths are dataset names, which never contain '%'.)"""
    fs, opts = ceph_tier.filesystem, ceph_tier.storage_options
    for name in ("q?x=1", "frag#z", "50%", "sp ace", "日本語"):
        uri = ceph_tier.uri(name, "t")
        write_deltalake(uri, pa.table({"k": [1, 2]}), storage_options=opts)
        log_dir = fs.get_file_info(pafs.FileSelector(ceph_tier.path(name, "t", "_delta_log")))
        assert [i.base_name for i in log_dir] == ["00000000000000000000.json"]
        table = DeltaTable(uri, storage_options=opts)
        assert table.to_pyarrow_dataset(filesystem=ceph_tier.subtree(name, "t")).to_table().num_rows == 2
        assert all(ceph_tier.relative(u).startswith(f"{name}/t/part-") for u in table.file_uris())


def test_deltalake_write_and_time_travel(ceph_tier: Tier) -> None:
    uri, opts = ceph_tier.uri("releases/r1"), ceph_tier.storage_options
    v0 = pa.table({"k": [1, 2, 3], "v": ["a", "b", "c"]})
    v1 = pa.table({"k": [4, 5], "v": ["d", "e"]})
    write_deltalake(uri, v0, storage_options=opts)
    write_deltalake(uri, v1, mode="append", storage_options=opts)
    write_deltalake(uri, v1, mode="overwrite", storage_options=opts)

    latest = DeltaTable(uri, storage_options=opts)
    assert latest.version() == 2
    history = latest.history()
    assert [h["version"] for h in history] == [2, 1, 0]
    assert [h["operationParameters"]["mode"] for h in history] == ["Overwrite", "Append", "ErrorIfExists"]
    sub = ceph_tier.subtree("releases/r1")
    rows = {
        v: sorted(DeltaTable(uri, version=v, storage_options=opts).to_pyarrow_dataset(filesystem=sub)
                  .to_table().column("k").to_pylist())
        for v in (0, 1, 2)
    }  # fmt: skip
    assert rows == {0: [1, 2, 3], 1: [1, 2, 3, 4, 5], 2: [4, 5]}
    # the log really is on RGW, under the tier's prefix
    log_files = ceph_tier.filesystem.get_file_info(pafs.FileSelector(ceph_tier.path("releases/r1/_delta_log")))
    assert sorted(i.base_name for i in log_files if i.base_name.endswith(".json")) == [
        f"{n:020d}.json" for n in range(3)
    ]


def test_duckdb_over_delta_version_on_ceph(ceph_tier: Tier) -> None:
    uri, opts = ceph_tier.uri("releases/lookup"), ceph_tier.storage_options
    keys = list(range(5000))
    write_deltalake(uri, pa.table({"k": keys, "doc": [f"d{k}" for k in keys]}), storage_options=opts)
    write_deltalake(uri, pa.table({"k": [10_000], "doc": ["late"]}), mode="append", storage_options=opts)

    ds = DeltaTable(uri, version=0, storage_options=opts).to_pyarrow_dataset(
        filesystem=ceph_tier.subtree("releases/lookup")
    )
    con = duckdb.connect()
    con.register("v0", ds)
    assert con.sql("select doc from v0 where k = ?", params=[4242]).fetchall() == [("d4242",)]
    assert con.sql("select count(*), max(k) from v0").fetchall() == [(5000, 4999)]  # v0: no late row
    ds1 = DeltaTable(uri, version=1, storage_options=opts).to_pyarrow_dataset(
        filesystem=ceph_tier.subtree("releases/lookup")
    )
    con.register("v1", ds1)
    assert con.sql("select count(*), max(k) from v1").fetchall() == [(5001, 10_000)]


def test_wrong_credentials_are_rejected(ceph_s3) -> None:
    """The gateway really authenticates (so the passing tests above prove the keys are used)."""
    fs = pafs.S3FileSystem(
        access_key=ceph_s3.access_key,
        secret_key="not-the-secret",
        endpoint_override=ceph_s3.endpoint.removeprefix("http://"),
        scheme="http",
        region=ceph_s3.region,
    )
    with pytest.raises(OSError, match="(?i)signature|denied|403"):
        fs.get_file_info(pafs.FileSelector(ceph_s3.bucket))


def test_tier_filesystem_handles_rgw_checksum_quirk(ceph_tier: Tier) -> None:
    """In a fresh process *without* AWS_REQUEST_CHECKSUM_CALCULATION, a multipart upload through
    the tier's filesystem still works: the backend sets it (RGW answers HTTP 411 otherwise)."""
    script = textwrap.dedent(
        """
        import sys
        from lineage.settings import TierConfig
        from storage.tier import Tier
        tier = Tier(TierConfig.model_validate_json(sys.argv[1]))
        with tier.filesystem.open_output_stream(tier.path("fresh/big.bin")) as out:
            out.write(b"z" * (12 << 20))
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "AWS_REQUEST_CHECKSUM_CALCULATION"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    res = subprocess.run(
        [sys.executable, "-c", script, ceph_tier.config.model_dump_json(by_alias=True)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert ceph_tier.filesystem.get_file_info(ceph_tier.path("fresh/big.bin")).size == 12 << 20
