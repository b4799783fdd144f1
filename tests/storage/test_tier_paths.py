"""Tier configuration, addressing and path confinement (pure unit tests plus a real POSIX tier)."""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from lineage.errors import ConfigError
from lineage.settings import Settings, TierConfig
from storage.tier import Tier, TierPathError, confine, confine_for_uri, get_tier, local_tier

ESCAPES = [
    "..",
    "../x",
    "a/../../x",
    "a/b/../../../x",
    "a/..",  # stays inside, but '..' is refused everywhere (clients disagree on resolving it)
    "./../x",
    "a//../../x",
    "/etc/passwd",
    "//server/share",
    "..\\x",
    "a\\..\\..\\x",
    "a/\x00/b",
    "a\nb",
    "a/../",
    "../",
]

URI_ONLY_ESCAPES = [
    "%2e%2e/x",
    "%2E%2E/%2e%2e/x",
    "a/%2e%2e/%2e%2e/x",
    "%252e%252e/x",
    "a%2f..%2fx",
    "a?b",
    "a#b",
]


@pytest.mark.parametrize("bad", ESCAPES)
def test_confine_refuses_escapes(bad: str) -> None:
    with pytest.raises(TierPathError):
        confine(bad)


@pytest.mark.parametrize("bad", URI_ONLY_ESCAPES)
def test_uri_refuses_percent_and_url_syntax(bad: str) -> None:
    """A URL parser decodes %2e%2e to '..'; pyarrow keeps it literally (see the RGW test). A
    configured s3/hdfs root is used verbatim in URIs, so it may not contain these."""
    assert confine(bad)  # fine as a literal object/file name
    with pytest.raises(TierPathError):
        confine_for_uri(bad)


@pytest.mark.parametrize(
    ("raw", "norm"),
    [
        ("", ""),
        (".", ""),
        ("a", "a"),
        ("a/b/c.parquet", "a/b/c.parquet"),
        ("a//b/", "a/b"),
        ("./a/./b", "a/b"),
        ("...", "..."),  # a plain name, not a parent reference
        ("a/..b/c..", "a/..b/c.."),
        ("～/．．/x", "～/．．/x"),  # full-width look-alikes are literal names, not '..'
        ("k=v/part-0.parquet", "k=v/part-0.parquet"),
        ("~/x", "~/x"),  # never expanded: always below the root
    ],
)
def test_confine_normalises(raw: str, norm: str) -> None:
    assert confine(raw) == norm


def test_confine_refuses_non_strings() -> None:
    with pytest.raises(TierPathError):
        confine(None)  # type: ignore[arg-type]


def _s3_tier(root: str = "s3://bucket/releases") -> Tier:
    return Tier(
        TierConfig(
            name="ceph",
            kind="s3",
            root=root,
            options={"endpoint": "http://127.0.0.1:7480"},
            credentials_env={"access_key": "T_AK", "secret_key": "T_SK"},
        )
    )


def test_s3_addressing() -> None:
    tier = _s3_tier("s3a://bucket/releases/")
    assert tier.uri() == "s3://bucket/releases"
    assert tier.uri("ds", "v1") == "s3://bucket/releases/ds/v1"
    assert tier.path("ds/v1/part-0.parquet") == "bucket/releases/ds/v1/part-0.parquet"
    assert tier.relative("s3://bucket/releases/ds/v1") == "ds/v1"
    assert tier.relative("s3a://bucket/releases/ds/v1/") == "ds/v1"
    assert tier.relative("bucket/releases/ds") == "ds"
    assert tier.relative("s3://bucket/releases") == ""
    assert tier.relative("s3://bucket/releases/a%20b") == "a b"  # URIs are percent-decoded once
    for outside in (
        "s3://bucket/releases-old/x",
        "s3://other/releases/x",
        "bucket/releasesx",
        "s3://bucket/releases/../x",
        "s3://bucket/releases/%2e%2e/x",
        "s3://bucket/releases/a/%2E%2E/%2e%2e/x",
        "bucket/releases/a/../../x",
    ):
        with pytest.raises(TierPathError):
            tier.relative(outside)


@pytest.mark.parametrize(
    "name", ["50%.jsonl", "a#b.jsonl", "a?b=1.jsonl", "sp ace/日本語.jsonl", "%2e%2e/x", "%252e%252e/x"]
)
def test_uri_percent_encodes_names_a_url_parser_would_misread(name: str) -> None:
    """'%', '?', '#', spaces and non-ASCII are literal in pyarrow paths; in a URI they are escaped
    once, so a URL parser (deltalake's) decodes back exactly the name pyarrow uses."""
    hdfs = Tier(TierConfig(name="h", kind="hdfs", root="hdfs://nn:8020/warehouse"))
    for tier in (_s3_tier(), hdfs):
        uri = tier.uri("raw", name)
        parsed = urllib.parse.urlsplit(uri)
        assert (parsed.query, parsed.fragment) == ("", "")
        assert urllib.parse.unquote(parsed.path) == "/" + tier.path("raw", name).split("/", 1)[1]
        assert tier.relative(uri) == f"raw/{name}"
        assert tier.path("raw", name).endswith(f"raw/{name}")  # pyarrow gets the literal name


def test_uri_keeps_path_characters_readable(tmp_path: Path) -> None:
    assert _s3_tier().uri("k=v/part-0+1.parquet") == "s3://bucket/releases/k=v/part-0+1.parquet"
    posix = local_tier(tmp_path)  # a posix tier's URI is its plain local path: nothing to escape
    assert posix.uri("50% a#b?.jsonl") == posix.path("50% a#b?.jsonl") == f"{tmp_path.resolve()}/50% a#b?.jsonl"


def test_bucket_level_s3_root() -> None:
    tier = _s3_tier("s3://bucket")
    assert tier.path() == "bucket" and tier.path("x") == "bucket/x"
    assert tier.uri("x") == "s3://bucket/x"


def test_parts_are_checked_one_by_one() -> None:
    tier = _s3_tier()
    assert tier.path("a", "", "b") == "bucket/releases/a/b"
    for parts in (("a", "/etc"), ("a", ".."), ("a/b", "../../.."), ("..", "a")):
        with pytest.raises(TierPathError):
            tier.path(*parts)
        with pytest.raises(TierPathError):
            tier.uri(*parts)


@pytest.mark.parametrize(
    ("kind", "root"),
    [
        ("s3", "/local/path"),
        ("s3", "http://bucket/x"),
        ("s3", "s3://Bad_Bucket/x"),
        ("s3", "s3://bucket/a/../b"),
        ("s3", "s3://bucket/a%2e%2e"),
        ("s3", "s3://bucket/x?versionId=1"),
        ("hdfs", "s3://bucket/x"),
        ("hdfs", "hdfs://nn:8020/a/../b"),
        ("hdfs", "hdfs://user@nn:8020/x"),
        ("hdfs", "hdfs://nn:notaport/x"),
        ("posix", "s3://bucket/x"),
        ("posix", "hdfs://nn/x"),
    ],
)
def test_malformed_roots_fail_at_construction(kind: str, root: str) -> None:
    with pytest.raises(ConfigError):
        Tier(TierConfig(name="t", kind=kind, root=root))


def test_hdfs_addressing() -> None:
    tier = Tier(TierConfig(name="hdfs", kind="hdfs", root="hdfs://namenode:8020/warehouse/lineage/"))
    assert tier.uri("ds/v1") == "hdfs://namenode:8020/warehouse/lineage/ds/v1"
    assert tier.path("ds/v1") == "/warehouse/lineage/ds/v1"
    assert tier.relative("hdfs://namenode:8020/warehouse/lineage/ds") == "ds"
    assert tier.relative("/warehouse/lineage/ds") == "ds"
    with pytest.raises(TierPathError):
        tier.relative("/warehouse/other")
    ha = Tier(TierConfig(name="ha", kind="hdfs", root="hdfs://ns1/data"))
    assert (ha.uri("x"), ha.path("x")) == ("hdfs://ns1/data/x", "/data/x")
    default_fs = Tier(TierConfig(name="d", kind="hdfs", root="hdfs:///data"))
    assert (default_fs.uri("x"), default_fs.path("x")) == ("hdfs:///data/x", "/data/x")
    root_only = Tier(TierConfig(name="r", kind="hdfs", root="hdfs://nn:8020"))
    assert (root_only.uri("x"), root_only.path("x"), root_only.path()) == ("hdfs://nn:8020/x", "/x", "/")


def test_posix_addressing(tmp_path: Path) -> None:
    tier = local_tier(tmp_path / "cfs")
    root = str((tmp_path / "cfs").resolve())
    assert tier.path("a/b") == tier.uri("a/b") == f"{root}/a/b"
    assert tier.relative(f"file://{root}/a/b") == "a/b"
    assert Tier(TierConfig(name="f", kind="posix", root=f"file://{root}/")).path("x") == f"{root}/x"
    with pytest.raises(TierPathError):
        tier.relative(f"{root}/../etc")
    with pytest.raises(TierPathError):
        tier.relative(f"{root}x/y")


def test_posix_tier_reads_writes_and_time_travels(tmp_path: Path) -> None:
    """The real POSIX backend: pyarrow I/O and a Delta table with time travel under the root."""
    tier = local_tier(tmp_path / "cfs")
    fs = tier.filesystem
    fs.create_dir(tier.path("raw"), recursive=True)
    pq.write_table(pa.table({"x": [1, 2]}), tier.path("raw/50%.parquet"), filesystem=fs)
    assert (tmp_path / "cfs" / "raw" / "50%.parquet").exists()  # literal name, no decoding
    write_deltalake(tier.uri("t"), pa.table({"x": [1]}), storage_options=tier.storage_options)
    write_deltalake(tier.uri("t"), pa.table({"x": [2]}), mode="append", storage_options=tier.storage_options)
    v0 = DeltaTable(tier.uri("t"), version=0).to_pyarrow_dataset(filesystem=tier.subtree("t"))
    assert v0.to_table().column("x").to_pylist() == [1]
    assert sorted(tier.relative(u) for u in DeltaTable(tier.uri("t")).file_uris()) == sorted(
        f"t/{i.base_name}" for i in fs.get_file_info(pafs.FileSelector(tier.path("t"))) if i.is_file
    )
    assert not list(tmp_path.glob("*.parquet"))  # nothing written beside the root


def test_storage_options_and_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("T_AK", "access")
    monkeypatch.setenv("T_SK", "secret")
    opts = _s3_tier().storage_options
    assert opts == {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:7480",
        "AWS_REGION": "us-east-1",
        "AWS_ALLOW_HTTP": "true",
        "AWS_ACCESS_KEY_ID": "access",
        "AWS_SECRET_ACCESS_KEY": "secret",
    }
    https = Tier(
        TierConfig(
            name="s",
            kind="s3",
            root="s3://bkt/x",
            region="eu-west-3",
            options={"endpoint": "https://rgw:443"},
        )
    )
    assert https.storage_options == {"AWS_REGION": "eu-west-3", "AWS_ENDPOINT_URL": "https://rgw:443"}
    assert isinstance(_s3_tier().filesystem, pafs.S3FileSystem)


def test_unset_credential_variable_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("T_AK", raising=False)
    monkeypatch.setenv("T_SK", "secret")
    with pytest.raises(ConfigError, match="T_AK"):
        _ = _s3_tier().storage_options


def test_bad_endpoint_is_an_error() -> None:
    tier = Tier(TierConfig(name="s", kind="s3", root="s3://bkt/x", options={"endpoint": "127.0.0.1:7480/x"}))
    with pytest.raises(ConfigError, match="endpoint"):
        _ = tier.storage_options


def test_hdfs_storage_options_are_hadoop_config() -> None:
    conf = {"dfs.ha.namenodes.ns1": "nn1,nn2", "dfs.namenode.rpc-address.ns1.nn1": "h1:8020"}
    tier = Tier(TierConfig(name="h", kind="hdfs", root="hdfs://ns1/data", options=conf))
    assert tier.storage_options == conf


def test_tiers_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    tiers = [
        {
            "name": "ceph",
            "kind": "s3",
            "root": "s3://releases/lineage",
            "class": "warm",
            "region": "dc1",
            "options": {"endpoint": "http://rgw:7480"},
            "credentials_env": {"access_key": "CEPH_AK", "secret_key": "CEPH_SK"},
        },
        {"name": "cfs", "kind": "posix", "root": str(tmp_path), "class": "hot"},
    ]
    monkeypatch.setenv("LINEAGE_TIERS", json.dumps(tiers))
    monkeypatch.setenv("LINEAGE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CEPH_AK", "ak")
    monkeypatch.setenv("CEPH_SK", "sk")
    monkeypatch.delenv("LINEAGE_CONFIG", raising=False)
    settings = Settings()
    ceph = get_tier("ceph", settings)
    assert (ceph.kind, ceph.tier_class, ceph.uri("x")) == ("s3", "warm", "s3://releases/lineage/x")
    assert ceph.storage_options["AWS_REGION"] == "dc1"
    assert ceph.storage_options["AWS_ACCESS_KEY_ID"] == "ak"
    assert get_tier("cfs", settings).path("a") == f"{tmp_path.resolve()}/a"
    assert get_tier("local", settings).kind == "posix"  # always present
    with pytest.raises(ConfigError, match="unknown tier"):
        get_tier("nope", settings)


def test_tiers_from_toml(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    toml = tmp_path / "lineage.toml"
    toml.write_text(
        """
[[tiers]]
name = "hdfs"
kind = "hdfs"
root = "hdfs://nn:8020/lineage"
class = "cold"

[[tiers]]
name = "ceph"
kind = "s3"
root = "s3://bkt/p"
options = { endpoint = "http://127.0.0.1:7480" }
"""
    )
    monkeypatch.setenv("LINEAGE_CONFIG", str(toml))
    monkeypatch.delenv("LINEAGE_TIERS", raising=False)
    monkeypatch.setenv("LINEAGE_HOME", str(tmp_path / "home"))
    settings = Settings()
    assert get_tier("hdfs", settings).tier_class == "cold"
    assert get_tier("hdfs", settings).path("x") == "/lineage/x"
    assert get_tier("ceph", settings).storage_options["AWS_ENDPOINT_URL"] == "http://127.0.0.1:7480"
