"""Locating a release's files on the best tier, and verifying each file once per host.

Which copies a reader may use (:func:`ordered_locations`): the replicas the catalog records in
state ``verified``, the preferred tier first. A replica in any other state (``corrupt`` after a
``lineage tier verify`` found a bad file, ``copying``, ``removing``, ``removed``) is never read;
when no recorded replica is readable, opening fails and names the file. The manifest's own table
stands in only when the catalog records no replica at all.

Verify once: each file is hashed against its manifest checksum on this host's first read and
remembered in a marker (:class:`storage.verified.VerifiedMarkers`, whose docstring gives the file
identities it trusts and what ``lineage tier verify`` clears).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from lineage.errors import ConfigError
from lineage.settings import Settings
from storage.tier import Tier, get_tier
from storage.verified import ChecksumMismatch, VerifiedMarkers

log = logging.getLogger(__name__)

READABLE_STATES = ("verified", "unrecorded")


@dataclass(frozen=True)
class Location:
    """Where a copy of the release's data table lives, and the state the catalog records for it
    (``unrecorded``: the manifest's own table of a release with no replica rows)."""

    tier: str
    table_path: str
    state: str = "verified"
    detail: str | None = None  # why it is not verified (a corrupt replica's bad files)

    @property
    def readable(self) -> bool:
        return self.state in READABLE_STATES


_CLASS_ORDER = {"hot": 0, "warm": 1, "cold": 2}


def ordered_locations(
    manifest: dict[str, Any], replicas: list[Location], prefer_tier: str | None, settings: Settings
) -> list[Location]:
    """The recorded replicas, readable ones first: the preferred tier first, then hot before warm
    before cold. The manifest's own table only when the catalog records no replica at all."""
    locations = list(dict.fromkeys(replicas)) or [Location(manifest["tier"], manifest["data"]["table"], "unrecorded")]

    def rank(loc: Location) -> tuple[bool, bool, int]:
        try:
            tier_class = settings.tier_config(loc.tier).tier_class
        except ConfigError:
            tier_class = "cold"
        return (not loc.readable, loc.tier != prefer_tier, _CLASS_ORDER[tier_class])

    return sorted(locations, key=rank)


class ReleaseFiles:
    """Finds the manifest's files at the first readable location that has them, verifying each
    file's checksum once per host (see :mod:`storage.verified`)."""

    def __init__(self, manifest: dict[str, Any], locations: list[Location], settings: Settings, verify: bool) -> None:
        self.manifest, self.locations, self.settings, self.verify = manifest, locations, settings, verify
        self._located: dict[int, tuple[Tier, str, pq.FileMetaData]] = {}
        self._markers = VerifiedMarkers.in_home(settings.home)

    @property
    def remote(self) -> bool:
        """Whether the preferred copy is on a network store (reads wait on requests, not on disk)."""
        first = self.locations[0]
        try:
            return self.settings.tier_config(first.tier).kind != "posix"
        except ConfigError:
            return False

    def locate(self, index: int) -> tuple[Tier, str, pq.FileMetaData]:
        """The file's tier, path and footer, from the first readable location where it opens (and
        verifies)."""
        if index in self._located:
            return self._located[index]
        entry = self.manifest["files"][index]
        errors: list[str] = []
        mismatch = False
        for loc in self.locations:
            if not loc.readable:
                mismatch = mismatch or loc.state == "corrupt"
                errors.append(
                    f"{loc.tier}: the replica is {loc.state}{f' ({loc.detail})' if loc.detail else ''}, not read"
                )
                continue
            try:
                tier = get_tier(loc.tier, self.settings)
                path = f"{loc.table_path}/{entry['path']}"
                with tier.filesystem.open_input_file(tier.path(path)) as handle:
                    if self.verify:
                        self._markers.check(tier, path, entry, handle)
                    footer = pq.ParquetFile(handle).metadata
            except (OSError, ConfigError) as exc:  # a tier this host lacks, or cannot reach: try the next
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
