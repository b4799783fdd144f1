"""The Arrow memory pool the training reader decodes and gathers into.

A reader allocates, and then frees, a window of tens of MB of columns again and again. jemalloc
keeps freed pages for reuse; mimalloc (pyarrow's default on Linux) hands them back to the OS and
pays page faults to get them back: with eight ranks on a node that was over a third of their CPU
time. The pool is the reader's own; the process's default pool is left alone. (Parquet's page
decompression still allocates from the default pool: pyarrow gives no way to change that short
of ``ARROW_DEFAULT_MEMORY_POOL=jemalloc`` in the training job's environment, which helps more.)
"""

from __future__ import annotations

import functools
import logging

import pyarrow as pa

log = logging.getLogger(__name__)

_BACKENDS = {"jemalloc": pa.jemalloc_memory_pool, "mimalloc": pa.mimalloc_memory_pool, "system": pa.system_memory_pool}


@functools.cache
def reader_pool(name: str) -> pa.MemoryPool:
    """The pool named ``name`` ("jemalloc", "mimalloc", "system" or "default"); pyarrow's default
    pool when this build of pyarrow lacks that backend."""
    if name == "default":
        return pa.default_memory_pool()
    try:
        return _BACKENDS[name]()
    except NotImplementedError:
        log.info("pyarrow has no %s memory pool; the reader uses the default pool", name)
        return pa.default_memory_pool()
