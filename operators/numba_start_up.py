"""numba's CPU target without SciPy's linear algebra, for a process that runs one short command.

numba loads its CPU target at the first call of a compiled kernel. One module it imports then,
``numba.np.arraymath``, probes for a BLAS as it is imported, by importing ``scipy.linalg.cython_blas``. With
SciPy installed (most ML environments have it; here the ``[dev]`` extra's datasketch brings it) that imports
the whole of ``scipy.linalg``, and through it ``numpy.f2py`` and ``numpy.testing``: 0.13 s of one core with
the GIL held, on the critical path of every ``lineage`` command whose kernels load. In a ``lineage dedupe`` of
20,000 documents the sketcher thread waits for it while the main thread needs the GIL to convert.

The probe's answer decides one thing: whether the inner products numba builds for ``np.correlate`` and
``np.convolve`` of floats call BLAS or run a loop. numba's linear algebra proper (``np.dot``,
``np.linalg.*``) imports ``scipy.linalg.cython_blas`` itself when a function that uses it compiles, so it
works as before. Our kernels use neither.

:func:`skip_blas_probe` puts a finder first on ``sys.meta_path``. It waits for ``numba.np.arraymath`` to be
imported, refuses ``scipy.linalg`` (and its submodules) while that module's own code runs, and leaves
``sys.meta_path`` when the module is done; from then on SciPy imports as always. If SciPy's linear algebra or
numba's target is imported already, it does nothing. Only the ``lineage`` command does this, where no code
of ours uses SciPy; a library user's process and the tests' in-process runs are left as numba makes them.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType

from storage.import_hooks import spec_elsewhere

_PROBING_MODULE = "numba.np.arraymath"
_PROBED = "scipy.linalg"


class _SkipBlasProbe(importlib.abc.MetaPathFinder):
    """Wraps the loader of :data:`_PROBING_MODULE`; refuses :data:`_PROBED` while that module runs."""

    def __init__(self) -> None:
        self.probing = False

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if self.probing and (name == _PROBED or name.startswith(_PROBED + ".")):
            raise ModuleNotFoundError(f"{name} is not imported for numba's BLAS probe", name=name)
        if name != _PROBING_MODULE:
            return None
        spec = spec_elsewhere(self, name, path, target)
        if spec is None or spec.loader is None:
            return None
        run = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            self.probing = True
            try:
                run(module)
            finally:
                self.probing = False
                if self in sys.meta_path:
                    sys.meta_path.remove(self)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]  (this import's loader only)
        return spec


def skip_blas_probe() -> bool:
    """Install the finder (once). Returns whether numba's probe will be skipped."""
    if _PROBING_MODULE in sys.modules or _PROBED in sys.modules:
        return False
    if not any(isinstance(f, _SkipBlasProbe) for f in sys.meta_path):
        sys.meta_path.insert(0, _SkipBlasProbe())
    return True
