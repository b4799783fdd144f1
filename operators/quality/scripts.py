"""Script distribution of texts: how many letters are Han, Latin or another Unicode script.

The classes are the RE2 patterns below (``\\p{Han}`` and so on: Unicode's Script property, which
Python's ``unicodedata`` does not have). Counting them with three regex passes per batch made the
release QC report slow (about 1 s per 14 MB of text), so each code point's class is looked up
instead: a table built once by running these very patterns over every code point (so the counts are
the regexes' own, tested), kept on disk (:mod:`operators.code_point_tables`), and a numba pass over
the decoded code points. Below :data:`KERNEL_BYTES` of text (a takedown's few removed samples) the
regexes run as before, since starting numba would cost more.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from operators import code_point_tables
from operators.quality.text import as_array

HAN = r"\p{Han}"
LATIN = r"\p{Latin}"
OTHER_LETTER = r"[^\p{Han}\p{Latin}\P{L}]"  # a letter (category L) of any other script
CLASSES = {"han": (1, HAN), "latin": (2, LATIN), "other": (4, OTHER_LETTER)}  # column: (table bit, pattern)
KERNEL_BYTES = 4 << 20  # below this much text the regexes cost less than loading the kernel (about 0.5 s)

SCRIPT_SCHEMA = pa.schema([pa.field(name, pa.int64(), nullable=False) for name in CLASSES])


@cache
def script_table() -> np.ndarray:
    """uint8 per code point: the bits of the classes it belongs to (read-only). RE2's tables ship
    with pyarrow, so its version is part of the table's name."""
    salt = repr(CLASSES).encode() + pa.__version__.encode()
    return code_point_tables.cached("quality_scripts", np.uint8, _build, salt=salt)


def _build() -> np.ndarray:
    cps = np.array([c for c in range(code_point_tables.SIZE) if not 0xD800 <= c < 0xE000])  # never in UTF-8
    chars = pa.array([chr(c) for c in cps], pa.string())
    table = np.zeros(code_point_tables.SIZE, dtype=np.uint8)
    for bit, pattern in CLASSES.values():
        table[cps[pc.match_substring_regex(chars, pattern).to_numpy(zero_copy_only=False)]] |= bit
    return table


def script_counts(texts: pa.Array | pa.ChunkedArray) -> pa.Table:
    """Per text: Han characters (any category: ideographs, 々, 〇), Latin letters, and letters of
    every other script (Cyrillic, Kana, Hangul, ...). Digits, punctuation and spaces (scripts
    Common/Inherited) are not counted."""
    texts = as_array(texts)
    if texts.nbytes < KERNEL_BYTES:  # the patterns themselves: no JIT to start for a few texts
        columns = [pc.count_substring_regex(texts, pattern).cast(pa.int64()) for _, pattern in CLASSES.values()]
        return pa.Table.from_arrays(columns, schema=SCRIPT_SCHEMA)
    from operators.quality.tokenize import code_points, flag_counts  # start-up: numba, for large inputs only

    cps, offsets = code_points(texts)
    table = script_table()
    columns = [pa.array(flag_counts(cps, offsets[:-1], offsets[1:], table, bit)) for bit, _ in CLASSES.values()]
    return pa.Table.from_arrays(columns, schema=SCRIPT_SCHEMA)


def script_distribution(texts: pa.Array | pa.ChunkedArray) -> dict[str, float]:
    """Share of Han / Latin / other letters over a whole column (fractions summing to 1, or all
    0.0 when there are no letters). The release QC report uses it to show a corpus's mix."""
    counts = script_counts(texts)
    totals = {name: int(pc.sum(counts[name]).as_py() or 0) for name in counts.column_names}
    total = sum(totals.values())
    return {name: (value / total if total else 0.0) for name, value in totals.items()}
