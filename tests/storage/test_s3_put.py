"""Single unsigned PUTs for verified tier copies: the SigV4 signer, and uploads to a real RGW."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pyarrow.fs as pafs
import pytest

import storage.transfer as transfer
from lineage.settings import TierConfig, get_settings
from storage.checksum import file_digest
from storage.s3_put import UnsignedPut, sigv4_authorization
from storage.tier import Tier
from storage.transfer import FileSpec, copy_verified


def test_signature_matches_the_aws_documentation_example() -> None:
    """'GET Object' from the S3 SigV4 documentation (header-based auth examples)."""
    headers = {
        "host": "examplebucket.s3.amazonaws.com",
        "range": "bytes=0-9",
        "x-amz-content-sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "x-amz-date": "20130524T000000Z",
    }
    auth = sigv4_authorization(
        "GET",
        "/test.txt",
        headers,
        region="us-east-1",
        access_key="AKIAIOSFODNN7EXAMPLE",
        secret_key="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        payload_hash=headers["x-amz-content-sha256"],
    )
    assert auth == (
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
        "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
    )


def _source(tmp_path: Path, names: list[str], size: int) -> tuple[Tier, list[FileSpec]]:
    src = Tier(TierConfig(name="src", kind="posix", root=str(tmp_path / "src")))
    specs = []
    for name in names:
        path = tmp_path / "src" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(size))
        digest = file_digest(src, name)
        specs.append(FileSpec(name, digest.size, digest.hexdigest))
    return src, specs


def test_copies_to_rgw_are_single_puts_that_read_back_intact(
    tmp_path: Path, ceph_tier: Tier, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = ["part-0.parquet", "_delta_log/00000000000000000000.json", "sp ace/q?x=1#f%2e.bin"]
    src, specs = _source(tmp_path, names, 3 << 20)
    assert ceph_tier.uploader is not None
    monkeypatch.setattr(transfer.pafs, "copy_files", lambda *a, **k: pytest.fail("went through pyarrow"))
    report = copy_verified(src, "", ceph_tier, "copy", specs, workers=3, bytes_per_s=64 << 20)
    assert sorted(report.copied) == sorted(names)
    for spec in specs:
        with ceph_tier.filesystem.open_input_stream(ceph_tier.path("copy", spec.path)) as got:
            assert got.read() == (tmp_path / "src" / spec.path).read_bytes()


def test_a_refused_put_is_a_clear_error(tmp_path: Path, ceph_s3, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WRONG_SECRET", "not-the-secret")
    config = ceph_s3.tier_config("refused")
    config = config.model_copy(update={"credentials_env": {**config.credentials_env, "secret_key": "WRONG_SECRET"}})
    dst = Tier(config)
    src, specs = _source(tmp_path, ["a.bin"], 1000)
    assert dst.uploader is not None
    with pytest.raises(OSError, match="HTTP 403"):
        dst.uploader.put(dst.path("x", "a.bin"), lambda: [b"data"], 4)
    with pytest.raises(OSError, match="ACCESS_DENIED"):
        copy_verified(src, "", dst, "x", specs)
    with pytest.raises(FileNotFoundError):
        ceph_s3.filesystem().open_input_stream(dst.path("x", "a.bin")).read()


def test_a_copy_creates_a_missing_bucket(tmp_path: Path, ceph_s3) -> None:
    config = ceph_s3.tier_config().model_copy(update={"root": "s3://fresh-bucket-for-copies/x"})
    src, specs = _source(tmp_path, ["a.bin"], 1000)
    copy_verified(src, "", Tier(config), "y", specs)
    with ceph_s3.filesystem().open_input_stream("fresh-bucket-for-copies/x/y/a.bin") as got:
        assert got.read() == (tmp_path / "src" / "a.bin").read_bytes()


def test_tiers_pickle_without_their_clients(ceph_tier: Tier) -> None:
    assert isinstance(ceph_tier.uploader, UnsignedPut) and ceph_tier.filesystem is not None
    clone = pickle.loads(pickle.dumps(ceph_tier))
    assert not {"uploader", "filesystem", "storage_options"} & set(clone.__dict__)
    assert get_settings().catalog_url not in pickle.dumps(ceph_tier).decode("latin-1")
    assert isinstance(clone.filesystem, pafs.S3FileSystem)


def test_only_s3_tiers_with_an_endpoint_use_single_puts(tmp_path: Path) -> None:
    assert Tier(TierConfig(name="p", kind="posix", root=str(tmp_path))).uploader is None
    assert Tier(TierConfig(name="aws", kind="s3", root="s3://some-bucket/x")).uploader is None
