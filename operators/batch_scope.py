"""Per-thread memos that live for one batch's pass through a pipeline's fused map steps.

An operator may keep what it computed for a batch for the next step of the same pass (the quality rule
sets' tokens, :mod:`operators.quality.token_reuse`). The engines' one map loop
(:func:`pipelines.stages.run_maps`) runs each pass inside :func:`one_pass`, which clears them at its end,
so no thread holds a batch after its pass: a server's or an executor's long-lived threads would otherwise
keep their last one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

_clears: list[Callable[[], None]] = []


def cleared_after_each_pass(clear: Callable[[], None]) -> None:
    """``clear`` (of the calling thread's memo) runs at the end of every :func:`one_pass`."""
    _clears.append(clear)


@contextmanager
def one_pass() -> Iterator[None]:
    try:
        yield
    finally:
        for clear in _clears:
            clear()
