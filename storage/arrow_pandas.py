"""pyarrow without pandas until pandas is imported: for a process that runs one short command.

pyarrow imports pandas the first time it converts Python values (``pa.array(list)``, ``pa.scalar(x)``,
``Table.from_pylist``) or makes a NumPy array (``Array.to_numpy``): its Python layer to ask whether a value
is a pandas object, its C++ layer to learn pandas' sentinels (``pd.NA``, ``NaT``, ``Timestamp``). That is
0.11-0.14 s on the 2-core VM (apache/arrow#34994), a tenth of a ``lineage takedown apply`` and a fifth of
a ``lineage dedupe`` of a small file, in a process that never holds a pandas object.

:func:`defer_pandas`, called once pyarrow is imported:

1. If pandas is imported already, it does nothing.
2. While a finder refuses ``import pandas``, it asks both layers once: the Python shim
   (``pyarrow.lib._pandas_api``) records "no pandas", and the C++ layer's one-time set-up runs and finds
   none. Neither asks again, so converting values no longer imports pandas. The finder is gone before
   the call returns: from then on pandas imports as always.
3. Another finder waits for a real ``import pandas`` (a library, the Spark or Ray engine, user code). Once
   pandas' module has run, the shim is asked in the way that imports (``compat``), so pyarrow's Python
   layer knows pandas objects again (``pa.array(series)``, ``Table.from_pandas``, ``to_pandas``) before
   anyone can hand it one.

What stays different in such a process: the C++ layer's sentinels are set up once per process, so
``pd.NA`` and ``pd.Timestamp`` *inside a Python list or object column* convert as if pandas were absent:
``pd.NA`` is refused with an error, and a ``Timestamp`` converted to a nanosecond type keeps only its
microseconds. NumPy-backed and nullable pandas columns convert as before. Only the ``lineage`` command does
this, where no code of ours makes pandas objects; a library user's process, the HTTP server and the tests'
in-process runs are left as pyarrow made them.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import logging
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import pyarrow as pa

from storage.import_hooks import spec_elsewhere

log = logging.getLogger(__name__)

_PANDAS = "pandas"


def _shim() -> Any | None:
    """pyarrow's pandas shim, a private object: None in a pyarrow without it, which is then left alone."""
    return getattr(pa.lib, "_pandas_api", None)


class _Refuse(importlib.abc.MetaPathFinder):
    """Refuses ``import pandas`` while pyarrow's two layers are asked (step 2)."""

    def find_spec(self, name: str, path: Sequence[str] | None, target: ModuleType | None = None) -> None:
        if name == _PANDAS:
            raise ModuleNotFoundError("pandas is deferred while pyarrow is asked about it", name=name)


class _TellPyarrow(importlib.abc.MetaPathFinder):
    """Finds pandas with the other finders, and has its loader tell pyarrow once pandas' module has run
    (step 3). It leaves ``sys.meta_path`` at the first ``import pandas``."""

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if name != _PANDAS:
            return None
        sys.meta_path.remove(self)
        spec = spec_elsewhere(self, name, path, target)
        if spec is None or spec.loader is None:
            return None
        loader = spec.loader
        run = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run(module)
            if (shim := _shim()) is not None:
                shim.compat  # noqa: B018  (the access imports: the shim finds pandas)

        loader.exec_module = exec_module  # type: ignore[method-assign]  (this import's loader only)
        return spec


def defer_pandas() -> bool:
    """Steps 2 and 3 of the module's protocol, unless pandas is imported already or they were done before.
    Returns whether pyarrow now converts without importing pandas."""
    if _PANDAS in sys.modules or any(isinstance(f, _TellPyarrow) for f in sys.meta_path):
        return _PANDAS not in sys.modules
    shim = _shim()
    if shim is None:
        log.debug("pyarrow %s has no pandas shim where this module looks: pandas is not deferred", pa.__version__)
        return False
    refuse = _Refuse()
    sys.meta_path.insert(0, refuse)
    try:
        found = shim.have_pandas  # the Python shim
        pa.scalar(0)  # a type to infer: the C++ layer's one-time pandas set-up
    finally:
        sys.meta_path.remove(refuse)
    if found:  # the shim had imported pandas before (it keeps its own module, not sys.modules')
        return False
    sys.meta_path.insert(0, _TellPyarrow())
    return True
