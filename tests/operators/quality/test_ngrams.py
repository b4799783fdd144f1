"""The n-gram repetition kernels against a plain-Python statement of their definitions (datatrove's)."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest

from operators.quality.ngrams import NgramStats
from operators.quality.tokenize import tokenize


def top_ngram_chars(words: list[str], n: int) -> float:
    """Characters of the most frequent n-gram (joined by spaces) times its count; ties to the first seen."""
    grams = [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]
    if not grams:
        return float("nan")
    counts = Counter(grams)
    first = {}
    for i, gram in enumerate(grams):
        first.setdefault(gram, i)
    best = max(counts, key=lambda g: (counts[g], -first[g]))
    return float(len(" ".join(best)) * counts[best])


def duplicate_ngram_chars(words: list[str], n: int) -> float:
    """Characters of n-grams repeating an earlier one (as concatenated text), jumping past each repeat."""
    seen: set[str] = set()
    repeated, idx = 0, 0
    while idx < len(words) - n + 1:
        gram = "".join(words[idx : idx + n])
        if gram in seen:
            repeated += len(gram)
            idx += n
        else:
            seen.add(gram)
            idx += 1
    return float(repeated)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kernels_match_the_definitions_on_repetitive_texts(seed: int) -> None:
    rng = random.Random(seed)
    vocab = ["a", "bb", "ccc", "the", "of", "x1", "zz", "Ünï", "数据"]
    texts = [
        " ".join(rng.choice(vocab[: rng.randint(1, len(vocab))]) for _ in range(rng.randint(0, 120)))
        for _ in range(300)
    ]
    texts += ["", "one", "one two", "a a a a a a a a a a a a"]  # fewer words than n, and one word repeated
    tokens = tokenize(pa.array(texts))
    stats = NgramStats(tokens)
    words = [tokens.texts(d) for d in range(len(texts))]
    for n in (1, 2, 3, 4):
        want = np.array([top_ngram_chars(w, n) for w in words])
        np.testing.assert_array_equal(stats.top_ngram_chars(n), want)
    for n in (2, 5, 7, 10):
        want = np.array([duplicate_ngram_chars(w, n) for w in words])
        np.testing.assert_array_equal(stats.duplicate_ngram_chars(n), want)
