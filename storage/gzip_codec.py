"""gzip streams, read and written with ISA-L (python-isal) rather than the standard library's zlib.

Every ``.gz`` input that convert reads is inflated here, and ``lineage dedupe`` both inflates its
input and deflates the kept records. On this project's 2-core machine, for the 254,724-document
benchmark file (39 MB compressed, 171 MB of JSONL), ISA-L inflates it in 0.16-0.20 s against
zlib's 0.37-0.41 s, and deflates 64 MB of it at level 2 in 0.13 s against zlib level 1's 0.63 s,
to output 3% smaller. Both release the GIL, as zlib does, so blocks compress on two threads.

The streams are plain gzip (RFC 1952): any reader decodes what is written here, and anything
gzip writes is read here. ``decompressor()`` returns a zlib-style object (``decompress``, ``eof``,
``unused_data``); damage raises one of :data:`ERRORS`.
"""

from __future__ import annotations

import zlib
from typing import Any

from isal import igzip, isal_zlib

#: What inflating a damaged stream raises (ISA-L's own error; zlib's for the odd caller using it).
ERRORS: tuple[type[Exception], ...] = (isal_zlib.error, zlib.error)

#: ISA-L levels run 0-3. Level 2 writes less than zlib's level 1 at a fifth of its time (figures above).
LEVEL = 2


def decompressor() -> Any:
    """A decompress object for one gzip member (make a new one for the next member)."""
    return isal_zlib.decompressobj(wbits=31)


def member(data: bytes, level: int = LEVEL) -> bytes:
    """``data`` as one whole gzip member, with no file name and a zero time: the same bytes give the
    same member."""
    return igzip.compress(data, level, mtime=0)
