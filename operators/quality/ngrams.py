"""Word n-gram repetition statistics (Gopher, Rae et al. 2021), one numba pass per batch.

* ``top_ngram_chars``: characters covered by the most frequent n-gram, ``len(" ".join(gram)) *
  count``; on ties, the n-gram seen first (as ``Counter.most_common`` in datatrove).
* ``duplicate_ngram_chars``: characters of n-grams that repeat an earlier n-gram, scanning left to
  right and jumping past a repeat (datatrove's ``find_all_duplicate``); n-grams are compared as
  their concatenated text, so hashes combine per-token polynomial hashes.

N-grams are identified by 64-bit hashes; a collision would need ~2^32 distinct n-grams in one
document to become likely.
"""

from __future__ import annotations

import numba
import numpy as np

from operators.quality.open_table import first_slot, table
from operators.quality.tokenize import Tokens

_BASE = np.uint64(0x100000001B3)
_MIX = np.uint64(0x9E3779B97F4A7C15)


@numba.njit(cache=True, nogil=True)
def _poly_hashes(cps, starts, ends):
    """Per token: polynomial hash of its code points and ``_BASE ** length``."""
    h = np.empty(len(starts), dtype=np.uint64)
    p = np.empty(len(starts), dtype=np.uint64)
    for t in range(len(starts)):
        acc = np.uint64(0)
        pw = np.uint64(1)
        for i in range(starts[t], ends[t]):
            acc = acc * _BASE + np.uint64(cps[i]) + np.uint64(1)
            pw = pw * _BASE
        h[t] = acc
        p[t] = pw
    return h, p


@numba.njit(cache=True, nogil=True)
def _longest(offsets):
    """The most tokens (so n-grams) one document of the batch has."""
    longest = 1
    for d in range(len(offsets) - 1):
        longest = max(longest, offsets[d + 1] - offsets[d])
    return longest


@numba.njit(cache=True, nogil=True, inline="always")
def _slot(keys, owners, owner, g, shift):
    """The slot holding ``g`` in ``owner``'s table, or the empty slot where it goes."""
    mask = len(keys) - 1
    i = first_slot(g, shift)
    while owners[i] == owner and keys[i] != g:
        i = (i + 1) & mask
    return i


@numba.njit(cache=True, nogil=True)
def _top_ngram_chars(hashes, lengths, offsets, n):
    n_docs = len(offsets) - 1
    out = np.full(n_docs, np.nan)
    keys, owners, shift = table(_longest(offsets))
    counts = np.empty(len(keys), np.int64)
    firsts = np.empty(len(keys), np.int64)
    for d in range(n_docs):
        a = offsets[d]
        m = offsets[d + 1] - a - n + 1
        if m <= 0:
            continue
        owner = d + 1
        best_count = 0
        best_first = m
        for i in range(m):
            g = np.uint64(n)
            for j in range(n):
                g = (g ^ hashes[a + i + j]) * _MIX
                g ^= g >> np.uint64(29)
            s = _slot(keys, owners, owner, g, shift)
            if owners[s] != owner:
                owners[s], keys[s], counts[s], firsts[s] = owner, g, 0, i
            counts[s] += 1
            # the most frequent n-gram, ties to the one seen first: a count only grows, so checking each
            # n-gram as it is counted ends on the same one as comparing final counts
            if counts[s] > best_count or (counts[s] == best_count and firsts[s] < best_first):
                best_count, best_first = counts[s], firsts[s]
        chars = n - 1
        for j in range(n):
            chars += lengths[a + best_first + j]
        out[d] = chars * best_count
    return out


@numba.njit(cache=True, nogil=True)
def _duplicate_ngram_chars(poly, powers, lengths, offsets, n):
    n_docs = len(offsets) - 1
    out = np.zeros(n_docs)
    keys, owners, shift = table(_longest(offsets))
    for d in range(n_docs):
        a = offsets[d]
        n_words = offsets[d + 1] - a
        owner = d + 1
        repeated = 0
        idx = 0
        while idx < n_words - n + 1:
            g = np.uint64(0)
            chars = 0
            for j in range(n):
                t = a + idx + j
                g = g * powers[t] + poly[t]
                chars += lengths[t]
            s = _slot(keys, owners, owner, g, shift)
            if owners[s] == owner:
                repeated += chars
                idx += n
            else:
                owners[s], keys[s] = owner, g
                idx += 1
        out[d] = repeated
    return out


class NgramStats:
    """N-gram statistics of a batch's tokens; hashes are computed once and shared by every n."""

    def __init__(self, tokens: Tokens) -> None:
        self._tokens = tokens
        self._hashes = tokens.hashes()
        self._lengths = tokens.lengths
        self._poly, self._powers = _poly_hashes(tokens.cps, tokens.starts, tokens.ends)

    def top_ngram_chars(self, n: int) -> np.ndarray:
        """Per sample; NaN when the sample has fewer than ``n`` words."""
        return _top_ngram_chars(self._hashes, self._lengths, self._tokens.offsets, n)

    def duplicate_ngram_chars(self, n: int) -> np.ndarray:
        return _duplicate_ngram_chars(self._poly, self._powers, self._lengths, self._tokens.offsets, n)
