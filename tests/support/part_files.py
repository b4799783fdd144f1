"""A Delta version's part files as engines cut them, for cross-engine comparisons."""

from __future__ import annotations

from storage.checksum import file_digest
from storage.delta import version_files
from storage.tier import Tier


def part_files(tier: Tier, table_path: str, version: int, *, checksums: bool = True) -> list[tuple[str, int, str]]:
    """(name in the run's folder, rows, xxh3-128 or "") of every file of a version, by name.

    The run's folder is left out of the name: it differs between runs of the same content."""
    out = []
    for f in version_files(tier, table_path, version):
        digest = file_digest(tier, table_path, f["path"]).hexdigest if checksums else ""
        out.append((f["path"].rsplit("/", 1)[-1], f["num_records"], digest))
    return sorted(out)
