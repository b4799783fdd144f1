"""Unit streams of normalised text: the near-dedupe stream (``operators/minhash/shingle.py``), with spans.

A text is folded (NFKC, lower case: :func:`operators.minhash.normalize.fold`), punctuation and symbols
are skipped as if deleted and whitespace is ``str.isspace()``, exactly as near-dedupe shingles it.
A **word** unit is a whitespace-delimited run; a **char** unit is one non-whitespace code point. A
text is CJK by near-dedupe's ``script="auto"`` rule (any Han, kana, Bopomofo or Hangul character,
with the default ``cjk_ratio`` 0), so mixed Chinese/English text is one stream, not two halves.
(Near-dedupe's default is now ``script="mixed"``, which sketches both; an eval item is matched in one.)

One difference, in the word stream only: a CJK character is a word of its own, so a Latin word written
against Chinese text (``题目：In the …``, the colon deleted) is still the word ``in``. Text without CJK
characters has exactly near-dedupe's word units, and CJK text is read in the character stream.

Each unit comes with its 64-bit value (a word's FNV-1a-64 of its kept bytes through ``fmix64``, as
near-dedupe computes it; a character's code point) and its byte span in the folded text, so an
n-gram can be turned back into its exact string (:func:`unit_text`) to confirm a hash match.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numba
import numpy as np
import pyarrow as pa

from operators.minhash import _jit
from operators.minhash._hashing import FNV_OFFSET, FNV_PRIME
from operators.minhash.normalize import fold, punct_or_symbol_table
from operators.minhash.shingle import _decode, _is_cjk_doc, fmix64, is_cjk, is_space, string_buffers

# these kernels call the near-dedupe package's: numba must see those as dispatchers when it compiles
_jit.make_all()

WORD, CHAR = 0, 1
_KEEP, _SPACE, _DROP = 0, 1, 2  # what an ASCII byte is to the kernel


@functools.cache
def _ascii_classes() -> np.ndarray:
    """Each ASCII byte's class: whitespace (``str.isspace()``), punctuation or symbol (deleted), or kept."""
    drop = punct_or_symbol_table()
    out = np.array([_SPACE if chr(b).isspace() else _DROP if drop[b] else _KEEP for b in range(128)], dtype=np.uint8)
    out.setflags(write=False)
    return out


@numba.njit(cache=True)
def _units_kernel(
    data: np.ndarray, offsets: np.ndarray, drop: np.ndarray, ascii_class: np.ndarray, mode: int, wanted: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(unit values, unit starts, unit ends, per-document offsets into the units); a document not
    ``wanted`` gets no units (it is not read)."""
    n_docs = len(offsets) - 1
    cap = offsets[n_docs] - offsets[0] + 1
    values = np.empty(cap, dtype=np.uint64)
    starts = np.empty(cap, dtype=np.int64)
    ends = np.empty(cap, dtype=np.int64)
    doc_offsets = np.zeros(n_docs + 1, dtype=np.int64)
    k = 0
    for d in range(n_docs):
        if not wanted[d]:
            doc_offsets[d + 1] = k
            continue
        i, end = offsets[d], offsets[d + 1]
        h = FNV_OFFSET
        in_word = False
        while i < end:
            b = data[i]
            if b < 0x80:  # ASCII (most of most texts): no decoding, never CJK, a 128-entry class table
                c = ascii_class[b]
                if c == _SPACE:
                    if in_word:
                        values[k] = fmix64(h)
                        ends[k] = i
                        k += 1
                        h = FNV_OFFSET
                        in_word = False
                elif c == _KEEP:
                    if mode == CHAR:
                        values[k] = np.uint64(b)
                        starts[k] = i
                        ends[k] = i + 1
                        k += 1
                    else:
                        if not in_word:
                            starts[k] = i
                            in_word = True
                        h = (h ^ np.uint64(b)) * FNV_PRIME
                i += 1
                continue
            cp, nxt = _decode(data, i)
            if is_space(cp):
                if in_word:
                    values[k] = fmix64(h)
                    ends[k] = i
                    k += 1
                    h = FNV_OFFSET
                    in_word = False
            elif not drop[cp]:
                if mode == CHAR or (cp >= 0x1100 and is_cjk(cp)):  # in the word stream a CJK character is a word
                    if in_word:
                        values[k] = fmix64(h)
                        ends[k] = i
                        k += 1
                        h = FNV_OFFSET
                        in_word = False
                    if mode == CHAR:
                        values[k] = np.uint64(cp)
                    else:
                        for j in range(i, nxt):
                            h = (h ^ np.uint64(data[j])) * FNV_PRIME
                        values[k] = fmix64(h)
                        h = FNV_OFFSET
                    starts[k] = i
                    ends[k] = nxt
                    k += 1
                else:
                    if not in_word:
                        starts[k] = i
                        in_word = True
                    for j in range(i, nxt):
                        h = (h ^ np.uint64(data[j])) * FNV_PRIME
            i = nxt
        if in_word:
            values[k] = fmix64(h)
            ends[k] = end
            k += 1
        doc_offsets[d + 1] = k
    return values[:k], starts[:k], ends[:k], doc_offsets  # views: a copy would cost more than the spare room


@numba.njit(cache=True)
def _cjk_kernel(data: np.ndarray, offsets: np.ndarray, drop: np.ndarray, cjk_ratio: float) -> np.ndarray:
    n_docs = len(offsets) - 1
    out = np.zeros(n_docs, dtype=np.bool_)
    for d in range(n_docs):
        out[d] = _is_cjk_doc(data, offsets[d], offsets[d + 1], drop, cjk_ratio)
    return out


@dataclass(frozen=True)
class Units:
    """The unit streams of a batch of texts in one mode: document ``i``'s units are
    ``values[doc_offsets[i]:doc_offsets[i + 1]]``, their byte spans in ``data`` alike."""

    data: np.ndarray  # the folded texts' UTF-8 bytes
    values: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    doc_offsets: np.ndarray

    def count(self, doc: int) -> int:
        return int(self.doc_offsets[doc + 1] - self.doc_offsets[doc])


def folded(texts: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """(UTF-8 bytes, offsets) of the folded texts, as near-dedupe shingles them."""
    return string_buffers(fold(texts))


def units(data: np.ndarray, offsets: np.ndarray, mode: int, wanted: np.ndarray | None = None) -> Units:
    """The units of every document (of those ``wanted``, when given; the others have none)."""
    if wanted is None:
        wanted = np.ones(len(offsets) - 1, dtype=np.bool_)
    values, starts, ends, doc_offsets = _units_kernel(
        data, offsets, punct_or_symbol_table(), _ascii_classes(), mode, wanted
    )
    return Units(data, values, starts, ends, doc_offsets)


def cjk_documents(data: np.ndarray, offsets: np.ndarray, cjk_ratio: float = 0.0) -> np.ndarray:
    """Which documents near-dedupe shingles by character (its ``script="auto"`` rule)."""
    return _cjk_kernel(data, offsets, punct_or_symbol_table(), cjk_ratio)


@functools.cache
def _deletions() -> dict[int, None]:
    """``str.translate`` table deleting what the kernels skip (P* and S* code points)."""
    return dict.fromkeys(np.flatnonzero(punct_or_symbol_table()).tolist())


def unit_text(u: Units, index: int) -> str:
    """Unit ``index`` as a string: its folded bytes, punctuation and symbols removed."""
    return bytes(u.data[u.starts[index] : u.ends[index]]).decode("utf-8").translate(_deletions())


def unit_counts(texts: pa.Array | pa.ChunkedArray, cjk_ratio: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(units per text, whether each is CJK): words for space-delimited text, characters for CJK."""
    data, offsets = folded(texts)
    cjk = cjk_documents(data, offsets, cjk_ratio)
    words, chars = units(data, offsets, WORD), units(data, offsets, CHAR)
    counts = np.where(cjk, np.diff(chars.doc_offsets), np.diff(words.doc_offsets))
    return counts, cjk
