"""Locating a release's files on the best tier, and verifying each file once."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import xxhash

from lineage.settings import Settings
from storage.checksum import file_digest
from storage.tier import Tier, get_tier

log = logging.getLogger(__name__)


class ChecksumMismatch(IOError):
    """Bytes do not match what the catalog recorded: a file vs the manifest, or a manifest vs the
    release's content digest."""


@dataclass(frozen=True)
class Location:
    """Where a copy of the release's data table lives."""

    tier: str
    table_path: str


_CLASS_ORDER = {"hot": 0, "warm": 1, "cold": 2}


def ordered_locations(
    manifest: dict[str, Any], replicas: list[Location], prefer_tier: str | None, settings: Settings
) -> list[Location]:
    """Verified replicas (or the manifest's own table when none are recorded): the preferred tier
    first, then hot before warm before cold tiers."""
    locations = list(dict.fromkeys(replicas)) or [Location(manifest["tier"], manifest["data"]["table"])]

    def rank(loc: Location) -> tuple[bool, int]:
        try:
            tier_class = settings.tier_config(loc.tier).tier_class
        except KeyError:
            tier_class = "cold"
        return (loc.tier != prefer_tier, _CLASS_ORDER[tier_class])

    return sorted(locations, key=rank)


class ReleaseFiles:
    """Finds the manifest's files at the first location that has them, verifying checksums once.

    Verification state is cached on disk (under ``$LINEAGE_HOME/verified``), keyed by tier, path and
    expected checksum, so a restarted job does not hash the same file again.
    """

    def __init__(self, manifest: dict[str, Any], locations: list[Location], settings: Settings, verify: bool) -> None:
        self.manifest, self.locations, self.settings, self.verify = manifest, locations, settings, verify
        self._located: dict[int, tuple[Tier, str, pq.FileMetaData]] = {}
        self._cache_dir = Path(settings.home) / "verified"

    @property
    def remote(self) -> bool:
        """Whether the preferred copy is on a network store (reads wait on requests, not on disk)."""
        first = self.locations[0]
        try:
            return self.settings.tier_config(first.tier).kind != "posix"
        except KeyError:
            return False

    def _marker(self, tier: Tier, path: str, checksum: str) -> Path:
        return self._cache_dir / xxhash.xxh3_64_hexdigest(f"{tier.name}\x00{tier.uri(path)}\x00{checksum}".encode())

    def _verified(self, tier: Tier, path: str, entry: dict[str, Any]) -> None:
        marker = self._marker(tier, path, entry["xxh3_128"])
        if marker.exists():
            return
        digest = file_digest(tier, path)
        if digest.hexdigest != entry["xxh3_128"] or digest.size != entry["size"]:
            raise ChecksumMismatch(
                f"{tier.name}:{path}: xxh3-128 {digest.hexdigest} ({digest.size} bytes), manifest says "
                f"{entry['xxh3_128']} ({entry['size']} bytes)"
            )
        self._cache_dir.mkdir(parents=True, exist_ok=True)
        marker.write_text(entry["xxh3_128"])

    def locate(self, index: int) -> tuple[Tier, str, pq.FileMetaData]:
        """The file's tier, path and footer, from the first location where it opens (and verifies)."""
        if index in self._located:
            return self._located[index]
        entry = self.manifest["files"][index]
        errors: list[str] = []
        mismatch = False
        for loc in self.locations:
            try:
                tier = get_tier(loc.tier, self.settings)
                path = f"{loc.table_path}/{entry['path']}"
                if self.verify:
                    self._verified(tier, path, entry)
                with tier.filesystem.open_input_file(tier.path(path)) as handle:
                    footer = pq.ParquetFile(handle).metadata
            except (OSError, KeyError) as exc:
                mismatch = mismatch or isinstance(exc, ChecksumMismatch)
                log.warning("release file %s unavailable on %s: %s", entry["path"], loc.tier, exc)
                errors.append(f"{loc.tier}: {exc}")
                continue
            self._located[index] = (tier, tier.path(path), footer)
            return self._located[index]
        error = ChecksumMismatch if mismatch else OSError
        raise error(f"no good copy of {entry['path']}: " + "; ".join(errors))

    def open(self, index: int) -> pq.ParquetFile:
        """A new reader of the file's good copy; its footer is read only once per reader object.

        Callers keep one per thread: a Parquet handle is never shared between threads. String and
        binary columns decode straight into views (what the training reader gathers), unless the
        file embeds an Arrow schema that says otherwise (see
        :func:`pipelines.parquet_out.embeds_arrow_schema`).
        """
        tier, path, footer = self.locate(index)
        # pre-buffering coalesces a row group's column chunks into few, concurrent requests: a win
        # on an object store, an extra copy on a local disk
        return pq.ParquetFile(
            tier.filesystem.open_input_file(path),
            metadata=footer,
            pre_buffer=self.remote,
            binary_type=pa.binary_view(),
        )

    def row_groups(self, index: int) -> list[int]:
        """Row counts of a file's row groups (from its footer)."""
        footer = self.locate(index)[2]
        return [footer.row_group(i).num_rows for i in range(footer.num_row_groups)]
