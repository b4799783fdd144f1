"""Union-find connected components of an edge list, as int arrays (no Python object per edge)."""

from __future__ import annotations

import numpy as np

from operators.minhash import small
from operators.minhash._jit import njit


@njit(cache=True)
def _find(parent: np.ndarray, x: int) -> int:
    while parent[x] != x:
        parent[x] = parent[parent[x]]  # path halving
        x = parent[x]
    return x


@njit(cache=True)
def _components_kernel(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    parent = np.arange(n, dtype=np.int64)
    for e in range(len(src)):
        ra, rb = _find(parent, src[e]), _find(parent, dst[e])
        if ra < rb:
            parent[rb] = ra
        elif rb < ra:
            parent[ra] = rb
    for x in range(n):
        parent[x] = _find(parent, x)
    return parent


def connected_components(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Component label of each node ``0..n-1``: the smallest node id in its component.

    Linking the larger root under the smaller makes labels independent of edge order, so every
    engine that feeds the same edge set gets the same labels.
    """
    src = np.ascontiguousarray(src, dtype=np.int64)
    dst = np.ascontiguousarray(dst, dtype=np.int64)
    if len(src) != len(dst):
        raise ValueError("src and dst differ in length")
    if len(src) and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n):
        raise ValueError(f"edge endpoints must be in [0, {n})")
    if small.suits(len(src) <= small.ROW_LIMIT, n <= 16 * small.ROW_LIMIT):
        return small.components(n, src, dst)
    return _components_kernel(n, src, dst)
