"""Verify a release file once per host: markers of files whose bytes matched their checksum.

Hashing every file on every open would cost a restarted job a full read of the release, so a file
whose xxh3-128 matched is remembered in a marker under ``$LINEAGE_HOME/verified`` (one per tier,
URI and expected checksum). A marker records the file's *identity* as the storage reports it
without reading the bytes, and is trusted only while the file still has that identity; any change
hashes the file again:

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

The release reader (:mod:`lineage.reader.files`) checks files through the markers; ``lineage tier
verify`` (:func:`lineage.releases.replicas.verify_release`) forgets them.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from collections.abc import Iterable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import xxhash

from storage.checksum import file_digest
from storage.errors import Corrupt
from storage.tier import Tier

log = logging.getLogger(__name__)

SETTLE_NS = 1_000_000_000  # a file changed this recently before it was hashed is hashed again next time


class ChecksumMismatch(Corrupt):
    """Bytes do not match what the catalog recorded: a file vs the manifest, or a manifest vs the
    release's content digest."""


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

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    @classmethod
    def in_home(cls, home: Path) -> VerifiedMarkers:
        """The markers of a ``$LINEAGE_HOME``: its ``verified`` directory."""
        return cls(Path(home) / "verified")

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
