"""The open-addressing table the per-document repetition kernels count in (n-grams, lines, paragraphs).

One table is made per batch, sized for its largest document (a power of two, at least twice the entries
one document can add), and reused for every document: a slot's *owner* is the document number + 1, so
moving on to the next document empties the table without clearing it. Keys are 64-bit hashes; a slot is
found by linear probing from :func:`first_slot`. Each kernel keeps beside the keys what it counts.
"""

from __future__ import annotations

import numba
import numpy as np

_MIX = np.uint64(0x9E3779B97F4A7C15)


@numba.njit(cache=True, nogil=True)
def table(most):
    """``(keys, owners, hash shift)`` of a table for documents of at most ``most`` entries."""
    bits = 4
    while (1 << bits) < 2 * most:
        bits += 1
    size = 1 << bits
    return np.empty(size, np.uint64), np.zeros(size, np.int64), np.uint64(64 - bits)


@numba.njit(cache=True, nogil=True, inline="always")
def first_slot(key, shift):
    """Where probing for ``key`` starts: the high bits of a multiplicative hash of it."""
    return np.int64((key * _MIX) >> shift)
