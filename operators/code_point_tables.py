"""Per-code-point tables (one value for each of the 1.1M Unicode code points), built once and kept on disk.

Building such a table asks ``unicodedata`` or ``str`` about every code point, 0.25–1.3 s of Python,
which every ``lineage`` process that shingles or checks quality paid at start-up. :func:`cached` builds
a table once per Unicode version and per content of the module that defines it (``salt``: a change to
its character lists is a new file, never a stale table), keeps it as a file beside numba's kernel
cache (``NUMBA_CACHE_DIR``, else this package's ``__pycache__``, as numba does by default), and loads it
in about a millisecond. Boolean tables are stored as packed bits. The file is written under a
temporary name and renamed, so a concurrent reader sees the old file or the whole new one; a file that
cannot be read, or has the wrong size, only costs the rebuild.
"""

from __future__ import annotations

import contextlib
import os
import sys
import unicodedata
from collections.abc import Callable
from pathlib import Path

import numpy as np
import xxhash

SIZE = sys.maxunicode + 1


def cached(name: str, dtype: type, build: Callable[[], np.ndarray], salt: bytes = b"") -> np.ndarray:
    """The table ``build()`` returns (``SIZE`` values of ``dtype``), read-only, from its file when there is one."""
    path = cache_file(name, salt)
    table: np.ndarray | None = None
    with contextlib.suppress(OSError, ValueError):
        table = _decode(path.read_bytes(), np.dtype(dtype))
    if table is None:
        table = np.asarray(build(), dtype=dtype)
        assert table.shape == (SIZE,), (name, table.shape)
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
            partial.write_bytes(np.packbits(table).tobytes() if table.dtype == np.bool_ else table.tobytes())
            partial.replace(path)
    table.setflags(write=False)
    return table


def cache_file(name: str, salt: bytes = b"") -> Path:
    """Where table ``name`` is kept: named by the Unicode version of Python's tables and the salt's digest."""
    folder = Path(os.environ.get("NUMBA_CACHE_DIR") or Path(__file__).resolve().parent / "__pycache__")
    version = f"unicode{unicodedata.unidata_version}-{sys.maxunicode:x}"
    if salt:
        version += f"-{xxhash.xxh3_64_hexdigest(salt)}"
    return folder / f"{name}-{version}.table"


def _decode(data: bytes, dtype: np.dtype) -> np.ndarray | None:
    if dtype == np.bool_:
        if len(data) != (SIZE + 7) // 8:
            return None
        return np.unpackbits(np.frombuffer(data, dtype=np.uint8), count=SIZE).astype(np.bool_)
    if len(data) != SIZE * dtype.itemsize:
        return None
    return np.frombuffer(data, dtype=dtype)  # read-only, as every table is
