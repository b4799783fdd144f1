"""Locating a release's files on the best tier, and verifying each file once per host.

Which copies a reader may use (:func:`ordered_locations`): the replicas the catalog records in
state ``verified``, the preferred tier first. A replica in any other state (``corrupt`` after a
``lineage tier verify`` found a bad file, ``copying``, ``removing``, ``removed``) is never read;
when no recorded replica is readable, opening fails and names the file. The manifest's own table
stands in only when the catalog records no replica at all.

Verify once (:class:`VerifiedMarkers`): hashing every file on every open would cost a restarted
job a full read of the release, so a file whose xxh3-128 matched is remembered in a marker under
``$LINEAGE_HOME/verified`` (one per tier, URI and expected checksum). A marker records the file's
*identity* as the storage reports it without reading the bytes, and is trusted only while the
file still has that identity; any change hashes the file again:

- POSIX: ``os.stat``'s device, inode, size, ``st_mtime_ns`` and ``st_ctime_ns``. An in-place write
  changes the ctime (which no ``utime`` can set back), a replaced file has a new inode.
- S3 (Ceph RGW): the object's size, ``Last-Modified`` and ``ETag``, from the ``HEAD`` that pyarrow's
  ``open_input_file`` makes anyway (``FileInfo`` has no ETag). ``Last-Modified`` has whole-second
  resolution, so a same-size rewrite within a second differs only in its ETag, which the gateway
  derives from the content (the MD5 of the object, or of its parts).
- Other filesystems (HDFS), or an object store that gives no ETag: ``get_file_info``'s size and
  mtime.

A timestamp only tells changes apart when they fall in different clock ticks, so, as git does with
"racily clean" index entries, a file whose identity has no content-derived part (no ETag) and
that changed less than :data:`SETTLE_NS` before it was hashed gets no marker: a same-size
rewrite in the same tick would otherwise keep the identity of the bytes that were hashed. On a
network mount the timestamps come from the server's clock; the margin covers modest skew only.
A file whose identity changed while it was hashed gets no marker either.

What a marker cannot see is bytes that rot under an unchanged identity: that is what ``lineage
tier verify`` is for. It reads the replica back, marks it ``corrupt`` in the catalog when a file
does not match (every host's reader then refuses the replica, whatever its markers say), and
deletes this host's markers of the files it checked (:meth:`VerifiedMarkers.forget`), so a later
read here hashes them again. Markers in other hosts' caches need no deleting: the catalog's state
is read on every open, and a repaired file is a new write with a new identity.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from collections.abc import Iterable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import xxhash

from lineage.settings import Settings
from storage.checksum import file_digest
from storage.tier import Tier, get_tier

log = logging.getLogger(__name__)

SETTLE_NS = 1_000_000_000  # a file changed this recently before it was hashed is hashed again next time
READABLE_STATES = ("verified", "unrecorded")


class ChecksumMismatch(IOError):
    """Bytes do not match what the catalog recorded: a file vs the manifest, or a manifest vs the
    release's content digest."""


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
        except KeyError:
            tier_class = "cold"
        return (not loc.readable, loc.tier != prefer_tier, _CLASS_ORDER[tier_class])

    return sorted(locations, key=rank)


Identity = dict[str, int | str]


def file_identity(tier: Tier, path: str, opened: pa.NativeFile | None = None) -> Identity:
    """What the storage says about a tier-relative file without reading it (see the module
    docstring). ``opened``: the file, already opened for reading, whose open on S3 made the
    ``HEAD`` request that holds the ETag."""
    full = tier.path(path)
    if tier.kind == "posix":
        st = os.stat(full)
        return {
            "size": st.st_size,
            "device": st.st_dev,
            "inode": st.st_ino,
            "mtime_ns": st.st_mtime_ns,
            "ctime_ns": st.st_ctime_ns,
        }
    if tier.kind == "s3":
        with ExitStack() as stack:
            handle = opened or stack.enter_context(tier.filesystem.open_input_file(full))
            size, head = handle.size(), {key: value.decode() for key, value in handle.metadata().items()}
        if head.get("ETag"):
            return {"size": size, "last_modified": head.get("Last-Modified", ""), "etag": head["ETag"]}
    info = tier.filesystem.get_file_info(full)
    if info.type != pafs.FileType.File:
        raise FileNotFoundError(f"{tier.name}:{path}: no such file")
    return {"size": info.size, "mtime_ns": info.mtime_ns or 0}


def _settled(identity: Identity, hashed_from_ns: int) -> bool:
    """Whether a later change to the file must show in its identity (see the module docstring)."""
    if "etag" in identity:
        return True
    changed = max(int(identity.get("mtime_ns", 0)), int(identity.get("ctime_ns", 0)))
    return changed < hashed_from_ns - SETTLE_NS


class VerifiedMarkers:
    """This host's record of release files whose bytes matched their manifest checksum."""

    def __init__(self, settings: Settings) -> None:
        self.directory = Path(settings.home) / "verified"

    def _marker(self, tier: Tier, path: str, checksum: str) -> Path:
        return self.directory / xxhash.xxh3_64_hexdigest(f"{tier.name}\x00{tier.uri(path)}\x00{checksum}".encode())

    @staticmethod
    def _recorded(marker: Path) -> Identity | None:
        try:
            return json.loads(marker.read_text())["identity"]
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as exc:  # a marker an older version wrote, or garbage
            log.debug("ignoring marker %s: %s", marker, exc)
            return None

    def check(self, tier: Tier, path: str, entry: dict[str, Any], opened: pa.NativeFile | None = None) -> None:
        """Hash the file unless a marker says these very bytes matched; raise on a mismatch.

        ``opened``: the file, already opened for reading (see :func:`file_identity`)."""
        marker = self._marker(tier, path, entry["xxh3_128"])
        identity = file_identity(tier, path, opened)
        if self._recorded(marker) == identity:
            return
        hashed_from = time.time_ns()
        digest = file_digest(tier, path)
        if digest.hexdigest != entry["xxh3_128"] or digest.size != entry["size"]:
            marker.unlink(missing_ok=True)
            raise ChecksumMismatch(
                f"{tier.name}:{path}: xxh3-128 {digest.hexdigest} ({digest.size} bytes), manifest says "
                f"{entry['xxh3_128']} ({entry['size']} bytes)"
            )
        if file_identity(tier, path) != identity:
            log.warning("%s:%s changed while it was hashed; it is hashed again on the next open", tier.name, path)
        elif _settled(identity, hashed_from):
            self._write(marker, {"xxh3_128": entry["xxh3_128"], "identity": identity})

    def _write(self, marker: Path, record: dict[str, Any]) -> None:
        """Written under a temporary name and renamed: ranks of a node may verify the same file."""
        self.directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=f".{marker.name}.")
        try:
            with os.fdopen(fd, "w") as out:
                json.dump(record, out)
            os.replace(tmp, marker)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def forget(self, tier: Tier, table_path: str, entries: Iterable[tuple[str, str]]) -> int:
        """Delete the markers of ``(path, xxh3_128)`` files under ``table_path``: they are hashed
        again on their next read on this host. Returns how many there were."""
        removed = 0
        for path, checksum in entries:
            try:
                self._marker(tier, f"{table_path}/{path}", checksum).unlink()
                removed += 1
            except FileNotFoundError:
                pass
        return removed


class ReleaseFiles:
    """Finds the manifest's files at the first readable location that has them, verifying each
    file's checksum once per host (see :class:`VerifiedMarkers`)."""

    def __init__(self, manifest: dict[str, Any], locations: list[Location], settings: Settings, verify: bool) -> None:
        self.manifest, self.locations, self.settings, self.verify = manifest, locations, settings, verify
        self._located: dict[int, tuple[Tier, str, pq.FileMetaData]] = {}
        self._markers = VerifiedMarkers(settings)

    @property
    def remote(self) -> bool:
        """Whether the preferred copy is on a network store (reads wait on requests, not on disk)."""
        first = self.locations[0]
        try:
            return self.settings.tier_config(first.tier).kind != "posix"
        except KeyError:
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
