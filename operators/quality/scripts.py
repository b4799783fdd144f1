"""Script distribution of texts: how many letters are Han, Latin or another Unicode script."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from operators.quality.text import as_array, count_regex

HAN = r"\p{Han}"
LATIN = r"\p{Latin}"
OTHER_LETTER = r"[^\p{Han}\p{Latin}\P{L}]"  # a letter (category L) of any other script

SCRIPT_SCHEMA = pa.schema(
    [
        pa.field("han", pa.int64(), nullable=False),
        pa.field("latin", pa.int64(), nullable=False),
        pa.field("other", pa.int64(), nullable=False),
    ]
)


def script_counts(texts: pa.Array | pa.ChunkedArray) -> pa.Table:
    """Per text: Han characters (any category: ideographs, 々, 〇), Latin letters, and letters of
    every other script (Cyrillic, Kana, Hangul, ...). Digits, punctuation and spaces (scripts
    Common/Inherited) are not counted."""
    texts = as_array(texts)
    return pa.Table.from_arrays(
        [pa.array(count_regex(texts, p)) for p in (HAN, LATIN, OTHER_LETTER)], schema=SCRIPT_SCHEMA
    )


def script_distribution(texts: pa.Array | pa.ChunkedArray) -> dict[str, float]:
    """Share of Han / Latin / other letters over a whole column (fractions summing to 1, or all
    0.0 when there are no letters). The release QC report uses it to show a corpus's mix."""
    counts = script_counts(texts)
    totals = {name: int(pc.sum(counts[name]).as_py() or 0) for name in counts.column_names}
    total = sum(totals.values())
    return {name: (value / total if total else 0.0) for name, value in totals.items()}
