"""A storage tier: a filesystem, deltalake storage options and a root that paths cannot escape.

Every read and write in the project goes through a :class:`Tier`, so the same code runs on a
POSIX mount (CFS), an S3 gateway (Ceph RGW) and HDFS. Paths handed to a tier are *relative* to
its root; anything that could address a location outside the root is refused (see :func:`confine`).
That check reads the path's text; symbolic links are checked by real path in :mod:`storage.links`.
"""

from __future__ import annotations

import posixpath
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow.fs as pafs

from storage.backends import make_filesystem, make_storage_options, make_uploader
from storage.config import TierConfig, TierConfigs
from storage.errors import ConfigError, Invalid
from storage.hdfs import parse_hdfs_uri

if TYPE_CHECKING:
    from storage.s3_put import UnsignedPut

# Control characters break object keys and log lines; a backslash is a separator to some parsers.
_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f\\]")
# In a URI (what deltalake parses) '%' is percent-decoded (``%2e%2e`` becomes ``..``) and '?'/'#'
# end the path, while pyarrow keeps all three literally. `uri()` therefore percent-encodes the
# tier-relative part (so "50%.jsonl" is ".../50%25.jsonl" and `relative()` decodes it back), while
# a configured root, used verbatim, may not contain them.
_URI_FORBIDDEN = re.compile(r"[%?#]")
# Characters RFC 3986 allows unescaped in a path besides letters, digits and "-._~": "k=v" stays readable.
_URI_PATH_SAFE = "/!$&'()*+,;=:@"


class TierPathError(Invalid):
    """A path that would leave the tier's root, or that is not a plain relative POSIX path."""


def confine(relative: str) -> str:
    """Normalise a tier-relative path; refuse anything that could escape the root.

    Refused: absolute paths, any ``..`` segment (even ``a/../b``: clients disagree on whether
    ``..`` is resolved; pyarrow's S3 keeps it literally, URL parsers resolve it), backslashes and
    control characters, and names that are not UTF-8 (a POSIX listing hands those over with lone
    surrogates: no object key, URI or Arrow string can hold them). Empty and ``.`` segments are
    dropped. ``%``, ``?`` and ``#`` are allowed (they are literal for pyarrow filesystems);
    :meth:`Tier.uri` percent-encodes them.
    """
    if not isinstance(relative, str):
        raise TierPathError(f"tier paths are strings, got {type(relative).__name__}")
    if relative in ("", "."):
        return ""
    if relative.startswith("/"):
        raise TierPathError(f"tier paths must be relative, got absolute {relative!r}")
    bad = _FORBIDDEN.search(relative)
    if bad:
        raise TierPathError(f"tier path {relative!r} contains the forbidden character {bad.group()!r}")
    if any(seg == ".." for seg in relative.split("/")):
        raise TierPathError(f"tier path {relative!r} contains '..'")
    if not relative.isascii():
        try:
            relative.encode("utf-8")
        except UnicodeEncodeError:
            raise TierPathError(f"tier path {relative!r} is not valid UTF-8") from None
    norm = posixpath.normpath(relative)
    return "" if norm == "." else norm


def confine_for_uri(relative: str) -> str:
    """:func:`confine`, and also refuse ``%``, ``?`` and ``#``, which a URL parser interprets."""
    norm = confine(relative)
    bad = _URI_FORBIDDEN.search(norm)
    if bad:
        raise TierPathError(
            f"tier path {relative!r} contains {bad.group()!r}, which a URL parser would decode or cut at"
        )
    return norm


def _under(base: str, rel: str) -> str:
    """``base`` joined with a confined relative path (a root of "/" gives "/x", not "//x")."""
    return f"{base.rstrip('/')}/{rel}" if rel else base


def _join(parts: tuple[str, ...]) -> str:
    # Each part is checked on its own: posixpath.join would silently drop everything before an
    # absolute part ("a", "/etc" -> "/etc").
    checked = [confine(p) for p in parts]
    return confine("/".join(p for p in checked if p))


@dataclass(frozen=True)
class TierRoot:
    """A tier root split into the URI prefix deltalake uses and the path its pyarrow filesystem uses."""

    uri: str  # e.g. s3://bucket/prefix, hdfs://nn:8020/data, /mnt/cfs/data
    fs_path: str  # e.g. bucket/prefix, /data, /mnt/cfs/data

    @classmethod
    def parse(cls, kind: str, root: str) -> TierRoot:
        if kind == "posix":
            local = root.removeprefix("file://")
            if "://" in local:
                raise ConfigError(f"posix tier root must be a local path or file:// URI, got {root!r}")
            path = str(Path(local).expanduser().resolve())
            return cls(uri=path, fs_path=path)
        if kind == "s3":
            scheme, rest = _split_scheme(root, ("s3", "s3a"))
            bucket, _, prefix = rest.partition("/")
            if not re.fullmatch(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", bucket):
                raise ConfigError(f"s3 tier root {root!r}: {bucket!r} is not a valid bucket name")
            prefix = _clean_root_path(prefix, root)
            fs_path = f"{bucket}/{prefix}" if prefix else bucket
            return cls(uri=f"s3://{fs_path}", fs_path=fs_path)
        if kind == "hdfs":
            try:
                loc = parse_hdfs_uri(root)
            except Invalid as exc:
                raise ConfigError(f"hdfs tier root {root!r}: {exc}") from None
            path = "/" + _clean_root_path(loc.path.lstrip("/"), root)
            return cls(uri=loc.with_path(path), fs_path=path)
        raise ConfigError(f"unknown tier kind {kind!r}")


def _split_scheme(root: str, schemes: tuple[str, ...]) -> tuple[str, str]:
    scheme, sep, rest = root.partition("://")
    if not sep or scheme.lower() not in schemes:
        raise ConfigError(f"tier root {root!r} must start with {' or '.join(s + '://' for s in schemes)}")
    return scheme.lower(), rest


def _clean_root_path(path: str, root: str) -> str:
    try:
        return confine_for_uri(path.strip("/"))
    except TierPathError as exc:
        raise ConfigError(f"tier root {root!r} is not a clean path: {exc}") from None


@dataclass(frozen=True)
class Tier:
    """A configured tier. Cheap to build (the root is validated here); clients are created lazily."""

    config: TierConfig
    # Where the variables named in ``credentials_env`` are read; None: this process's environment.
    environ: Mapping[str, str] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._parsed_root  # noqa: B018 - fail at construction on a malformed root

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def kind(self) -> str:
        return self.config.kind

    @property
    def tier_class(self) -> str:
        return self.config.tier_class

    @cached_property
    def _parsed_root(self) -> TierRoot:
        return TierRoot.parse(self.kind, self.config.root)

    @property
    def _root(self) -> str:
        return self._parsed_root.uri

    @property
    def _fs_root(self) -> str:
        return self._parsed_root.fs_path

    # -- addressing -------------------------------------------------------------------------
    def path(self, *parts: str) -> str:
        """Filesystem path (for :attr:`filesystem`) of a tier-relative path."""
        return _under(self._fs_root, _join(parts))

    def uri(self, *parts: str) -> str:
        """Full URI (for deltalake and for provenance) of a tier-relative path.

        On s3 and hdfs the relative part is percent-encoded, so a URL parser (deltalake's included)
        sees the same name pyarrow does; a posix tier's URI is its plain local path, taken literally.
        """
        relative = _join(parts)
        if "://" in self._root:
            relative = urllib.parse.quote(relative, safe=_URI_PATH_SAFE)
        return _under(self._root, relative)

    def relative(self, uri_or_path: str) -> str:
        """Inverse of :meth:`uri`/:meth:`path`: the tier-relative path, or an error if outside.

        URIs (``scheme://...``, e.g. from ``DeltaTable.file_uris()``) are percent-decoded once, as a
        URL parser would, and the decoded path is confined like any other.
        """
        candidate = uri_or_path
        if self.kind == "posix":
            candidate = candidate.removeprefix("file://")
        elif self.kind == "s3" and candidate.startswith("s3a://"):
            candidate = "s3://" + candidate[len("s3a://") :]
        candidate = candidate.rstrip("/") or candidate
        for base in (self._root, self._fs_root):
            prefix = base.rstrip("/") + "/"
            if candidate in (base, prefix.rstrip("/")):
                return ""
            if candidate.startswith(prefix):
                rest = candidate[len(prefix) :]
                if "://" in base:
                    rest = urllib.parse.unquote(rest)
                return confine(rest)
        raise TierPathError(f"{uri_or_path!r} is not under tier {self.name!r} ({self._root})")

    # -- clients ----------------------------------------------------------------------------
    @cached_property
    def filesystem(self) -> pafs.FileSystem:
        """A pyarrow filesystem addressed with :meth:`path`."""
        return make_filesystem(self.config, self.environ)

    def subtree(self, *parts: str) -> pafs.SubTreeFileSystem:
        """The tier's filesystem rooted at a tier-relative folder, e.g. a Delta table's folder.

        This is what ``DeltaTable.to_pyarrow_dataset(filesystem=...)`` wants: reading through a
        native pyarrow filesystem avoids a delta-rs crash at exit and is faster.
        """
        return pafs.SubTreeFileSystem(self.path(*parts), self.filesystem)

    @cached_property
    def uploader(self) -> UnsignedPut | None:
        """Single-request uploads for verified copies to this tier, where that applies."""
        return make_uploader(self.config, self.environ)

    def __getstate__(self) -> dict[str, object]:
        """Pickled (e.g. for Spark and Ray tasks) without its clients: they hold connections and
        credentials, and the receiving process builds its own."""
        skip = ("filesystem", "storage_options", "uploader")
        return {k: v for k, v in self.__dict__.items() if k not in skip}

    @cached_property
    def storage_options(self) -> dict[str, str]:
        """deltalake (delta-rs) storage options for :meth:`uri` addresses."""
        return make_storage_options(self.config, self.environ)


def get_tier(name: str | None, configs: TierConfigs) -> Tier:
    """The tier configured under ``name`` (``None``: the default tier), e.g. in the settings."""
    return Tier(configs.tier_config(name))


def local_tier(root: str | Path, name: str = "adhoc") -> Tier:
    """A throw-away POSIX tier rooted at ``root``: used for raw inputs given as local paths."""
    return Tier(TierConfig(name=name, kind="posix", root=str(Path(root).resolve())))
