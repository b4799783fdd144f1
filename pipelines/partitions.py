"""Per-partition completion records in a run's staging folder, so a killed run resumes without redoing them.

A *partition* is one ingest work item of a run (a raw file, or a dataset-version input), carried
through the run's first segment of map steps: its samples, lineage, quarantine and ingested ids
are its files. Nothing after the first barrier (a group or cluster step) is partitioned: those
steps see the whole input and are run again on resume.

Protocol, for partition ``i`` under ``<staging>/<run id>/partitions/``:

1. :meth:`Partitions.begin` deletes whatever an earlier attempt left of ``i`` and gives the
   folder ``i.tmp/``, where the partition's files are written;
2. :meth:`Partitions.complete` renames ``i.tmp/`` to ``i/`` and then writes the record ``i.json``
   (to a temporary name, flushed to disk, renamed into place): the work item's key, each file
   with its size and xxh3-128, and the item's counters;
3. :meth:`Partitions.reuse` trusts a record only if it parses, names the same key and every
   file it names is there with that size and checksum; otherwise the partition is redone.

A kill at any point leaves either no record (the partition is redone) or a record whose files
are all in place.

Spark and Ray (:class:`TierPartitions`) keep the same records, keyed the same way (:func:`source_key`,
:func:`dataset_key`), under ``_staging/run-<id>/partitions/`` on the output tier, which may be an
object store where rename is not atomic. So that protocol needs no rename: a task attempt writes
partition ``i``'s files into a folder of its own, ``i/<attempt>/``, then writes the record ``i.json``
in one put, naming those files. The record is the commit: a kill before it leaves files no record
names (garbage, removed with the staging); a torn record does not parse; two attempts of one item
(a retried or speculative task) each leave a whole folder, and the record names one of them.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path, PurePath, PurePosixPath
from typing import Any

import pyarrow.fs as pafs
import xxhash

from storage.tier import Tier

FOLDER = "partitions"
RECORD_FORMAT = 1
# a partition's files by kind: what one work item leaves after the first map steps
SAMPLES, LINEAGE, QUARANTINE, INGESTED = "samples", "lineage", "quarantine", "ingested"
PARTITION_KINDS = (SAMPLES, LINEAGE, QUARANTINE, INGESTED)
ROWS = "rows."  # TierPartitions' counters of rows written per kind: "rows.samples", ...


@dataclass(frozen=True)
class Partition:
    """A completed partition: its files by kind (paths relative to :attr:`folder`) and its counters."""

    index: int
    key: str
    folder: PurePath  # a local folder, or a tier-relative one (TierPartitions)
    files: dict[str, list[str]]
    counters: dict[str, int] = field(default_factory=dict)

    def paths(self, kind: str) -> list[str]:
        return [str(self.folder / f) for f in self.files.get(kind, [])]


def source_key(position: int, path: str) -> str:
    """The key of the work item that is raw file ``path`` of the input at ``position``."""
    return f"files:{position}:{path}"


def dataset_key(position: int, table_path: str, version: int, file: str | None = None) -> str:
    """The key of the work item that is a dataset version input (the local engine), or one of its
    Parquet files (Spark and Ray, which read a version file by file)."""
    key = f"dataset:{position}:{table_path}@{version}"
    return key if file is None else f"{key}:{file}"


def _hash(fh: Any) -> str:
    hasher = xxhash.xxh3_128()
    while chunk := fh.read(8 << 20):
        hasher.update(chunk)
    return hasher.hexdigest()


def _digest(path: Path) -> str:
    with path.open("rb") as fh:
        return _hash(fh)


def _parse(text: bytes | str, index: int, key: str) -> dict[str, Any] | None:
    """A record's body, if it is whole and of partition ``index`` with ``key``."""
    try:
        body: dict[str, Any] = json.loads(text)
    except ValueError:
        return None
    if body.get("format") != RECORD_FORMAT or body.get("index") != index or body.get("key") != key:
        return None
    return body


class Partitions:
    """The partition records of one run's staging folder ``run_root``."""

    def __init__(self, run_root: Path) -> None:
        self.root = run_root / FOLDER

    def _final(self, index: int) -> Path:
        return self.root / str(index)

    def _record(self, index: int) -> Path:
        return self.root / f"{index}.json"

    def begin(self, index: int) -> Path:
        """A clean ``i.tmp`` folder for partition ``index``'s files; anything earlier of it is gone."""
        self.discard(index)
        tmp = self.root / f"{index}.tmp"
        tmp.mkdir(parents=True)
        return tmp

    def discard(self, index: int) -> None:
        self._record(index).unlink(missing_ok=True)  # the record first: files without one are never trusted
        for path in (self._final(index), self.root / f"{index}.tmp"):
            shutil.rmtree(path, ignore_errors=True)

    def complete(self, index: int, key: str, files: dict[str, list[str]], counters: dict[str, int]) -> Partition:
        """Rename the partition's files into place, then record them (the partition's commit point)."""
        final = self._final(index)
        (self.root / f"{index}.tmp").rename(final)
        entries = {
            kind: [{"path": f, "size": (final / f).stat().st_size, "xxh3_128": _digest(final / f)} for f in names]
            for kind, names in files.items()
        }
        body = {"format": RECORD_FORMAT, "index": index, "key": key, "files": entries, "counters": counters}
        record, tmp = self._record(index), self.root / f"{index}.json.tmp"
        with tmp.open("w") as fh:
            json.dump(body, fh, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        tmp.rename(record)
        return Partition(index, key, final, files, dict(counters))

    def reuse(self, index: int, key: str) -> Partition | None:
        """Partition ``index`` as recorded, if its record is whole, names ``key`` and its files match."""
        try:
            body = _parse(self._record(index).read_bytes(), index, key)
        except OSError:
            return None
        if body is None:
            return None
        final = self._final(index)
        files: dict[str, list[str]] = {}
        for kind, entries in body.get("files", {}).items():
            for entry in entries:
                path = final / entry["path"]
                if not path.is_file() or path.stat().st_size != entry["size"] or _digest(path) != entry["xxh3_128"]:
                    return None
            files[kind] = [e["path"] for e in entries]
        return Partition(index, key, final, files, {k: int(v) for k, v in body.get("counters", {}).items()})

    def recorded(self) -> int:
        """How many partition records the folder holds (trusted or not)."""
        return len(list(self.root.glob("*.json"))) if self.root.is_dir() else 0


def clear_scratch(run_root: Path) -> None:
    """Delete everything in a run's staging folder but its partitions: scratch an attempt leaves."""
    if not run_root.is_dir():
        return
    for child in run_root.iterdir():
        if child.name == FOLDER:
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


class TierPartitions:
    """The partition records of a Spark or Ray run, under ``<staging>/partitions/`` on ``tier`` (the
    rename-free protocol in the module docstring). Tasks and the driver both use it: it pickles."""

    def __init__(self, tier: Tier, staging: str) -> None:
        self.tier = tier
        self.root = f"{staging}/{FOLDER}"

    def attempt(self, index: int) -> str:
        """A new tier-relative folder for one attempt at partition ``index``'s files."""
        return f"{self.root}/{index}/{uuid.uuid4().hex}"

    def _record(self, index: int) -> str:
        return self.tier.path(self.root, f"{index}.json")

    def _digest(self, relative: str) -> str:
        with self.tier.filesystem.open_input_stream(self.tier.path(self.root, relative)) as fh:
            return _hash(fh)

    def complete(self, index: int, key: str, files: dict[str, list[str]], counters: dict[str, int]) -> Partition:
        """Record the partition whose files (tier-relative paths, by kind) are written: its commit point."""
        fs = self.tier.filesystem
        entries: dict[str, list[dict[str, Any]]] = {}
        for kind, paths in files.items():
            entries[kind] = []
            for path in paths:
                relative = path.removeprefix(f"{self.root}/")
                size = fs.get_file_info(self.tier.path(path)).size
                entries[kind].append({"path": relative, "size": size, "xxh3_128": self._digest(relative)})
        body = {"format": RECORD_FORMAT, "index": index, "key": key, "files": entries, "counters": counters}
        with fs.open_output_stream(self._record(index)) as out:  # one put: whole or absent on an object store
            out.write(json.dumps(body, sort_keys=True).encode())
        return self._partition(index, key, body)

    def _partition(self, index: int, key: str, body: dict[str, Any]) -> Partition:
        files = {kind: [e["path"] for e in entries] for kind, entries in body.get("files", {}).items()}
        counters = {k: int(v) for k, v in body.get("counters", {}).items()}
        return Partition(index, key, PurePosixPath(self.root), files, counters)

    def _body(self, index: int, key: str) -> dict[str, Any] | None:
        try:
            with self.tier.filesystem.open_input_stream(self._record(index)) as fh:
                return _parse(fh.read(), index, key)
        except (OSError, FileNotFoundError):
            return None

    def reuse(self, index: int, key: str) -> Partition | None:
        """Partition ``index`` as recorded, if its record is whole, names ``key`` and its files match."""
        body = self._body(index, key)
        if body is None:
            return None
        fs = self.tier.filesystem
        for entries in body.get("files", {}).values():
            for entry in entries:
                info = fs.get_file_info(self.tier.path(self.root, entry["path"]))
                if info.type != pafs.FileType.File or info.size != entry["size"]:
                    return None
                if self._digest(entry["path"]) != entry["xxh3_128"]:
                    return None
        return self._partition(index, key, body)

    def recorded(self) -> set[int]:
        """The indices that have a record (trusted or not): one listing, so a fresh run asks for nothing more."""
        selector = pafs.FileSelector(self.tier.path(self.root), recursive=False, allow_not_found=True)
        names = (info.base_name for info in self.tier.filesystem.get_file_info(selector))
        return {int(name[:-5]) for name in names if name.endswith(".json") and name[:-5].isdigit()}

    def written(self, index: int, key: str) -> Partition:
        """Partition ``index`` as this attempt's task just recorded it (not verified again)."""
        body = self._body(index, key)
        if body is None:
            raise RuntimeError(f"partition {index} ({key}) was written but its record is missing or torn")
        return self._partition(index, key, body)
