"""A bounded, ordered thread map for batch loops whose work releases the GIL.

numba kernels compiled ``nogil`` and Arrow's compute functions release the GIL, so batches of
MinHash shingling, verification sets or LSH bands, and the batches of a pipeline's map steps
(:attr:`operators.base.MapOperator.concurrent`), run on every core of a small machine.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def threads() -> int:
    """Threads per loop: the machine's cores, at most 4."""
    return max(1, min(4, os.cpu_count() or 1))


def ordered_map(fn: Callable[[T], R], items: Iterable[T], workers: int | None = None) -> Iterator[R]:
    """``map(fn, items)`` on ``workers`` threads (default :func:`threads`), in order, taking at most two
    items per thread from ``items`` ahead of the results (memory stays bounded). ``items`` is
    iterated on the caller's thread."""
    count = max(1, workers or threads())
    with ThreadPoolExecutor(count, thread_name_prefix="batches") as pool:
        pending: deque[Future[R]] = deque()
        for item in items:
            if len(pending) >= 2 * count:
                yield pending.popleft().result()
            pending.append(pool.submit(fn, item))
        while pending:
            yield pending.popleft().result()


# the interpreter's default is 5 ms
_HANDOVER_S = 0.0002


@contextlib.contextmanager
def quick_handover() -> Iterator[None]:
    """The GIL's switch interval shortened to 0.2 ms inside the block (the process's setting: restored after).

    A thread that runs many short GIL-free calls (kernels, Arrow compute) needs the GIL back after
    each one; while another thread runs Python, every hand-back waited for that thread's 5 ms slice.
    ``lineage dedupe`` sketches on a second thread while the first builds samples: in process, on
    254k documents, its convert and dedupe took 8.5 s with this against 10.0 s without.
    """
    before = sys.getswitchinterval()
    sys.setswitchinterval(_HANDOVER_S)
    try:
        yield
    finally:
        sys.setswitchinterval(before)
