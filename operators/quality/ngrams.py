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
def _top_ngram_chars(hashes, lengths, offsets, n):
    n_docs = len(offsets) - 1
    out = np.full(n_docs, np.nan)
    for d in range(n_docs):
        a = offsets[d]
        m = offsets[d + 1] - a - n + 1
        if m <= 0:
            continue
        grams = np.empty(m, dtype=np.uint64)
        for i in range(m):
            g = np.uint64(n)
            for j in range(n):
                g = (g ^ hashes[a + i + j]) * _MIX
                g ^= g >> np.uint64(29)
            grams[i] = g
        order = np.argsort(grams, kind="mergesort")
        best_count = 0
        best_first = m
        run_start = 0
        for r in range(1, m + 1):
            if r == m or grams[order[r]] != grams[order[run_start]]:
                count = r - run_start
                first = order[run_start]  # stable sort: the run's first position
                if count > best_count or (count == best_count and first < best_first):
                    best_count = count
                    best_first = first
                run_start = r
        chars = n - 1
        for j in range(n):
            chars += lengths[a + best_first + j]
        out[d] = chars * best_count
    return out


@numba.njit(cache=True, nogil=True)
def _duplicate_ngram_chars(poly, powers, lengths, offsets, n):
    n_docs = len(offsets) - 1
    out = np.zeros(n_docs)
    for d in range(n_docs):
        a = offsets[d]
        n_words = offsets[d + 1] - a
        seen = set()
        seen.add(np.uint64(0))
        seen.discard(np.uint64(0))
        repeated = 0
        idx = 0
        while idx < n_words - n + 1:
            g = np.uint64(0)
            chars = 0
            for j in range(n):
                t = a + idx + j
                g = g * powers[t] + poly[t]
                chars += lengths[t]
            if g in seen:
                repeated += chars
                idx += n
            else:
                seen.add(g)
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
