"""What is left in the staging folders, for ``lineage gc`` and takedown purge.

Spark and Ray runs stage on their output tier, in ``_staging/run-<id>/`` (:func:`storage.layout.staging_prefix`):
scratch and recorded partitions, garbage once the run is neither ``running`` nor resumable, like a
local run's folder below (:func:`tier_leftovers`). The local staging folder (``Settings.staging_dir``):

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

import contextlib
import logging
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pyarrow.fs as pafs

from lineage.catalog import Run
from lineage.settings import Settings
from pipelines.partitions import FOLDER
from storage.errors import LineageError
from storage.layout import STAGING, run_of_staging, staging_prefix
from storage.tier import Tier, get_tier

log = logging.getLogger(__name__)

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


def staged(settings: Settings) -> Callable[[Run], bool]:
    """Whether a run's staging folder with its partition records is still there (what resuming needs):
    the local folder of a local run, ``_staging/run-<id>/partitions`` on the output tier otherwise."""

    def check(run: Run) -> bool:
        if run.engine == "local":
            return (Path(settings.staging_dir) / run.id).is_dir()
        try:
            tier = get_tier(((run.spec or {}).get("output") or {}).get("tier"), settings)
            info = tier.filesystem.get_file_info(tier.path(staging_prefix(run.id), FOLDER))
        except (OSError, LineageError) as exc:  # an unknown or unreachable tier: nothing to resume from
            log.warning("cannot look for run %s's staging: %s", run.id, exc)
            return False
        return info.type == pafs.FileType.Directory

    return check


def tier_leftovers(tier: Tier, keep: set[str]) -> list[str]:
    """Tier-relative staging folders (``_staging/run-<id>``) of runs not in ``keep``."""
    selector = pafs.FileSelector(tier.path(STAGING), recursive=False, allow_not_found=True)
    found = []
    for info in tier.filesystem.get_file_info(selector):
        run_id = run_of_staging(info.base_name)
        if info.type == pafs.FileType.Directory and run_id is not None and run_id not in keep:
            found.append(staging_prefix(run_id))
    return sorted(found)


def tier_size(tier: Tier, relative: str) -> int:
    infos = tier.filesystem.get_file_info(pafs.FileSelector(tier.path(relative), recursive=True))
    return sum(i.size or 0 for i in infos if i.type == pafs.FileType.File)


def remove_tier(tier: Tier, relative: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        tier.filesystem.delete_dir(tier.path(relative))
