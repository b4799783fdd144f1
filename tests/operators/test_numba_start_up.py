"""numba's BLAS probe skipped at start-up (``operators/numba_start_up.py``), each case in a fresh interpreter:
what a process imported before is the point of the test."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

_KERNEL_CALL = """
import numba, numpy as np
@numba.njit
def total(a):
    return a.sum()
assert total(np.arange(4)) == 6  # the first call loads numba's CPU target
"""


def _run(*parts: str) -> dict:
    code = "\n".join(textwrap.dedent(part) for part in parts)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_numba_loads_its_target_without_scipy_linalg_and_linear_algebra_still_works() -> None:
    found = _run(
        """
        import json, sys
        from operators.numba_start_up import _SkipBlasProbe, skip_blas_probe
        installed = skip_blas_probe()
        """,
        _KERNEL_CALL,
        """
        after_load = "scipy.linalg" in sys.modules
        finder_left = not any(isinstance(f, _SkipBlasProbe) for f in sys.meta_path)
        @numba.njit
        def algebra(a, b):
            return np.dot(a, b), np.linalg.inv(a)
        a = np.array([[2.0, 1.0], [1.0, 3.0]])
        dot, inv = algebra(a, a)
        @numba.njit
        def correlate(a, b):
            return np.correlate(a, b)
        x, y = np.arange(7.0), np.array([0.5, -1.0, 2.0])
        print(json.dumps({
            "installed": installed, "after_load": after_load, "finder_left": finder_left,
            "dot": bool(np.allclose(dot, a @ a)), "inv": bool(np.allclose(inv, np.linalg.inv(a))),
            "correlate": bool(np.allclose(correlate(x, y), np.correlate(x, y))),
            "scipy_linalg_then": "scipy.linalg" in sys.modules,
        }))
        """,
    )
    assert found == {
        "installed": True,
        "after_load": False,  # the probe was skipped
        "finder_left": True,
        "dot": True,
        "inv": True,
        "correlate": True,
        "scipy_linalg_then": True,  # numba's linear algebra imported it when it compiled
    }


def test_without_the_skip_numba_imports_scipy_linalg_for_its_probe() -> None:
    """The cost the module avoids is real in this environment (SciPy is installed: the [dev] extra)."""
    found = _run("import json, sys", _KERNEL_CALL, 'print(json.dumps("scipy.linalg" in sys.modules))')
    assert found is True


def test_scipy_linalg_imported_first_is_left_alone() -> None:
    found = _run(
        """
        import json, sys
        import scipy.linalg
        from operators.numba_start_up import _SkipBlasProbe, skip_blas_probe
        print(json.dumps([skip_blas_probe(), any(isinstance(f, _SkipBlasProbe) for f in sys.meta_path)]))
        """
    )
    assert found == [False, False]
