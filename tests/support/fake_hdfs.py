"""An in-memory stand-in for ``hdfs_native.Client`` (for tests), faithful to what the handler uses.

It follows hdfs-native's conventions: absolute paths, ``FileNotFoundError`` for missing paths,
``list_status`` returning absolute child paths, readers with seek/tell/read, writers that only
publish their bytes on ``close()`` (the NameNode completes the file then).
"""

from __future__ import annotations

import io
import posixpath
import time
from dataclasses import dataclass
from typing import Any


@dataclass
class FakeStatus:
    path: str
    length: int
    isdir: bool
    modification_time: int


class FakeWriter:
    def __init__(self, client: FakeHdfsClient, path: str, initial: bytes = b"") -> None:
        self._client, self._path, self._buf = client, path, bytearray(initial)
        self.closed = False

    def write(self, buf: Any) -> int:
        assert not self.closed, "write after close"
        data = bytes(buf)
        self._buf += data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._client.files[self._path] = bytes(self._buf)
            self._client.mtimes[self._path] = int(time.time() * 1000)


class FakeReader(io.BytesIO):
    """Like hdfs_native.FileReader: seekable, read(n), and close() is harmless."""


class FakeHdfsClient:
    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.dirs: set[str] = {"/"}
        self.mtimes: dict[str, int] = {}
        self.calls: list[tuple[str, ...]] = []

    # helpers ------------------------------------------------------------------------------------
    def _check(self, path: str) -> None:
        assert path.startswith("/") and ".." not in path.split("/"), f"handler sent a bad path {path!r}"

    def _exists(self, path: str) -> bool:
        return path in self.files or path in self.dirs

    def _children(self, path: str) -> list[str]:
        prefix = path.rstrip("/") + "/"
        names = {p for p in (*self.files, *self.dirs) if p.startswith(prefix) and p != prefix}
        return sorted(n for n in names if "/" not in n[len(prefix) :])

    # hdfs_native.Client surface ---------------------------------------------------------------
    def get_file_info(self, path: str) -> FakeStatus:
        self._check(path)
        self.calls.append(("get_file_info", path))
        if path in self.dirs:
            return FakeStatus(path, 0, True, self.mtimes.get(path, 0))
        if path in self.files:
            return FakeStatus(path, len(self.files[path]), False, self.mtimes.get(path, 0))
        raise FileNotFoundError(path)

    def list_status(self, path: str, recursive: bool = False) -> list[FakeStatus]:
        self._check(path)
        self.calls.append(("list_status", path))
        if path in self.files:
            return [self.get_file_info(path)]
        if path not in self.dirs:
            raise FileNotFoundError(path)
        out = []
        for child in self._children(path):
            out.append(self.get_file_info(child))
            if recursive and child in self.dirs:
                out.extend(self.list_status(child, True))
        return out

    def read(self, path: str) -> FakeReader:
        self._check(path)
        if path in self.dirs:
            raise IsADirectoryError(path)
        if path not in self.files:
            raise FileNotFoundError(path)
        return FakeReader(self.files[path])

    def create(self, path: str, write_options: Any = None) -> FakeWriter:
        self._check(path)
        overwrite = bool(getattr(write_options, "overwrite", False))
        create_parent = bool(getattr(write_options, "create_parent", False))
        if path in self.dirs:
            raise IsADirectoryError(path)
        if path in self.files and not overwrite:
            raise FileExistsError(path)
        parent = posixpath.dirname(path)
        if parent not in self.dirs:
            if not create_parent:
                raise FileNotFoundError(parent)
            self.mkdirs(parent, 0o755, True)
        return FakeWriter(self, path)

    def append(self, path: str) -> FakeWriter:
        self._check(path)
        if path not in self.files:
            raise FileNotFoundError(path)
        return FakeWriter(self, path, self.files[path])

    def mkdirs(self, path: str, permission: int = 0o755, create_parent: bool = False) -> None:
        self._check(path)
        if path in self.files:
            raise FileExistsError(path)
        parent = posixpath.dirname(path)
        if parent not in self.dirs:
            if not create_parent:
                raise FileNotFoundError(parent)
            self.mkdirs(parent, permission, True)
        self.dirs.add(path)

    def rename(self, src: str, dst: str, overwrite: bool = False) -> None:
        self._check(src)
        self._check(dst)
        self.calls.append(("rename", src, dst, str(overwrite)))
        if not self._exists(src):
            raise FileNotFoundError(src)
        if self._exists(dst) and not overwrite:
            raise FileExistsError(dst)
        if posixpath.dirname(dst) not in self.dirs:
            raise FileNotFoundError(posixpath.dirname(dst))
        for table in (self.files, self.mtimes):
            for p in [p for p in table if p == src or p.startswith(src + "/")]:
                table[dst + p[len(src) :]] = table.pop(p)
        for p in [p for p in self.dirs if p == src or p.startswith(src + "/")]:
            self.dirs.remove(p)
            self.dirs.add(dst + p[len(src) :])

    def delete(self, path: str, recursive: bool = False) -> bool:
        self._check(path)
        self.calls.append(("delete", path, str(recursive)))
        if path in self.files:
            del self.files[path]
            return True
        if path not in self.dirs:
            return False
        if self._children(path) and not recursive:
            raise OSError(f"{path} is not empty")
        for p in [p for p in self.files if p.startswith(path + "/")]:
            del self.files[p]
        self.dirs = {d for d in self.dirs if not (d == path or d.startswith(path + "/"))}
        return True


class FakeRawReader:
    """Shaped like hdfs-native's Rust ``RawFileReader`` (what ``hdfs_native.FileReader`` wraps)."""

    def __init__(self, data: bytes) -> None:
        self._data, self._pos = data, 0

    def file_length(self) -> int:
        return len(self._data)

    def seek(self, pos: int) -> None:
        self._pos = pos

    def tell(self) -> int:
        return self._pos

    def read(self, len: int) -> bytes:  # noqa: A002 - the real signature
        """Up to ``len`` bytes from the cursor; a negative ``len`` reads to the end."""
        size = self.file_length()
        end = size if len < 0 else min(self._pos + len, size)
        out = self._data[self._pos : end]
        self._pos = max(self._pos, end)
        return out

    def read_range(self, offset: int, len: int) -> bytes:  # noqa: A002
        return self._data[offset : offset + len]


class FakeRawClient(FakeHdfsClient):
    """Shaped like hdfs-native's Rust ``RawClient``, to sit under the real ``hdfs_native.Client``.

    Then the real Python layer of hdfs-native (``Client``, ``FileReader``, ``FileWriter``,
    ``WriteOptions``) runs between pyarrow and this in-memory namespace.
    """

    def read(self, path: str) -> FakeRawReader:  # type: ignore[override]
        return FakeRawReader(super().read(path).getvalue())


def real_client_over_fake() -> tuple[Any, FakeRawClient]:
    """A genuine ``hdfs_native.Client`` whose Rust core is replaced by :class:`FakeRawClient`."""
    from hdfs_native import Client

    raw = FakeRawClient()
    client = Client.__new__(Client)
    client.inner = raw
    return client, raw
