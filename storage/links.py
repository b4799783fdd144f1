"""Symbolic links: raw input files are listed and opened by their *real* path, inside the tier's root.

:func:`storage.tier.confine` checks a path's text; a link inside the root (``evil -> /etc``)
passes that check, and pyarrow's ``LocalFileSystem`` follows it, both when it opens
``evil/passwd`` and when it lists a folder recursively (where it also lists a link to a parent
folder over and over until the path is too long, and skips a broken link without a word). So on
POSIX tiers:

- :func:`real_path` is the path to open: links resolved (:func:`os.path.realpath`) and the result
  checked against the root's real path. Callers open *that* path, not the one they were given,
  so a link put in place after the check is not followed.
- :func:`list_files` walks a folder itself (:func:`os.scandir`, no pyarrow): a link to a file or
  a folder that stays inside the root is followed (a file reached under two names is listed under
  both, as the tree says); one that leaves the root, one that loops back to a folder above it and
  a broken one are refused, naming the link.

A refusal is a :class:`TierLinkError`. No byte outside the root is read: the check comes before
the open. What remains is the usual window of path-based checks: a folder *on the resolved path*
replaced by a link between the check and the open (``openat2(RESOLVE_BENEATH)`` would close it,
but it is Linux-only and not in Python's standard library); it needs write access inside the root.

Other kinds: S3 has no links. HDFS has them, but creating them is off by default
(``test.SymlinkEnabled``) and the NameNode never follows one: it answers
``UnresolvedPathException`` and leaves resolution to the client, which hdfs-native does not do,
so a read through a link fails and nothing outside the root is read. Both use the tier's pyarrow
filesystem unchanged here.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pyarrow.fs as pafs

from storage.tier import Tier, TierPathError, confine


class TierLinkError(TierPathError):
    """A symbolic link that leads out of the tier's root, loops, or leads nowhere."""


def real_path(tier: Tier, relative: str) -> str:
    """The path to open for a tier-relative path: on POSIX tiers, links resolved and confined."""
    path = tier.path(relative)
    if tier.kind != "posix":
        return path
    return _inside(tier, _real_root(tier), relative, os.path.realpath(path))


def list_files(tier: Tier, folder: str, keep: Callable[[str], bool]) -> list[str]:
    """Sorted tier-relative names of the files under ``folder`` (recursive) that ``keep`` accepts.

    A missing folder lists as empty. ``keep`` sees each file's tier-relative name before its link
    (if any) is checked, so a file the caller ignores (a hidden one, one outside a glob) never
    fails the listing. Names are as listed, not yet :func:`~storage.tier.confine`-d: the caller
    decides what a name the tier refuses (a control character, bytes that are not UTF-8) becomes.
    """
    folder = confine(folder)
    if tier.kind != "posix":
        selector = pafs.FileSelector(tier.path(folder), recursive=True, allow_not_found=True)
        root = tier.path().rstrip("/") + "/"
        infos = tier.filesystem.get_file_info(selector)
        return sorted(f for f in (i.path.removeprefix(root) for i in infos if i.type == pafs.FileType.File) if keep(f))
    return sorted(_walk(tier, folder, keep))


def _real_root(tier: Tier) -> str:
    return os.path.realpath(tier.path())


def _inside(tier: Tier, root: str, relative: str, real: str) -> str:
    if real == root or real.startswith(root.rstrip("/") + "/"):
        return real
    raise TierLinkError(
        f"{relative!r} on tier {tier.name!r} leads through a symbolic link to {real}, outside the tier's root "
        f"{root}: links must stay inside the root"
    )


def _walk(tier: Tier, folder: str, keep: Callable[[str], bool]) -> Iterator[str]:
    root = _real_root(tier)
    start = _inside(tier, root, folder, os.path.realpath(tier.path(folder)))
    if not os.path.isdir(start):
        return
    # (tier-relative folder, its real path, the real paths of the folders above it on this walk)
    stack = [(folder, start, (start,))]
    while stack:
        rel_dir, real_dir, above = stack.pop()
        with os.scandir(real_dir) as it:
            entries = sorted(it, key=lambda e: e.name)  # the first refusal is the same on every run
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if not entry.is_symlink():
                if entry.is_dir():
                    real = os.path.join(real_dir, entry.name)
                    stack.append((rel, real, (*above, real)))
                elif entry.is_file() and keep(rel):
                    yield rel
                continue
            target = os.path.realpath(entry.path)
            if os.path.isdir(target):
                _inside(tier, root, rel, target)
                if target in above:
                    raise TierLinkError(
                        f"{rel!r} on tier {tier.name!r} is a symbolic link loop: it leads to {target}, above it"
                    )
                stack.append((rel, target, (*above, target)))
            elif keep(rel):
                _inside(tier, root, rel, target)
                if not os.path.exists(target):
                    raise TierLinkError(f"{rel!r} on tier {tier.name!r} is a broken symbolic link (to {target})")
                if os.path.isfile(target):
                    yield rel
