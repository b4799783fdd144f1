"""HDFS as a pyarrow filesystem, through the pure-client ``hdfs-native`` library.

Why not ``pyarrow.fs.HadoopFileSystem``: it needs libhdfs (a JNI library plus a Hadoop install),
which our machines do not have. ``hdfs-native`` speaks the NameNode/DataNode protocols itself, and
delta-rs uses the same library for ``hdfs://`` URIs, so both clients read one Hadoop config dict
(the tier's ``options``, e.g. ``dfs.ha.namenodes.<ns>`` for an HA nameservice).

The handler talks to anything shaped like :class:`HdfsClient`, so its behaviour is unit-tested
against an in-memory fake; the real library is exercised only when a cluster is configured.
"""

from __future__ import annotations

import logging
import posixpath
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.fs as pafs

from storage.errors import Invalid

log = logging.getLogger(__name__)

SCHEMES = ("hdfs", "viewfs")
COPY_CHUNK = 8 << 20


class HdfsStatus(Protocol):
    """The fields of ``hdfs_native.FileStatus`` the handler reads."""

    path: str
    length: int
    isdir: bool
    modification_time: int  # milliseconds since the epoch


class HdfsClient(Protocol):
    """The subset of ``hdfs_native.Client`` the handler uses (a fake implements it in tests)."""

    def get_file_info(self, path: str) -> HdfsStatus: ...
    def list_status(self, path: str, recursive: bool = False) -> Iterable[HdfsStatus]: ...
    def read(self, path: str) -> Any: ...
    def create(self, path: str, write_options: Any = None) -> Any: ...
    def append(self, path: str) -> Any: ...
    def mkdirs(self, path: str, permission: int = 0o755, create_parent: bool = False) -> None: ...
    def rename(self, src: str, dst: str, overwrite: bool = False) -> None: ...
    def delete(self, path: str, recursive: bool = False) -> bool: ...


@dataclass(frozen=True)
class HdfsLocation:
    """A parsed ``hdfs://authority/path`` URI. An empty authority means "fs.defaultFS"."""

    scheme: str
    authority: str  # "namenode:8020", an HA nameservice id, or ""
    path: str  # absolute, normalised

    @property
    def client_url(self) -> str | None:
        """What ``hdfs_native.Client`` wants: scheme and authority, or None for fs.defaultFS."""
        return f"{self.scheme}://{self.authority}" if self.authority else None

    def with_path(self, path: str) -> str:
        return f"{self.scheme}://{self.authority}{path}"


def parse_hdfs_uri(uri: str) -> HdfsLocation:
    """Parse and validate an HDFS URI; refuse user info, queries, fragments and ``..``."""
    parts = urllib.parse.urlsplit(uri)
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise Invalid(f"not an HDFS URI (want hdfs:// or viewfs://): {uri!r}")
    if parts.query or parts.fragment or "?" in uri or "#" in uri:
        raise Invalid(f"HDFS URI {uri!r} must not carry a query or fragment")
    if "@" in parts.netloc:
        raise Invalid(f"HDFS URI {uri!r} must not carry user info (set HADOOP_USER_NAME instead)")
    authority = parts.netloc
    if authority:
        try:
            port = parts.port
        except ValueError as exc:
            raise Invalid(f"HDFS URI {uri!r} has a bad port: {exc}") from None
        host = parts.hostname or ""
        if not host:
            raise Invalid(f"HDFS URI {uri!r} has a port but no host")
        if ":" in host:  # IPv6 literal: keep the brackets, or the port becomes ambiguous
            host = f"[{host}]"
        authority = f"{host}:{port}" if port is not None else host
    return HdfsLocation(scheme=scheme, authority=authority, path=_normalise(parts.path or "/", uri))


def _normalise(path: str, original: str) -> str:
    if not path.startswith("/"):
        raise Invalid(f"HDFS paths must be absolute, got {original!r}")
    if any(seg == ".." for seg in path.split("/")):
        raise Invalid(f"HDFS path {original!r} contains '..'")
    norm = posixpath.normpath(path)
    return "/" if norm in ("/", "//") else norm


class HdfsHandler(pafs.FileSystemHandler):
    """A pyarrow ``FileSystemHandler`` over an hdfs-native client.

    Paths are absolute HDFS paths (``/data/x``) or full URIs of the same namenode. Errors keep
    pyarrow's conventions: missing paths give ``FileType.NotFound`` in listings and
    ``FileNotFoundError`` elsewhere.
    """

    def __init__(self, client: HdfsClient, location: HdfsLocation | None = None) -> None:
        self._client = client
        self._location = location or HdfsLocation("hdfs", "", "/")

    # -- identity ------------------------------------------------------------------------------
    def get_type_name(self) -> str:
        return "hdfs-native"

    def equals(self, other: Any) -> bool:
        """Same namenode (accepts the other handler or a PyFileSystem wrapping it)."""
        other = getattr(other, "handler", other)
        return (
            isinstance(other, HdfsHandler)
            and other._location.scheme == self._location.scheme
            and other._location.authority == self._location.authority
        )

    def normalize_path(self, path: str) -> str:
        return self._path(path)

    def _path(self, path: str) -> str:
        if "://" in path:
            loc = parse_hdfs_uri(path)
            if (loc.scheme, loc.authority) != (self._location.scheme, self._location.authority):
                raise Invalid(f"{path!r} is on another filesystem than {self._location.with_path('/')!r}")
            return loc.path
        return _normalise(path, path)

    # -- metadata ------------------------------------------------------------------------------
    def _info(self, path: str, status: HdfsStatus) -> pafs.FileInfo:
        mtime_ns = int(status.modification_time) * 1_000_000
        if status.isdir:
            return pafs.FileInfo(path, pafs.FileType.Directory, mtime_ns=mtime_ns)
        return pafs.FileInfo(path, pafs.FileType.File, mtime_ns=mtime_ns, size=int(status.length))

    def _stat(self, path: str) -> HdfsStatus | None:
        try:
            return self._client.get_file_info(path)
        except FileNotFoundError:
            return None

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        infos = []
        for raw in paths:
            path = self._path(raw)
            status = self._stat(path)
            missing = pafs.FileInfo(path, pafs.FileType.NotFound)
            infos.append(missing if status is None else self._info(path, status))
        return infos

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        base = self._path(selector.base_dir)
        status = self._stat(base)
        if status is None:
            if selector.allow_not_found:
                return []
            raise FileNotFoundError(f"HDFS directory {base} does not exist")
        if not status.isdir:
            raise NotADirectoryError(f"HDFS path {base} is a file, not a directory")
        return [self._info(child, st) for child, st in self._children(base, selector.recursive)]

    def _children(self, base: str, recursive: bool) -> Iterator[tuple[str, HdfsStatus]]:
        prefix = base.rstrip("/") + "/"
        for status in self._client.list_status(base, recursive):
            # hdfs-native reports absolute paths; accept names relative to base as well.
            child = status.path if status.path.startswith("/") else prefix + status.path
            child = _normalise(child, child)
            if not child.startswith(prefix):
                raise OSError(f"HDFS listing of {base} returned {status.path!r}, outside it")
            yield child, status

    # -- directories ---------------------------------------------------------------------------
    def create_dir(self, path: str, recursive: bool) -> None:
        self._client.mkdirs(self._path(path), 0o755, recursive)

    def delete_dir(self, path: str) -> None:
        path = self._require(path, directory=True)
        if path == "/":
            raise PermissionError("refusing to delete the HDFS root directory")
        self._client.delete(path, True)

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        path = self._path(path)
        if path == "/":
            self.delete_root_dir_contents()
        status = self._stat(path)
        if status is None:
            if missing_dir_ok:
                return
            raise FileNotFoundError(f"HDFS directory {path} does not exist")
        if not status.isdir:
            raise NotADirectoryError(f"HDFS path {path} is a file, not a directory")
        for child, _ in list(self._children(path, False)):
            self._client.delete(child, True)

    def delete_root_dir_contents(self) -> None:
        raise PermissionError("refusing to delete everything under the HDFS root")

    # -- files ---------------------------------------------------------------------------------
    def _require(self, raw: str, *, directory: bool) -> str:
        path = self._path(raw)
        status = self._stat(path)
        if status is None:
            raise FileNotFoundError(f"HDFS path {path} does not exist")
        if directory and not status.isdir:
            raise NotADirectoryError(f"HDFS path {path} is a file, not a directory")
        if not directory and status.isdir:
            raise IsADirectoryError(f"HDFS path {path} is a directory")
        return path

    def delete_file(self, path: str) -> None:
        self._client.delete(self._require(path, directory=False), False)

    def move(self, src: str, dest: str) -> None:
        """Rename; like pyarrow's other filesystems, an existing destination *file* is replaced."""
        src_path, dest_path = self._path(src), self._path(dest)
        if self._stat(src_path) is None:
            raise FileNotFoundError(f"HDFS path {src_path} does not exist")
        dest_status = self._stat(dest_path)
        self._client.rename(src_path, dest_path, dest_status is not None and not dest_status.isdir)

    def copy_file(self, src: str, dest: str) -> None:
        src_path = self._require(src, directory=False)
        reader = self._client.read(src_path)
        writer = self._client.create(self._path(dest), _write_options())
        try:
            while chunk := reader.read(COPY_CHUNK):
                writer.write(chunk)
        except BaseException:
            writer.close()  # closing releases the lease; the partial copy is then removed
            self._client.delete(self._path(dest), False)
            raise
        else:
            writer.close()
        finally:
            reader.close()

    def open_input_stream(self, path: str) -> pa.NativeFile:
        return pa.PythonFile(self._client.read(self._path(path)), mode="r")

    def open_input_file(self, path: str) -> pa.NativeFile:
        # hdfs-native readers support seek/tell, which PythonFile needs for random access.
        return pa.PythonFile(self._client.read(self._path(path)), mode="r")

    def open_output_stream(self, path: str, metadata: Mapping[str, str] | None) -> pa.NativeFile:
        if metadata:
            log.debug("HDFS has no object metadata; ignoring %s for %s", sorted(metadata), path)
        return pa.PythonFile(self._client.create(self._path(path), _write_options()), mode="w")

    def open_append_stream(self, path: str, metadata: Mapping[str, str] | None) -> pa.NativeFile:
        return pa.PythonFile(self._client.append(self._path(path)), mode="w")


def _write_options() -> Any:
    """Overwrite and create missing parents: the semantics of pyarrow's open_output_stream."""
    from hdfs_native import WriteOptions  # start-up: hdfs-native is optional; only HDFS tiers import it

    return WriteOptions(overwrite=True, create_parent=True)


def hdfs_filesystem(uri: str, options: Mapping[str, str] | None = None) -> pafs.PyFileSystem:
    """A pyarrow filesystem for the namenode (or nameservice) of ``uri``.

    ``options`` are Hadoop configuration keys handed to hdfs-native (the same dict delta-rs gets
    as storage options), merged over ``$HADOOP_CONF_DIR``'s core-site/hdfs-site if present.
    """
    try:
        from hdfs_native import Client  # start-up: hdfs-native is optional; only HDFS tiers import it
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("HDFS tiers need the 'hdfs-native' package (pip install hdfs-native)") from exc
    location = parse_hdfs_uri(uri)
    client = Client(location.client_url, dict(options or {}))
    return pafs.PyFileSystem(HdfsHandler(client, location))
