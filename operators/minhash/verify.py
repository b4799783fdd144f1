"""Jaccard of document pairs: estimated from signatures, or exact from shingle-hash sets.

Verification removes the false positives that recall-leaning LSH bands let in, before pairs
become cluster edges.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from operators.minhash import small
from operators.minhash._jit import njit
from operators.threads import ordered_map, threads

# pairs from which exact Jaccard is computed on every core (below, one thread's work is a few ms)
_PARALLEL_PAIRS = 1 << 16


@njit(cache=True, nogil=True)
def _estimate_kernel(sigs: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    out = np.empty(len(src), dtype=np.float64)
    num_perm = sigs.shape[1]
    for e in range(len(src)):
        a, b = sigs[src[e]], sigs[dst[e]]
        same = 0
        for k in range(num_perm):
            same += a[k] == b[k]
        out[e] = same / num_perm
    return out


def estimated_jaccard(sigs: np.ndarray, src: np.ndarray, dst: np.ndarray, num_perm: int | None = None) -> np.ndarray:
    """Share of equal signature values per pair, as ``datasketch.MinHash.jaccard`` computes it.

    Of ``script="mixed"`` signatures (``2 * num_perm`` wide; pass ``num_perm``): by the character
    halves when both documents have one, else by the stream halves.
    """
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    if num_perm is not None and sigs.shape[1] == 2 * num_perm:
        out = estimated_jaccard(sigs[:, :num_perm], src, dst)
        has_chars = (sigs[:, num_perm:] != np.uint32(0xFFFFFFFF)).any(axis=1)
        both = np.flatnonzero(has_chars[src] & has_chars[dst])
        if len(both):
            out[both] = estimated_jaccard(sigs[:, num_perm:], src[both], dst[both])
        return out
    sigs = np.ascontiguousarray(sigs)
    if small.suits(len(src) <= small.ROW_LIMIT):
        return small.estimated(sigs, src, dst)
    return _estimate_kernel(sigs, src, dst)


@njit(cache=True, nogil=True)
def _sorted_sets_kernel(hashes: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    out = np.empty(len(hashes), dtype=hashes.dtype)
    out_offsets = np.zeros(len(offsets), dtype=np.int64)
    pos = 0
    for d in range(len(offsets) - 1):
        seg = np.sort(hashes[offsets[d] : offsets[d + 1]])
        for i in range(len(seg)):
            if i == 0 or seg[i] != seg[i - 1]:
                out[pos] = seg[i]
                pos += 1
        out_offsets[d + 1] = pos
    return out[:pos], out_offsets


@njit(cache=True, nogil=True)
def _exact_kernel(sets: np.ndarray, offsets: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    out = np.empty(len(src), dtype=np.float64)
    for e in range(len(src)):
        i, i_end = offsets[src[e]], offsets[src[e] + 1]
        j, j_end = offsets[dst[e]], offsets[dst[e] + 1]
        size = (i_end - i) + (j_end - j)
        common = 0
        while i < i_end and j < j_end:
            if sets[i] == sets[j]:
                common += 1
                i += 1
                j += 1
            elif sets[i] < sets[j]:
                i += 1
            else:
                j += 1
        union = size - common
        out[e] = common / union if union else 1.0
    return out


def sorted_sets(hashes: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-document sorted, deduplicated shingle hashes, in the same flat layout."""
    hashes, offsets = np.ascontiguousarray(hashes), np.asarray(offsets, dtype=np.int64)
    if small.suits(len(hashes) <= small.HASH_LIMIT, len(offsets) <= small.ROW_LIMIT):
        return small.sorted_sets(hashes, offsets)
    return _sorted_sets_kernel(hashes, offsets)


def exact_jaccard(sets: np.ndarray, set_offsets: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Jaccard of the shingle-hash sets of each pair; ``sets`` as :func:`sorted_sets` returns.

    Exact up to 32-bit shingle-hash collisions (about 2^-32 per pair of distinct shingles).
    """
    set_offsets = np.asarray(set_offsets, dtype=np.int64)
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    if small.suits(len(src) <= small.ROW_LIMIT):
        return small.exact(sets, set_offsets, src, dst)
    parts = threads() if len(src) >= _PARALLEL_PAIRS else 1
    if parts == 1:
        return _exact_kernel(sets, set_offsets, src, dst)
    # the kernel releases the GIL: the pairs in equal slices, one per core (the cluster step's other
    # core is idle by then); each pair's value is its own, so the result does not depend on the cut
    cuts = np.linspace(0, len(src), parts + 1).astype(np.int64)
    slices = zip(cuts[:-1], cuts[1:], strict=True)
    done = ordered_map(
        lambda cut: _exact_kernel(sets, set_offsets, src[cut[0] : cut[1]], dst[cut[0] : cut[1]]), slices, parts
    )
    return np.concatenate(list(done))


@dataclass(frozen=True)
class ShingleSets:
    """Rows' sorted shingle-hash sets as :func:`sorted_sets` lays them out, and whether each row has a CJK
    character (``shingle_hashes``'s flag). Row ``i``'s set is set ``rows[i]`` (set ``i`` when ``rows`` is
    None): :meth:`taken` reorders the rows without copying a set."""

    sets: np.ndarray
    offsets: np.ndarray
    cjk: np.ndarray
    rows: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.rows) if self.rows is not None else len(self.cjk)

    def index(self) -> np.ndarray:
        """Each row's set number."""
        return self.rows if self.rows is not None else np.arange(len(self.cjk), dtype=np.int64)

    def taken(self, order: np.ndarray) -> ShingleSets:
        """Row ``i`` of the result is row ``order[i]`` of these."""
        return replace(self, rows=self.index()[order])
