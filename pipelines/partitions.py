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
are all in place. The files are engine-independent Parquet, but only the local engine writes
and reads them (Spark and Ray runs start over: README, "Resuming a killed run").
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import xxhash

FOLDER = "partitions"
RECORD_FORMAT = 1


@dataclass(frozen=True)
class Partition:
    """A completed partition: its files by kind (paths relative to :attr:`folder`) and its counters."""

    index: int
    key: str
    folder: Path
    files: dict[str, list[str]]
    counters: dict[str, int] = field(default_factory=dict)

    def paths(self, kind: str) -> list[str]:
        return [str(self.folder / f) for f in self.files.get(kind, [])]


def _digest(path: Path) -> str:
    hasher = xxhash.xxh3_128()
    with path.open("rb") as fh:
        while chunk := fh.read(8 << 20):
            hasher.update(chunk)
    return hasher.hexdigest()


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
            body: dict[str, Any] = json.loads(self._record(index).read_text())
        except (OSError, ValueError):
            return None
        if body.get("format") != RECORD_FORMAT or body.get("index") != index or body.get("key") != key:
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
