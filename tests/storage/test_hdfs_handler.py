"""The HDFS backend without a cluster: URI parsing, path mapping, and the pyarrow handler driven
through pyarrow's own calling conventions against an in-memory hdfs-native stand-in."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
import xxhash
from deltalake import DeltaTable, write_deltalake

from lineage.settings import TierConfig
from storage.checksum import digest_stream
from storage.hdfs import HdfsHandler, HdfsLocation, hdfs_filesystem, parse_hdfs_uri
from storage.tier import Tier
from tests.support.fake_hdfs import FakeHdfsClient, real_client_over_fake


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("hdfs://nn:8020/data/x", HdfsLocation("hdfs", "nn:8020", "/data/x")),
        ("HDFS://NN:8020/data/", HdfsLocation("hdfs", "nn:8020", "/data")),
        ("hdfs://ns1/data", HdfsLocation("hdfs", "ns1", "/data")),
        ("hdfs:///data//x/.", HdfsLocation("hdfs", "", "/data/x")),
        ("hdfs://nn:8020", HdfsLocation("hdfs", "nn:8020", "/")),
        ("viewfs://cluster/a", HdfsLocation("viewfs", "cluster", "/a")),
        ("hdfs://[::1]:8020/a", HdfsLocation("hdfs", "[::1]:8020", "/a")),
    ],
)
def test_parse_hdfs_uri(uri: str, expected: HdfsLocation) -> None:
    assert parse_hdfs_uri(uri) == expected


@pytest.mark.parametrize(
    "uri",
    [
        "s3://b/x",
        "/data/x",
        "hdfs://nn:8020/a/../b",
        "hdfs://nn:8020/..",
        "hdfs://u:p@nn:8020/x",
        "hdfs://nn:99999/x",
        "hdfs://nn:port/x",
        "hdfs://:8020/x",
        "hdfs://nn/x?op=OPEN",
        "hdfs://nn/x#f",
    ],
)
def test_parse_hdfs_uri_refuses(uri: str) -> None:
    with pytest.raises(ValueError):
        parse_hdfs_uri(uri)


def test_client_url() -> None:
    assert parse_hdfs_uri("hdfs://nn:8020/x").client_url == "hdfs://nn:8020"
    assert parse_hdfs_uri("hdfs:///x").client_url is None  # hdfs-native then uses fs.defaultFS


@pytest.fixture
def fake() -> FakeHdfsClient:
    return FakeHdfsClient()


@pytest.fixture
def fs(fake: FakeHdfsClient) -> pafs.PyFileSystem:
    return pafs.PyFileSystem(HdfsHandler(fake, parse_hdfs_uri("hdfs://nn:8020/")))


def test_write_read_info(fs: pafs.FileSystem, fake: FakeHdfsClient) -> None:
    with fs.open_output_stream("/data/a/file.bin") as out:  # parents are created, like pyarrow's others
        out.write(b"hello ")
        out.write(b"hdfs")
    assert fake.files["/data/a/file.bin"] == b"hello hdfs"
    with fs.open_append_stream("/data/a/file.bin") as out:
        out.write(b"!")
    with fs.open_input_stream("hdfs://nn:8020/data/a/file.bin") as src:  # full URIs of the same namenode
        assert src.read() == b"hello hdfs!"
    with fs.open_input_file("/data/a/file.bin") as src:
        assert src.size() == 11
        src.seek(6)
        assert src.read(4) == b"hdfs"
    info = fs.get_file_info(["/data/a/file.bin", "/data/a", "/nope"])
    assert [i.type for i in info] == [pafs.FileType.File, pafs.FileType.Directory, pafs.FileType.NotFound]
    assert info[0].size == 11 and info[0].mtime is not None


def test_other_namenode_is_refused(fs: pafs.FileSystem) -> None:
    with pytest.raises(ValueError, match="another filesystem"):
        fs.get_file_info("hdfs://other:8020/data")


def test_selector_listing(fs: pafs.FileSystem) -> None:
    for name in ("/d/x.parquet", "/d/sub/y.parquet", "/d/sub/deeper/z.parquet", "/dx/not-mine"):
        with fs.open_output_stream(name) as out:
            out.write(b"1")
    flat = fs.get_file_info(pafs.FileSelector("/d"))
    assert sorted(i.path for i in flat) == ["/d/sub", "/d/x.parquet"]
    deep = fs.get_file_info(pafs.FileSelector("/d", recursive=True))
    assert sorted(i.path for i in deep if i.is_file) == [
        "/d/sub/deeper/z.parquet",
        "/d/sub/y.parquet",
        "/d/x.parquet",
    ]
    assert fs.get_file_info(pafs.FileSelector("/missing", allow_not_found=True)) == []
    with pytest.raises(FileNotFoundError):
        fs.get_file_info(pafs.FileSelector("/missing"))
    with pytest.raises(NotADirectoryError):
        fs.get_file_info(pafs.FileSelector("/d/x.parquet"))


def test_listing_outside_base_is_an_error(fs: pafs.FileSystem, fake: FakeHdfsClient) -> None:
    """A client returning a path outside the listed folder must not be trusted."""
    fake.mkdirs("/d", 0o755, True)
    fake.list_status = lambda path, recursive=False: [  # type: ignore[method-assign]
        type(fake.get_file_info("/d"))("/etc/passwd", 1, False, 0)
    ]
    with pytest.raises(OSError, match="outside"):
        fs.get_file_info(pafs.FileSelector("/d"))


def test_directories_and_deletes(fs: pafs.FileSystem, fake: FakeHdfsClient) -> None:
    fs.create_dir("/a/b/c", recursive=True)
    assert {"/a", "/a/b", "/a/b/c"} <= fake.dirs
    with pytest.raises(FileNotFoundError):
        fs.create_dir("/x/y", recursive=False)
    with fs.open_output_stream("/a/b/f") as out:
        out.write(b"x")
    with pytest.raises(IsADirectoryError):
        fs.delete_file("/a/b")
    with pytest.raises(NotADirectoryError):
        fs.delete_dir("/a/b/f")
    fs.delete_dir_contents("/a/b")
    assert fake.dirs >= {"/a/b"} and not [p for p in fake.files if p.startswith("/a/b/")]
    fs.delete_dir_contents("/gone", missing_dir_ok=True)
    with pytest.raises(FileNotFoundError):
        fs.delete_dir_contents("/gone")
    fs.delete_dir("/a")
    assert "/a" not in fake.dirs
    with pytest.raises(FileNotFoundError):
        fs.delete_file("/a/b/f")


def test_root_is_never_wiped(fs: pafs.FileSystem, fake: FakeHdfsClient) -> None:
    with fs.open_output_stream("/keep") as out:
        out.write(b"x")
    with pytest.raises(PermissionError):
        fs.delete_dir_contents("/")
    with pytest.raises(PermissionError):
        fs.delete_dir("/")
    assert "/keep" in fake.files


def test_move_and_copy(fs: pafs.FileSystem, fake: FakeHdfsClient) -> None:
    with fs.open_output_stream("/s/a") as out:
        out.write(b"A")
    with fs.open_output_stream("/s/b") as out:
        out.write(b"B")
    fs.copy_file("/s/a", "/s/c")
    assert fake.files["/s/c"] == b"A"
    fs.move("/s/a", "/s/b")  # an existing destination file is replaced
    assert fake.files["/s/b"] == b"A" and "/s/a" not in fake.files
    assert ("rename", "/s/a", "/s/b", "True") in fake.calls
    fs.create_dir("/t")
    fs.move("/s", "/t/s")
    assert fake.files["/t/s/b"] == b"A"
    with pytest.raises(FileNotFoundError):
        fs.move("/nope", "/t/x")


def test_parquet_and_dataset_through_handler(fs: pafs.FileSystem) -> None:
    table = pa.table({"id": list(range(100)), "s": [str(i) for i in range(100)]})
    pq.write_table(table, "/warehouse/t/part-0.parquet", filesystem=fs, row_group_size=10)
    assert pq.read_table("/warehouse/t/part-0.parquet", filesystem=fs).equals(table)
    ds = pads.dataset("/warehouse/t", filesystem=fs, format="parquet")
    assert ds.to_table(filter=pads.field("id") == 42).column("s").to_pylist() == ["42"]


def test_delta_version_read_through_handler(tmp_path: Path, fs: pafs.FileSystem) -> None:
    """A Delta table copied onto 'HDFS' is read back through the handler, version by version."""
    local = tmp_path / "t"
    write_deltalake(str(local), pa.table({"k": [1, 2]}))
    write_deltalake(str(local), pa.table({"k": [3]}), mode="append")
    pafs.copy_files(str(local), "/lineage/t", source_filesystem=pafs.LocalFileSystem(), destination_filesystem=fs)
    sub = pafs.SubTreeFileSystem("/lineage/t", fs)
    for version, keys in ((0, [1, 2]), (1, [1, 2, 3])):
        ds = DeltaTable(str(local), version=version).to_pyarrow_dataset(filesystem=sub)
        assert sorted(ds.to_table().column("k").to_pylist()) == keys


def test_checksum_through_handler(fs: pafs.FileSystem) -> None:
    data = os.urandom(300_000)
    with fs.open_output_stream("/c/blob") as out:
        out.write(data)
    digest = digest_stream(fs, "/c/blob", chunk_bytes=64 * 1024)
    assert (digest.hexdigest, digest.size) == (xxhash.xxh3_128_hexdigest(data), len(data))


def test_hdfs_tier_builds_hdfs_native_client() -> None:
    """The real hdfs-native client is constructed lazily (no connection is made until I/O)."""
    tier = Tier(TierConfig(name="h", kind="hdfs", root="hdfs://127.0.0.1:1/lineage"))
    fs = tier.filesystem
    assert isinstance(fs, pafs.PyFileSystem) and fs.type_name == "py::hdfs-native"
    assert fs.handler.equals(hdfs_filesystem("hdfs://127.0.0.1:1/other").handler)
    assert not fs.handler.equals(hdfs_filesystem("hdfs://127.0.0.2:1/lineage").handler)


def test_deltalake_knows_hdfs_scheme() -> None:
    """delta-rs routes hdfs:// to its HDFS store: the failure is a refused connection, not a scheme error."""
    with pytest.raises(OSError, match="(?i)hdfs") as err:
        DeltaTable("hdfs://127.0.0.1:1/lineage/t")
    assert "connection refused" in str(err.value).lower()


def test_real_hdfs_native_python_layer(tmp_path: Path) -> None:
    """pyarrow -> HdfsHandler -> the real hdfs_native.Client/FileReader/FileWriter/WriteOptions ->
    an in-memory Rust-core stand-in: checks the handler against the library's own wrappers."""
    client, raw = real_client_over_fake()
    fs = pafs.PyFileSystem(HdfsHandler(client, parse_hdfs_uri("hdfs://nn:8020/")))
    table = pa.table({"id": list(range(1000)), "s": [f"v{i}" for i in range(1000)]})
    pq.write_table(table, "/w/t/part-0.parquet", filesystem=fs, row_group_size=100)
    assert raw.files["/w/t/part-0.parquet"][:4] == b"PAR1"
    assert pq.read_table("/w/t/part-0.parquet", filesystem=fs).equals(table)
    ds = pads.dataset("/w/t", filesystem=fs, format="parquet")
    assert ds.to_table(filter=pads.field("id") == 777).column("s").to_pylist() == ["v777"]
    with fs.open_input_stream("/w/t/part-0.parquet") as src:
        whole = src.read()
    assert whole == raw.files["/w/t/part-0.parquet"]
    with fs.open_input_file("/w/t/part-0.parquet") as src:
        assert src.size() == len(whole)
        src.seek(len(whole) - 4)
        assert src.read() == b"PAR1"
    with fs.open_output_stream("/w/t/part-0.parquet") as out:  # overwrite, as pyarrow expects
        out.write(b"new")
    assert raw.files["/w/t/part-0.parquet"] == b"new"
    with fs.open_append_stream("/w/t/part-0.parquet") as out:
        out.write(b"+more")
    digest = digest_stream(fs, "/w/t/part-0.parquet", chunk_bytes=3)
    assert (digest.hexdigest, digest.size) == (xxhash.xxh3_128_hexdigest(b"new+more"), 8)
