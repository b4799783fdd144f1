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


@njit(cache=True, nogil=True)
def _link_kernel(parent: np.ndarray, src: np.ndarray, dst: np.ndarray) -> None:
    for e in range(len(src)):
        ra, rb = _find(parent, src[e]), _find(parent, dst[e])
        if ra < rb:
            parent[rb] = ra
        elif rb < ra:
            parent[ra] = rb


@njit(cache=True)
def _components_kernel(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    parent = np.arange(n, dtype=np.int64)
    _link_kernel(parent, src, dst)
    for x in range(n):
        parent[x] = _find(parent, x)
    return parent


@njit(cache=True, nogil=True)
def _joined_kernel(parent: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    out = np.empty(len(src), dtype=np.bool_)
    for e in range(len(src)):
        out[e] = _find(parent, src[e]) == _find(parent, dst[e])
    return out


class Forest:
    """Union-find built edge batch by edge batch, for callers that decide which edges to link as they go
    (verification skips a candidate edge whose ends are joined already: it cannot change a component)."""

    def __init__(self, n: int) -> None:
        self.parent = np.arange(n, dtype=np.int64)

    def joined(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """Whether each edge's ends are in one tree already."""
        return _joined_kernel(self.parent, np.asarray(src, np.int64), np.asarray(dst, np.int64))

    def link(self, src: np.ndarray, dst: np.ndarray) -> None:
        _link_kernel(self.parent, np.asarray(src, np.int64), np.asarray(dst, np.int64))


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
