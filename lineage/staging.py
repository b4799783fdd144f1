"""What is left in the local staging folder (``Settings.staging_dir``), for ``lineage gc`` and takedown purge.

The folder holds two kinds of entries:

* ``<run id>/``: a run's scratch (the local engine's parts before they reach a tier) and its recorded
  partitions (:mod:`pipelines.partitions`). It is garbage once its run is neither ``running`` nor
  resumable (:mod:`lineage.resume`: gc passes those along with the running ones); the runner deletes
  it when its run commits. It may hold record bytes, which a purge must not leave behind (a purge
  keeps no resumable run).
* anything else: a process's temporary folder (``ids-spill-*`` of a run's integrity check,
  ``dedupe-ids-*`` of ``lineage dedupe``, which has no run row). Its owner deletes it on exit; one left
  by a killed process is garbage once it is older than the grace period. These hold sample ids, never
  record bytes. Deleting one that a live process still uses would break that process, so an entry
  younger than the grace period is never touched.
"""

from __future__ import annotations

import re
import shutil
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

RUN_FOLDER = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")  # a run id (uuid4)


@dataclass(frozen=True)
class Leftover:
    path: Path
    run_id: str | None  # None: a process's temporary folder
    bytes: int


def leftovers(staging_dir: Path, running: set[str], grace: timedelta | None) -> list[Leftover]:
    """Entries of ``staging_dir`` that no live work needs: folders of runs not in ``running`` (the runs
    still running, and any whose folder must be kept), and, unless ``grace`` is None, other entries not
    modified for ``grace``."""
    if not staging_dir.is_dir():
        return []
    cutoff = None if grace is None else time.time() - grace.total_seconds()
    found = []
    for child in sorted(staging_dir.iterdir()):
        run_id = child.name if RUN_FOLDER.match(child.name) else None
        if run_id is not None and run_id in running:
            continue
        if run_id is None and (cutoff is None or _newest_mtime(child) > cutoff):
            continue
        found.append(Leftover(child, run_id, _size(child)))
    return found


def remove_run(staging_dir: Path, run_id: str) -> None:
    """A committed run's folder: its partitions are in the committed tables now."""
    shutil.rmtree(staging_dir / run_id, ignore_errors=True)


def remove(leftover: Leftover) -> None:
    if leftover.path.is_dir() and not leftover.path.is_symlink():
        shutil.rmtree(leftover.path, ignore_errors=True)
    else:
        leftover.path.unlink(missing_ok=True)


def _files(path: Path) -> list[Path]:
    if path.is_dir() and not path.is_symlink():
        return [p for p in path.rglob("*") if p.is_file() and not p.is_symlink()]
    return [path]


def _size(path: Path) -> int:
    return sum(p.lstat().st_size for p in _files(path))


def _newest_mtime(path: Path) -> float:
    """The latest change inside ``path``: a folder a live process still writes into is young."""
    return max([path.lstat().st_mtime, *(p.lstat().st_mtime for p in _files(path))])
