"""The process's Arrow memory pool: the allocator every Arrow buffer (Parquet pages, tables, compute results)
comes from, chosen once per process by the setting ``arrow_memory_pool``.

Why not Arrow's default (mimalloc since pyarrow 13): our work allocates and frees buffers of several MiB at a
steady rate (a file read whole, filtered and rewritten; batches decoded, sketched and written), and mimalloc
hands such pages back to the kernel soon after they are freed, then faults them in again for the next
buffer. jemalloc keeps them for a while (its decay, 1 s by default in Arrow's build). Measured in one
session on the 2-core CI VM, 6 runs per pool: a ``lineage takedown apply`` of 1,000 samples in 17 files of a
5M-sample release rewrote them in 0.39–0.41 s with jemalloc, against 0.41–0.57 s with mimalloc (also
0.41–0.47 s with mimalloc's purge delayed), with 0.20–0.26 s of system time against 0.25–0.56 s and a peak
RSS of 260–275 MB against 376–396 MB. ``lineage dedupe`` of 254,724 documents ran in the same time with
either pool, its peak RSS 725 MB against 850 MB.

A user's ``ARROW_DEFAULT_MEMORY_POOL`` (Arrow's own variable, read when pyarrow loads) wins over the setting:
it is the one way to choose a pool for processes we do not start, and should mean the same in ours.
"""

from __future__ import annotations

import logging
import os

import pyarrow as pa

from storage.config import PoolName

log = logging.getLogger(__name__)

_POOLS = {"jemalloc": pa.jemalloc_memory_pool, "mimalloc": pa.mimalloc_memory_pool, "system": pa.system_memory_pool}


def use_memory_pool(name: PoolName) -> str:
    """Make ``name`` the pool of every Arrow allocation from now on (``arrow-default``: leave Arrow's choice),
    unless ``ARROW_DEFAULT_MEMORY_POOL`` is set. A pool this pyarrow build lacks leaves the default in
    place. Returns the backend in use."""
    if name != "arrow-default" and not os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        try:
            pool = _POOLS[name]()
        except NotImplementedError:  # a build without it (jemalloc is not in every platform's wheels)
            log.debug("pyarrow has no %s memory pool; keeping %s", name, pa.default_memory_pool().backend_name)
        else:
            if pa.default_memory_pool().backend_name != pool.backend_name:
                pa.set_memory_pool(pool)
    return pa.default_memory_pool().backend_name
