"""How a run reports progress: the protocol the engines speak and the CLI's bars listen to.

``progress(counter, n)``: ``n`` more of ``counter`` done (``files``, ``records``, then one counter per
step, ``step<i>.<operator>[.<phase>]``). ``progress(counter + TOTAL, n)``: the counter will reach ``n``,
sent once, before it counts, where the run knows it (the files of raw inputs, the records of dataset-version
inputs). This module imports nothing, so ``lineage --help`` can load it.
"""

from __future__ import annotations

from collections.abc import Callable

ProgressFn = Callable[[str, int], None]

TOTAL = ".total"


def no_progress(_name: str, _n: int) -> None:
    return None
