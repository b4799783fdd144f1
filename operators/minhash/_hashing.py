"""Integer mixing shared by the numba kernels.

All constants are typed ``np.uint64``: numba turns ``uint64 op int`` into float64.
Changing anything here changes stored signatures (bump ``SIGNATURE_FORMAT_VERSION``), and numba's
on-disk cache of the kernels that inline these functions does not notice: clear ``__pycache__``.
"""

from __future__ import annotations

import numpy as np

from operators.minhash._jit import njit

FNV_OFFSET = np.uint64(0xCBF29CE484222325)
FNV_PRIME = np.uint64(0x100000001B3)
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
MASK32 = np.uint64(0xFFFFFFFF)
_M1 = np.uint64(0xFF51AFD7ED558CCD)
_M2 = np.uint64(0xC4CEB9FE1A85EC53)
_S33 = np.uint64(33)


@njit(inline="always")
def fmix64(h: np.uint64) -> np.uint64:
    """MurmurHash3's 64-bit finaliser: a cheap bijection with full avalanche."""
    h ^= h >> _S33
    h *= _M1
    h ^= h >> _S33
    h *= _M2
    h ^= h >> _S33
    return h
