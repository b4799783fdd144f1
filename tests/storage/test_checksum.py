"""Streaming xxh3-128 through a tier's filesystem: on a POSIX tier and on the real Ceph tier."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import xxhash

from storage.checksum import CHUNK_BYTES, digest_stream, file_digest
from storage.tier import Tier, TierPathError, local_tier


def _write(tier: Tier, rel: str, data: bytes) -> None:
    tier.filesystem.create_dir(tier.path(rel).rsplit("/", 1)[0], recursive=True)
    with tier.filesystem.open_output_stream(tier.path(rel)) as out:
        out.write(data)


@pytest.mark.parametrize("size", [0, 1, 1000, CHUNK_BYTES, CHUNK_BYTES + 1, 2 * CHUNK_BYTES + 12345])
def test_posix_digest_matches_one_shot(tmp_path: Path, size: int) -> None:
    tier = local_tier(tmp_path)
    data = os.urandom(size)
    _write(tier, "d/blob", data)
    digest = file_digest(tier, "d/blob")
    assert (digest.algorithm, digest.hexdigest, digest.size) == (
        "xxh3-128",
        xxhash.xxh3_128_hexdigest(data),
        size,
    )
    assert str(digest) == f"xxh3-128:{digest.hexdigest}"


def test_chunking_does_not_change_the_digest(tmp_path: Path) -> None:
    tier = local_tier(tmp_path)
    data = os.urandom(100_003)
    _write(tier, "blob", data)
    digests = {
        digest_stream(tier.filesystem, tier.path("blob"), chunk_bytes=n).hexdigest for n in (1, 7, 4096, 1 << 20)
    }
    assert digests == {xxhash.xxh3_128_hexdigest(data)}


def test_digest_detects_a_single_flipped_byte(tmp_path: Path) -> None:
    tier = local_tier(tmp_path)
    data = bytearray(os.urandom(50_000))
    _write(tier, "a", bytes(data))
    data[25_000] ^= 1
    _write(tier, "b", bytes(data))
    assert file_digest(tier, "a") != file_digest(tier, "b")


def test_digest_path_is_confined(tmp_path: Path) -> None:
    (tmp_path / "secret").write_bytes(b"x")
    tier = local_tier(tmp_path / "root")
    with pytest.raises(TierPathError):
        file_digest(tier, "../secret")


def test_missing_file_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        file_digest(local_tier(tmp_path), "nope")


def test_ceph_digest_matches_posix(tmp_path: Path, ceph_tier: Tier) -> None:
    """Same bytes, same digest, whichever tier holds them (what replica verification relies on)."""
    data = os.urandom(CHUNK_BYTES * 2 + 777)  # several chunks, and a multipart upload
    posix = local_tier(tmp_path)
    _write(posix, "r/blob", data)
    with ceph_tier.filesystem.open_output_stream(ceph_tier.path("r/blob")) as out:
        out.write(data)
    on_ceph = file_digest(ceph_tier, "r/blob")
    assert on_ceph == file_digest(posix, "r/blob")
    assert (on_ceph.hexdigest, on_ceph.size) == (xxhash.xxh3_128_hexdigest(data), len(data))
