"""``numba.njit``, deferred: numba is imported, and every kernel of this package made, at the first
call of any of them.

Importing numba and loading its target (0.4 s and 0.6-0.8 s of every ``lineage`` process that
deduplicates) is start-up a small input does not need: :mod:`operators.minhash.small` computes the
same values in numpy for it. So the kernels here are :class:`Kernel` objects until one is called.
Then all of them become numba dispatchers at once, and every module global that names one (a
kernel's callees are globals, and other packages' ``from ... import`` copies are too) is swapped for
its dispatcher before anything compiles. A kernel defined after that is a dispatcher straight away.
Caching (``cache=True``) is numba's own, keyed by the same functions and files as before.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

_pending: list[Kernel] = []
_lock = threading.RLock()
_made = False


class Kernel:
    """A function to be compiled by ``numba.njit(**options)``; calling it compiles every kernel."""

    def __init__(self, func: Callable[..., Any], options: dict[str, Any]) -> None:
        self.py_func, self.options = func, options
        self.dispatcher: Any = None
        self.__name__, self.__qualname__, self.__doc__ = func.__name__, func.__qualname__, func.__doc__
        self.__module__ = func.__module__

    def __call__(self, *args: Any) -> Any:
        if self.dispatcher is None:
            make_all()
        return self.dispatcher(*args)

    def __repr__(self) -> str:
        return f"<deferred numba kernel {self.__module__}.{self.__qualname__}>"


def njit(func: Callable[..., Any] | None = None, **options: Any) -> Any:
    """``numba.njit`` (with or without options), made at the first call of any kernel."""

    def wrap(f: Callable[..., Any]) -> Any:
        with _lock:
            if _made:
                import numba  # start-up: numba is loaded already here, by make_all

                return numba.njit(**options)(f)
            kernel = Kernel(f, options)
            _pending.append(kernel)
            return kernel

    return wrap(func) if func is not None else wrap


def make_all() -> None:
    """Import numba and turn every deferred kernel into its dispatcher (once; thread-safe)."""
    global _made
    with _lock:
        if _made:
            return
        import numba  # start-up: only when a kernel runs

        for kernel in _pending:
            kernel.dispatcher = numba.njit(**kernel.options)(kernel.py_func)
        for module in list(sys.modules.values()):
            names = getattr(module, "__dict__", None)
            if not isinstance(names, dict):
                continue
            for name, value in list(names.items()):
                if type(value) is Kernel:
                    names[name] = value.dispatcher
        _made = True


def made() -> bool:
    """Whether numba was loaded for the kernels (tests check a small input never does)."""
    return _made
