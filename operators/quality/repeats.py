"""Repeated lines and paragraphs of each text, in one numba pass over a batch's UTF-8 bytes.

Gopher's repetition rules count, per text, the pieces between runs of newlines (lines: runs of one or
more; paragraphs: of two or more) that repeat an earlier piece of the same text, and those pieces'
characters. The pieces are exactly those of splitting on the regular expression ``\\n+`` (or
``\\n{2,}``): a text that starts or ends with a run has an empty first or last piece, and an empty
text is one empty piece. Splitting into an Arrow list array, dictionary-encoding the pieces and
counting first copies in numpy cost three passes and a string per piece; here each text's pieces go
through one open-addressing table (:mod:`operators.quality.open_table`) of (hash, position), and a hash
that matches is confirmed byte by byte, so the counts are exact.
"""

from __future__ import annotations

import numba
import numpy as np
import pyarrow as pa

from operators.quality.open_table import first_slot, table
from operators.quality.text import DuplicateStats, utf8_buffers

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
_NEWLINE = 10


@numba.njit(cache=True, nogil=True, inline="always")
def _same_bytes(data, a, a_end, b, b_end):
    if a_end - a != b_end - b:
        return False
    for k in range(a_end - a):  # noqa: SIM110 (numba compiles no generator expression)
        if data[a + k] != data[b + k]:
            return False
    return True


@numba.njit(cache=True, nogil=True)
def _most_pieces(data, offsets):
    """The most pieces a text of the batch can have: its newlines plus one. The table is sized by this,
    not by bytes: a long text of few lines must not make a table of its length."""
    most = 1
    for d in range(len(offsets) - 1):
        pieces = 1
        for i in range(offsets[d], offsets[d + 1]):
            pieces += data[i] == _NEWLINE
        most = max(most, pieces)
    return most


@numba.njit(cache=True, nogil=True)
def _piece_repeats(data, offsets, min_run):
    n = len(offsets) - 1
    items = np.zeros(n, np.int64)
    repeats = np.zeros(n, np.int64)
    repeat_chars = np.zeros(n, np.int64)
    keys, owners, shift = table(_most_pieces(data, offsets))
    mask = len(keys) - 1
    starts = np.empty(len(keys), np.int64)  # where each slot's piece is, to confirm a hash match
    ends = np.empty(len(keys), np.int64)
    for d in range(n):
        owner = d + 1
        end = offsets[d + 1]
        start = offsets[d]
        while True:
            # the next run of at least ``min_run`` newlines: the piece ends where it starts
            cut, after, i = end, end, start
            while i < end:
                if data[i] != _NEWLINE:
                    i += 1
                    continue
                j = i
                while j < end and data[j] == _NEWLINE:
                    j += 1
                if j - i >= min_run:
                    cut, after = i, j
                    break
                i = j
            h = _FNV_OFFSET
            chars = 0
            for k in range(start, cut):
                h = (h ^ np.uint64(data[k])) * _FNV_PRIME
                chars += (data[k] & 0xC0) != 0x80  # a code point's first byte
            s = first_slot(h, shift)
            while owners[s] == owner and not (keys[s] == h and _same_bytes(data, starts[s], ends[s], start, cut)):
                s = (s + 1) & mask
            items[d] += 1
            if owners[s] == owner:
                repeats[d] += 1
                repeat_chars[d] += chars
            else:
                owners[s], keys[s], starts[s], ends[s] = owner, h, start, cut
            if cut == end:
                break
            start = after
    return items, repeats, repeat_chars


def piece_repeats(texts: pa.Array, min_run: int) -> DuplicateStats:
    """Per text: its pieces between runs of at least ``min_run`` newlines, how many repeat an earlier
    piece of the text, and the characters of those repeats."""
    offsets, data = utf8_buffers(texts)
    items, repeats, chars = _piece_repeats(data, offsets, min_run)
    return DuplicateStats(items=items, duplicates=repeats, duplicate_chars=chars)
