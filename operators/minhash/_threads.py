"""A bounded, ordered thread map for the package's batch loops.

The numba kernels are compiled ``nogil`` and Arrow's compute functions release the GIL, so batches of
shingling, verification sets or LSH bands run on both cores of a small machine.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def threads() -> int:
    """Threads per loop: the machine's cores, at most 4."""
    return max(1, min(4, os.cpu_count() or 1))


def ordered_map(fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
    """``map(fn, items)`` on :func:`threads` threads, in order, taking at most two items per thread
    from ``items`` ahead of the results (memory stays bounded)."""
    count = threads()
    with ThreadPoolExecutor(count, thread_name_prefix="minhash") as pool:
        pending: deque[Future[R]] = deque()
        for item in items:
            if len(pending) >= 2 * count:
                yield pending.popleft().result()
            pending.append(pool.submit(fn, item))
        while pending:
            yield pending.popleft().result()
