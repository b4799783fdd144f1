"""Streaming xxh3-128 checksums of files on a tier (manifests, replica verification)."""

from __future__ import annotations

import xxhash

from storage.tier import Tier

CHUNK_BYTES = 8 * 1024 * 1024


def file_checksum(tier: Tier, path: str) -> tuple[str, int]:
    """(xxh3-128 hex digest, size in bytes) of a tier-relative file, read back from storage."""
    digest = xxhash.xxh3_128()
    size = 0
    with tier.filesystem.open_input_stream(tier.path(path)) as stream:
        while chunk := stream.read(CHUNK_BYTES):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size
