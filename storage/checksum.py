"""Streaming xxh3-128 of a file on any tier, for manifests and replica verification.

Reads through the tier's pyarrow filesystem (``open_input_stream``) in 8 MiB chunks, so the
same function checks a file on CFS, Ceph and HDFS without loading it into memory.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow.fs as pafs
import xxhash

from storage.tier import Tier

CHUNK_BYTES = 8 << 20
ALGORITHM = "xxh3-128"


@dataclass(frozen=True)
class FileDigest:
    """A file's checksum and the byte count it covers (a truncated copy differs in both)."""

    algorithm: str
    hexdigest: str
    size: int

    def __str__(self) -> str:
        return f"{self.algorithm}:{self.hexdigest}"


def digest_stream(filesystem: pafs.FileSystem, path: str, chunk_bytes: int = CHUNK_BYTES) -> FileDigest:
    """xxh3-128 of ``path`` on ``filesystem``, read sequentially in ``chunk_bytes`` chunks."""
    hasher = xxhash.xxh3_128()
    size = 0
    with filesystem.open_input_stream(path) as stream:
        while True:
            chunk = stream.read(chunk_bytes)
            if not chunk:
                break
            hasher.update(chunk)
            size += len(chunk)
    return FileDigest(ALGORITHM, hasher.hexdigest(), size)


def file_digest(tier: Tier, *parts: str, chunk_bytes: int = CHUNK_BYTES) -> FileDigest:
    """xxh3-128 of a tier-relative file (path confined to the tier's root)."""
    return digest_stream(tier.filesystem, tier.path(*parts), chunk_bytes)
