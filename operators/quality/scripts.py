"""Script distribution of texts: how many letters are Han, Latin or another Unicode script.

The classes are the RE2 patterns below (``\\p{Han}`` and so on: Unicode's Script property, which
Python's ``unicodedata`` does not have). Counting them with three regex passes per batch made the
release QC report slow (about 1 s per 14 MB of text), so each code point's class is looked up
instead: a table built once by running these very patterns over every code point (so the counts are
the regexes' own, tested), kept on disk (:mod:`operators.code_point_tables`), and a numba pass over
the decoded code points. Below :data:`KERNEL_BYTES` of text (a takedown's few removed samples), where
starting numba would cost more, numpy does the same lookup (a takedown's 1,000 removed texts: 10 ms
against 29 ms for the regexes), or, when the table is not on disk yet, the regexes run (building it
costs about a second).
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from operators import code_point_tables
from operators.quality.text import as_array, utf8_buffers

HAN = r"\p{Han}"
LATIN = r"\p{Latin}"
OTHER_LETTER = r"[^\p{Han}\p{Latin}\P{L}]"  # a letter (category L) of any other script
CLASSES = {"han": (1, HAN), "latin": (2, LATIN), "other": (4, OTHER_LETTER)}  # column: (table bit, pattern)
KERNEL_BYTES = 4 << 20  # below this much text the regexes cost less than loading the kernel (about 0.5 s)

SCRIPT_SCHEMA = pa.schema([pa.field(name, pa.int64(), nullable=False) for name in CLASSES])


TABLE = "quality_scripts"
# RE2's tables ship with pyarrow, so its version is part of the table's name
SALT = repr(CLASSES).encode() + pa.__version__.encode()


@cache
def script_table() -> np.ndarray:
    """uint8 per code point: the bits of the classes it belongs to (read-only)."""
    return code_point_tables.cached(TABLE, np.uint8, _build, salt=SALT)


def built_script_table() -> np.ndarray | None:
    """:func:`script_table` if it costs no build: loaded in this process already, or on disk."""
    if script_table.cache_info().currsize or code_point_tables.cache_file(TABLE, SALT).exists():
        return script_table()
    return None


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
    if texts.nbytes < KERNEL_BYTES:  # no JIT to start for a few texts
        table = built_script_table()
        if table is not None:
            return _looked_up(texts, table)
        columns = [pc.count_substring_regex(texts, pattern).cast(pa.int64()) for _, pattern in CLASSES.values()]
        return pa.Table.from_arrays(columns, schema=SCRIPT_SCHEMA)
    from operators.quality.tokenize import code_points, flag_counts  # start-up: numba, for large inputs only

    cps, offsets = code_points(texts)
    table = script_table()
    columns = [pa.array(flag_counts(cps, offsets[:-1], offsets[1:], table, bit)) for bit, _ in CLASSES.values()]
    return pa.Table.from_arrays(columns, schema=SCRIPT_SCHEMA)


def _looked_up(texts: pa.Array, table: np.ndarray) -> pa.Table:
    """The kernel's counts with numpy: one UTF-8 decode of every text's bytes by Python's codec, the
    table's bits per code point, and per-text sums as differences of running totals (a text's first
    code point is the count of UTF-8 lead bytes before its first byte)."""
    offsets, data = utf8_buffers(texts)
    span = data[offsets[0] : offsets[-1]]
    cps = np.frombuffer(span.tobytes().decode("utf-8").encode("utf-32-le"), dtype=np.uint32)
    starts = np.concatenate([[0], np.cumsum((span & 0xC0) != 0x80)])[offsets - offsets[0]]
    bits = table[cps]
    columns = []
    for bit, _ in CLASSES.values():
        running = np.concatenate([[0], np.cumsum((bits & bit) != 0)])
        columns.append(pa.array(running[starts[1:]] - running[starts[:-1]], pa.int64()))
    return pa.Table.from_arrays(columns, schema=SCRIPT_SCHEMA)


def script_distribution(texts: pa.Array | pa.ChunkedArray) -> dict[str, float]:
    """Share of Han / Latin / other letters over a whole column (fractions summing to 1, or all
    0.0 when there are no letters). The release QC report uses it to show a corpus's mix."""
    counts = script_counts(texts)
    totals = {name: int(pc.sum(counts[name]).as_py() or 0) for name in counts.column_names}
    total = sum(totals.values())
    return {name: (value / total if total else 0.0) for name, value in totals.items()}
