"""Repeated lines and paragraphs counted in one pass, against splitting on the regular expression."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from operators.quality.repeats import _most_pieces, piece_repeats
from operators.quality.text import duplicate_stats, utf8_buffers


def by_regex(texts: pa.Array, pattern: str):
    """The definition: the pieces of splitting on ``pattern``, first copies unique, later ones repeats."""
    return duplicate_stats(pc.split_pattern_regex(texts, pattern))


EDGES = ["", "\n", "\n\n", "\n\n\n", "a", "a\n", "\na", "a\n\nb\n\na", "a\nb\na\nb", "é\n\né\n\n\né", "x\n\n\n\nx\nx"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_piece_counts_are_those_of_the_regex_split(seed: int) -> None:
    rng = random.Random(seed)
    pieces = ["", "a", "bb", "the same line", "数据", "Ünï", " ", "\t"]
    texts = EDGES + [
        "".join(rng.choice(pieces) + "\n" * rng.choice([0, 1, 1, 2, 3]) for _ in range(rng.randint(0, 30)))
        for _ in range(500)
    ]
    array = pa.array(texts)
    for texts_in, run, pattern in [
        (array, 1, r"\n+"),
        (pc.utf8_trim_whitespace(array), 2, r"\n{2,}"),
        (array.slice(3, 200), 2, r"\n{2,}"),  # an offset into the buffers
    ]:
        got, want = piece_repeats(texts_in, run), by_regex(texts_in, pattern)
        np.testing.assert_array_equal(got.items, want.items)
        np.testing.assert_array_equal(got.duplicates, want.duplicates)
        np.testing.assert_array_equal(got.duplicate_chars, want.duplicate_chars)


def test_the_table_is_sized_by_lines_not_bytes() -> None:
    """A 20 MB text of one line needs a table of a few slots, not one the size of the text."""
    texts = pa.array(["x" * (20 << 20), "a\nb\nc", ""])
    offsets, data = utf8_buffers(texts)
    assert _most_pieces(data, offsets) == 3  # the second text's pieces, not the first text's 20 MB
    stats = piece_repeats(texts, 1)
    assert stats.items.tolist() == [1, 3, 1] and stats.duplicates.tolist() == [0, 0, 0]
