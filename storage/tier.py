"""A storage tier: a filesystem, deltalake storage options and a root that paths cannot escape.

Every read and write in the project goes through a :class:`Tier`, so the same code runs on a
POSIX mount (CFS), an S3 gateway (Ceph RGW) and HDFS. Paths handed to a tier are *relative* to
its root; ``..`` or absolute paths are refused.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import pyarrow.fs as pafs

from lineage.settings import Settings, TierConfig, get_settings


class TierPathError(ValueError):
    """A path that would leave the tier's root."""


def confine(relative: str) -> str:
    """Normalise a tier-relative path and refuse anything that escapes the root."""
    if relative in ("", "."):
        return ""
    if relative.startswith("/") or "\\" in relative or "\x00" in relative:
        raise TierPathError(f"tier paths must be relative POSIX paths, got {relative!r}")
    norm = posixpath.normpath(relative)
    if norm == ".." or norm.startswith("../"):
        raise TierPathError(f"path {relative!r} escapes the tier root")
    return "" if norm == "." else norm


@dataclass(frozen=True)
class Tier:
    """A configured tier. Cheap to build; the filesystem is created lazily."""

    config: TierConfig
    settings: Settings = field(repr=False, compare=False, default_factory=get_settings)

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def kind(self) -> str:
        return self.config.kind

    @cached_property
    def _root(self) -> str:
        root = self.config.root.rstrip("/")
        if self.kind == "posix":
            root = str(Path(root.removeprefix("file://")).expanduser().resolve())
        return root

    # -- addressing -------------------------------------------------------------------------
    def path(self, *parts: str) -> str:
        """Filesystem path (for :attr:`filesystem`) of a tier-relative path."""
        rel = confine(posixpath.join(*parts)) if parts else ""
        base = self._fs_root
        return f"{base}/{rel}" if rel else base

    def uri(self, *parts: str) -> str:
        """Full URI (for deltalake and for provenance) of a tier-relative path."""
        rel = confine(posixpath.join(*parts)) if parts else ""
        return f"{self._root}/{rel}" if rel else self._root

    def relative(self, uri_or_path: str) -> str:
        """Inverse of :meth:`uri`/:meth:`path`: the tier-relative path, or an error if outside."""
        for base in (self._root, self._fs_root):
            if uri_or_path == base:
                return ""
            if uri_or_path.startswith(base + "/"):
                return confine(uri_or_path[len(base) + 1 :])
        raise TierPathError(f"{uri_or_path!r} is not under tier {self.name!r} ({self._root})")

    @cached_property
    def _fs_root(self) -> str:
        if self.kind == "posix":
            return self._root
        if self.kind == "s3":
            return self._root.removeprefix("s3://").removeprefix("s3a://")
        if self.kind == "hdfs":
            return "/" + self._root.split("://", 1)[1].split("/", 1)[1] if "://" in self._root else self._root
        raise ValueError(f"unknown tier kind {self.kind!r}")

    # -- clients ----------------------------------------------------------------------------
    @cached_property
    def filesystem(self) -> pafs.FileSystem:
        """A pyarrow filesystem addressed with :meth:`path`."""
        from storage.backends import make_filesystem

        return make_filesystem(self.config)

    @cached_property
    def storage_options(self) -> dict[str, str]:
        """deltalake (delta-rs) storage options for :meth:`uri` addresses."""
        from storage.backends import make_storage_options

        return make_storage_options(self.config)


def get_tier(name: str | None = None, settings: Settings | None = None) -> Tier:
    settings = settings or get_settings()
    return Tier(settings.tier_config(name), settings)


def local_tier(root: str | Path, name: str = "adhoc") -> Tier:
    """A throw-away POSIX tier rooted at ``root``: used for raw inputs given as local paths."""
    return Tier(TierConfig(name=name, kind="posix", root=str(Path(root).resolve())))
