"""Shingle hashes: normalised text -> one flat uint32 array of shingle hashes per batch.

One numba pass over the UTF-8 bytes of a batch does splitting, CJK detection and n-gram
hashing, so nothing is materialised per token or per shingle as a Python object.

Shingle hash, format 1 (stored signatures depend on it; bump ``SIGNATURE_FORMAT_VERSION`` in
``store.py`` when it changes):

* a word's unit value is FNV-1a-64 of its UTF-8 bytes passed through ``fmix64``; a CJK
  document's unit values are its non-whitespace code points (whitespace removed);
* an n-gram of units ``u1..un`` hashes to ``h = GOLDEN; h = fmix64(h ^ ui) for each ui``, and
  the shingle hash is the low 32 bits of ``h`` (the width datasketch's default scheme takes);
* a document with fewer than ``n`` units yields one shingle over all its units (possibly none).

Punctuation and symbols (P*, S*) are skipped as if deleted; whitespace is exactly Python's
``str.isspace()``. A CJK character is a Han (extensions and compatibility included), kana,
Bopomofo or Hangul one (:func:`is_cjk`).

``script`` (``params.py``):

* ``"mixed"`` (default). No document is classified. Every document has a **word half**: the word
  ``word_ngram``-grams of its text with every CJK character deleted (a CJK character ends a word,
  as whitespace does). A document with a CJK character also has a **character half**: its
  ``"cjk"`` shingles (``ngram`` characters; :func:`mixed_shingles` makes both;
  :func:`shingle_hashes` returns the word half and says which documents have a CJK character).
  Both halves are sketched and banded; a pair sharing a bucket of either is a candidate, and
  verification compares every candidate by exact character ``ngram``-gram Jaccard
  (``characters.py``), the reference metric. A text without CJK characters and its twin with a
  few therefore meet in the word half and are judged by characters. A text whose CJK characters
  exceed :func:`word_half_share` of its characters has no word half (it could not reach the
  threshold against a text without CJK characters; a Chinese corpus adds no candidates from
  English fragments), and none either when deleting its CJK characters leaves no word.
* ``"auto"`` (the rule before #18): a document is CJK when it has at least one CJK character and
  at least ``cjk_ratio`` of its remaining non-whitespace characters are CJK; CJK documents are
  shingled by characters, others by words. A text without CJK characters and its twin with one
  then share no shingle at all.
* ``"latin"``: word n-grams; ``"cjk"``: character n-grams with whitespace removed, for every text.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyarrow as pa

from operators.minhash import small
from operators.minhash._hashing import FNV_OFFSET, FNV_PRIME, GOLDEN, MASK32, fmix64
from operators.minhash._jit import njit
from operators.minhash.normalize import fold, punct_or_symbol_table
from operators.minhash.params import MinHashParams

_MODE_AUTO, _MODE_LATIN, _MODE_CJK, _MODE_MIXED = 0, 1, 2, 3
_MODES = {"auto": _MODE_AUTO, "latin": _MODE_LATIN, "cjk": _MODE_CJK, "mixed": _MODE_MIXED}


@njit(cache=True)
def is_space(cp: int) -> bool:
    """Python's ``str.isspace()`` as a code point test."""
    if cp < 0x80:
        return (9 <= cp <= 13) or (28 <= cp <= 32)
    return (
        cp == 0x85
        or cp == 0xA0
        or cp == 0x1680
        or (0x2000 <= cp <= 0x200A)
        or cp == 0x2028
        or cp == 0x2029
        or cp == 0x202F
        or cp == 0x205F
        or cp == 0x3000
    )


@njit(cache=True)
def is_cjk(cp: int) -> bool:
    """Han (incl. extensions and compatibility), kana, Hangul and Bopomofo."""
    return (
        (0x4E00 <= cp <= 0x9FFF)
        or (0x3400 <= cp <= 0x4DBF)
        or (0x20000 <= cp <= 0x323AF)
        or (0xF900 <= cp <= 0xFAFF)
        or (0x3040 <= cp <= 0x30FF)
        or (0x31F0 <= cp <= 0x31FF)
        or (0x3100 <= cp <= 0x312F)
        or (0xAC00 <= cp <= 0xD7AF)
        or (0x1100 <= cp <= 0x11FF)
        or (0x3130 <= cp <= 0x318F)
    )


@njit(inline="always")
def _decode(data: np.ndarray, i: int) -> tuple[int, int]:
    """Code point starting at byte ``i`` of valid UTF-8, and the index after it."""
    b0 = np.int64(data[i])
    if b0 < 0x80:
        return b0, i + 1
    if b0 < 0xE0:
        return ((b0 & 0x1F) << 6) | (np.int64(data[i + 1]) & 0x3F), i + 2
    if b0 < 0xF0:
        return (
            ((b0 & 0x0F) << 12) | ((np.int64(data[i + 1]) & 0x3F) << 6) | (np.int64(data[i + 2]) & 0x3F),
            i + 3,
        )
    return (
        ((b0 & 0x07) << 18)
        | ((np.int64(data[i + 1]) & 0x3F) << 12)
        | ((np.int64(data[i + 2]) & 0x3F) << 6)
        | (np.int64(data[i + 3]) & 0x3F),
        i + 4,
    )


@njit(inline="always")
def _ngram(units: np.ndarray, start: int, count: int) -> np.uint64:
    h = GOLDEN
    for j in range(start, start + count):
        h = fmix64(h ^ units[j])
    return h & MASK32


@njit(cache=True)
def _is_cjk_doc(data: np.ndarray, start: int, end: int, drop: np.ndarray, cjk_ratio: float) -> bool:
    # Every CJK code point is >= U+1100, whose UTF-8 lead byte is >= 0xE1: most documents
    # are settled by this byte scan without decoding.
    has_cjk_lead = False
    for i in range(start, end):
        if data[i] >= 0xE1:
            has_cjk_lead = True
            break
    if not has_cjk_lead:
        return False
    total = 0
    cjk = 0
    i = start
    while i < end:
        cp, i = _decode(data, i)
        if not drop[cp] and not is_space(cp):
            total += 1
            if is_cjk(cp):
                if cjk_ratio == 0.0:
                    return True
                cjk += 1
    return cjk > 0 and cjk >= cjk_ratio * total


@njit(cache=True)
def _word_units(data: np.ndarray, start: int, end: int, drop: np.ndarray, units: np.ndarray) -> int:
    k = 0
    h = FNV_OFFSET
    in_word = False
    i = start
    while i < end:
        b = data[i]
        if b < 0x80:  # ASCII fast path: no decoding
            cp, nxt = np.int64(b), i + 1
        else:
            cp, nxt = _decode(data, i)
        if is_space(cp):
            if in_word:
                units[k] = fmix64(h)
                k += 1
                h = FNV_OFFSET
                in_word = False
        elif not drop[cp]:
            for j in range(i, nxt):
                h = (h ^ np.uint64(data[j])) * FNV_PRIME
            in_word = True
        i = nxt
    if in_word:
        units[k] = fmix64(h)
        k += 1
    return k


@njit(cache=True)
def _mixed_units(data: np.ndarray, start: int, end: int, drop: np.ndarray, units: np.ndarray) -> tuple[int, int, int]:
    """The word units of a text with its CJK characters deleted (each ends a word, as whitespace
    does), as ``_word_units`` makes them; and the text's CJK and non-whitespace character counts."""
    k = 0
    h = FNV_OFFSET
    in_word = False
    n_cjk = 0
    n_chars = 0
    i = start
    while i < end:
        b = data[i]
        if b < 0x80:  # ASCII fast path: no decoding
            cp, nxt = np.int64(b), i + 1
        else:
            cp, nxt = _decode(data, i)
        if drop[cp]:
            pass
        elif is_space(cp) or (cp >= 0x1100 and is_cjk(cp)):
            if in_word:
                units[k] = fmix64(h)
                k += 1
                h = FNV_OFFSET
                in_word = False
            if cp >= 0x1100 and not is_space(cp):
                n_cjk += 1
                n_chars += 1
        else:
            for j in range(i, nxt):
                h = (h ^ np.uint64(data[j])) * FNV_PRIME
            in_word = True
            n_chars += 1
        i = nxt
    if in_word:
        units[k] = fmix64(h)
        k += 1
    return k, n_cjk, n_chars


@njit(cache=True)
def _char_units(data: np.ndarray, start: int, end: int, drop: np.ndarray, units: np.ndarray) -> int:
    k = 0
    i = start
    while i < end:
        cp, i = _decode(data, i)
        if not drop[cp] and not is_space(cp):
            units[k] = np.uint64(cp)
            k += 1
    return k


@njit(cache=True, nogil=True)
def _shingle_kernel(
    data: np.ndarray, offsets: np.ndarray, drop: np.ndarray, ngram: int, mode: int, cjk_ratio: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n_docs = len(offsets) - 1
    max_len = 0
    for d in range(n_docs):
        max_len = max(max_len, offsets[d + 1] - offsets[d])
    units = np.empty(max_len + 1, dtype=np.uint64)
    hashes = np.empty(offsets[n_docs] - offsets[0] + n_docs, dtype=np.uint32)
    out_offsets = np.zeros(n_docs + 1, dtype=np.int64)
    cjk_docs = np.zeros(n_docs, dtype=np.bool_)
    pos = 0
    for d in range(n_docs):
        start, end = offsets[d], offsets[d + 1]
        if mode == _MODE_MIXED:  # cjk_ratio is the largest CJK share a text with a word half has
            k, n_cjk, n_chars = _mixed_units(data, start, end, drop, units)
            cjk = n_cjk > 0
            if cjk and (k == 0 or n_cjk > cjk_ratio * n_chars):
                k = -1  # no word half
        else:
            cjk = _is_cjk_doc(data, start, end, drop, cjk_ratio) if mode == _MODE_AUTO else mode == _MODE_CJK
            k = _char_units(data, start, end, drop, units) if cjk else _word_units(data, start, end, drop, units)
        cjk_docs[d] = cjk
        if k < 0:
            pass
        elif k < ngram:
            hashes[pos] = _ngram(units, 0, k)
            pos += 1
        else:
            for s in range(k - ngram + 1):
                hashes[pos] = _ngram(units, s, ngram)
                pos += 1
        out_offsets[d + 1] = pos
    return hashes[:pos].copy(), out_offsets, cjk_docs


def word_half_share(params: MinHashParams) -> float:
    """The largest share of CJK characters a ``script="mixed"`` text with a CJK character keeps a
    word half at: twice ``1 - threshold``. A text with more cannot reach the threshold, by
    character n-grams, against one without CJK characters (its shingles holding a CJK character,
    at least about as many as those characters, are in no such text), so its word half could only
    add candidates that verification rejects; a Chinese corpus then adds none."""
    return round(min(1.0, 2.0 * (1.0 - params.threshold)), 6)  # 0.4 at 0.8, not 0.3999999999999999


def value_buffers(texts: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Zero-copy (bytes, offsets as stored: int32, or int64 for the large types) of a string or binary array,
    honouring slices."""
    large = pa.types.is_large_string(texts.type) or pa.types.is_large_binary(texts.type)
    _, offsets_buf, data_buf = texts.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64 if large else np.int32)[
        texts.offset : texts.offset + len(texts) + 1
    ]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    return data, offsets


def string_buffers(texts: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Zero-copy (UTF-8 bytes, int64 offsets) of a string array, honouring slices."""
    data, offsets = value_buffers(texts)
    return data, offsets.astype(np.int64)


def concat_releasing(pieces: list[pa.Array]) -> pa.Array:
    """``pa.concat_arrays(pieces)``, as one large string (or large binary) array, emptying ``pieces`` as it
    copies them: when the list holds the only references to them, peak memory is the result and one piece.
    ``concat_arrays`` (and ``combine_chunks``) hold every piece and the result at once: twice the 330 MB
    of folded texts that ``lineage dedupe`` holds for 254,724 Chinese documents (the result's pages are
    resident only once written, so each piece's are given back before the next piece's are taken). Pieces
    have no nulls."""
    if any(piece.null_count for piece in pieces):
        raise ValueError("concat_releasing joins arrays without nulls")
    binary = bool(pieces) and (pa.types.is_binary(pieces[0].type) or pa.types.is_large_binary(pieces[0].type))
    rows = sum(len(piece) for piece in pieces)
    size = sum(int(ends[-1] - ends[0]) for ends in (value_buffers(piece)[1] for piece in pieces if len(piece)))
    # from Arrow's pool, not numpy's allocator: numpy asks for transparent huge pages for large arrays, and
    # after a run had freed much memory their first touch took four times as long (1.1 s for 500 MB)
    data_buf, offsets_buf = pa.allocate_buffer(size), pa.allocate_buffer(8 * (rows + 1))
    data, offsets = np.frombuffer(data_buf, np.uint8), np.frombuffer(offsets_buf, np.int64)
    offsets[0] = 0
    at = row = 0
    pieces.reverse()  # popped from the end, so in order
    while pieces:
        piece = pieces.pop()
        if len(piece):
            values, ends = value_buffers(piece)
            length = int(ends[-1] - ends[0])
            data[at : at + length] = values[ends[0] : ends[-1]]
            offsets[row + 1 : row + 1 + len(piece)] = ends[1:] - ends[0] + at
            at, row = at + length, row + len(piece)
            del values, ends
        del piece  # the last reference, when the caller's list held the only one
    kind = pa.large_binary() if binary else pa.large_string()
    return pa.Array.from_buffers(kind, rows, [None, offsets_buf, data_buf])


def shingle_hashes(
    texts: pa.Array | pa.ChunkedArray, params: MinHashParams, *, folded: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Shingle hashes of raw texts (normalised here, see ``normalize.py``; ``folded``: they were).

    Returns ``(hashes, offsets, is_cjk)``: document ``i``'s shingle hashes are
    ``hashes[offsets[i]:offsets[i + 1]]`` (uint32, in text order, repeats kept), and ``is_cjk[i]``
    says whether it was shingled by characters (``script="mixed"``: its word half, and whether it
    has a CJK character).
    """
    return _folded_shingles(*string_buffers(texts if folded else fold(texts)), params)


def mixed_shingles(
    texts: pa.Array | pa.ChunkedArray, params: MinHashParams, *, folded: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Both halves of ``script="mixed"``, normalising once (``folded``: the texts were): ``(word
    hashes, their offsets, has_cjk, character hashes, their offsets)``; the character half covers
    only the texts with a CJK character, in order (``np.flatnonzero(has_cjk)``)."""
    data, offsets = string_buffers(texts if folded else fold(texts))
    hashes, hash_offsets, cjk = _folded_shingles(data, offsets, params)
    rows = np.flatnonzero(cjk)
    if len(rows) < len(cjk):  # the CJK texts' bytes only: the others are never read by character
        starts, lengths = offsets[rows], offsets[rows + 1] - offsets[rows]
        sub_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        data = data[np.repeat(starts - sub_offsets[:-1], lengths) + np.arange(sub_offsets[-1])]
        offsets = sub_offsets
    char_hashes, char_offsets, _ = _folded_shingles(data, offsets, replace(params, script="cjk"))
    return hashes, hash_offsets, cjk, char_hashes, char_offsets


def _folded_shingles(
    data: np.ndarray, offsets: np.ndarray, params: MinHashParams
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    drop = punct_or_symbol_table()
    share = word_half_share(params) if params.script == "mixed" else params.cjk_ratio
    ngram = params.word_ngram if params.script == "mixed" else params.ngram  # the word half's n
    args = (data, offsets, drop, ngram, _MODES[params.script], share)
    if small.suits(offsets[-1] - offsets[0] <= small.SHINGLE_LIMIT):
        return small.shingle_hashes(*args)
    return _shingle_kernel(*args)
