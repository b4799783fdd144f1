"""Text normalisation before shingling: NFKC, lower-case, delete punctuation and symbols.

NFKC folds compatibility forms (full-width letters, ligatures, odd spaces), lower-casing and
deleting every Unicode punctuation and symbol character (categories P* and S*) make near copies
that differ only in case or punctuation share their shingles.

The first two steps are Arrow compute kernels (:func:`fold`), with Python's ``str.lower`` for the
texts Arrow's lower-casing would fold differently (Greek word-final sigma, dotted capital I).
Python 3.11's Unicode tables are 14.0: Arrow also lower-cases the few letters encoded since, which
Python leaves as they are. Deletion happens inside the
shingle kernel, which skips every code point flagged by :func:`punct_or_symbol_table` as if it
were not there: the same result as deleting it first, without a regex pass over the batch.
Whitespace is handled there too (splitting on any Unicode whitespace collapses runs).
"""

from __future__ import annotations

import functools
import sys
import unicodedata

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from operators import code_point_tables

# What Arrow's lower-casing (one code point to one, no context) does not do of ``str.lower``: Unicode's
# special casing, of which ``str.lower`` applies two rules. Σ ending a word becomes ς, not σ (an all-caps
# Greek copy of a text otherwise loses every word-final n-gram: 0.51 against 1.0 for one paragraph), and
# İ becomes i followed by U+0307, not i.
_SPECIAL_LOWER = ("Σ", "İ")


def _holds_special(texts: pa.Array) -> bool:
    """Whether any text may hold a :data:`_SPECIAL_LOWER` letter: one pass over all the bytes (two bytes
    each in UTF-8), where a search text by text cost a third of the fold of a Chinese corpus."""
    values = texts.buffers()[2]
    if values is None or values.size < 2:
        return False
    data = np.frombuffer(values, np.uint8)
    for first, second in (c.encode() for c in _SPECIAL_LOWER):
        if (data[np.flatnonzero(data[:-1] == first) + 1] == second).any():
            return True
    return False


def fold(texts: pa.Array | pa.ChunkedArray) -> pa.Array:
    """NFKC, then lower-case as ``str.lower`` does (the reference's definition). Nulls become empty
    strings."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    if not (pa.types.is_string(texts.type) or pa.types.is_large_string(texts.type)):
        raise TypeError(f"expected a string array, got {texts.type}")
    texts = pc.fill_null(texts, "")
    ascii_only = pc.string_is_ascii(texts)
    if pc.all(ascii_only).as_py() is not False:  # NFKC leaves ASCII as it is: lower-casing is all there is
        return pc.ascii_lower(texts)
    other = pc.invert(ascii_only)  # only the texts with non-ASCII characters pay for NFKC
    normalized = pc.utf8_normalize(texts.filter(other), "NFKC")
    folded = pc.utf8_lower(normalized)
    if _holds_special(normalized):
        special = functools.reduce(pc.or_, (pc.match_substring(normalized, c) for c in _SPECIAL_LOWER))
        lowered = pa.array([t.lower() for t in normalized.filter(special).to_pylist()], folded.type)
        folded = pc.replace_with_mask(folded, special, lowered)  # the few texts with one: as Python does
    return pc.replace_with_mask(pc.ascii_lower(texts), other, folded)


@functools.cache
def punct_or_symbol_table() -> np.ndarray:
    """``table[cp]`` is True when code point ``cp`` is in a P* or S* category (Python's tables).

    Building it asks ``unicodedata`` about all 1.1M code points (about 0.25 s), which every ``lineage``
    process paid at start-up: it is kept on disk instead (:mod:`operators.code_point_tables`).
    """
    return code_point_tables.cached("punct_or_symbol", np.bool_, _build_table)


def _build_table() -> np.ndarray:
    categories = "".join(map(unicodedata.category, map(chr, range(sys.maxunicode + 1))))
    first = np.frombuffer(categories.encode("ascii"), dtype=np.uint8)[::2]  # every category has 2 letters
    return (first == ord("P")) | (first == ord("S"))
