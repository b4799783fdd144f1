"""Text normalisation before shingling, vectorised with Arrow compute kernels.

NFKC folds compatibility forms (full-width letters, ligatures, odd spaces), lower-casing and
deleting every Unicode punctuation and symbol character (categories P* and S*) make near copies
that differ only in case or punctuation share their shingles. Whitespace is not touched here: the
shingle kernel splits on it (any Unicode whitespace, as ``str.split()``), which collapses runs.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

_PUNCT_OR_SYMBOL = r"[\p{P}\p{S}]+"


def normalize(texts: pa.Array | pa.ChunkedArray) -> pa.Array:
    """NFKC, lower-case, delete P*/S* characters. Nulls become empty strings."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    if not (pa.types.is_string(texts.type) or pa.types.is_large_string(texts.type)):
        raise TypeError(f"expected a string array, got {texts.type}")
    texts = pc.fill_null(texts, "")
    texts = pc.utf8_normalize(texts, "NFKC")
    texts = pc.utf8_lower(texts)
    return pc.replace_substring_regex(texts, _PUNCT_OR_SYMBOL, "")
