"""What the start-up import hooks share (:mod:`storage.arrow_pandas`, :mod:`operators.numba_start_up`).

Each wraps one module's loader: it asks the other finders on ``sys.meta_path`` for that module's spec, as
the import system would have, and changes only what runs when the module is executed. Standard library only,
since the ``lineage`` command installs a hook before anything heavy is imported.
"""

from __future__ import annotations

import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType


def spec_elsewhere(
    this: object, name: str, path: Sequence[str] | None, target: ModuleType | None = None
) -> importlib.machinery.ModuleSpec | None:
    """The spec the finders on ``sys.meta_path`` other than ``this`` give for ``name`` (one with a loader)."""
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if finder is this or find is None:
            continue
        spec = find(name, path, target)
        if spec is not None and spec.loader is not None:
            return spec
    return None
