"""The ``zh`` rule set: quality rules for Chinese text, measured in characters.

Chinese has no spaces between words, so lengths and ratios count characters (non-whitespace
code points). Rules, in order, with where each default comes from:

* ``min_chars`` / ``max_chars`` = 100 / 200,000: our choice, the ``default`` rule set's CJK
  bounds (about Gopher's 50 / 100,000 words at two characters per English word).
* ``min_cjk_ratio`` = 0.3: CJK characters (Han, Kana, Hangul) among non-whitespace characters.
  Our choice: technical Chinese mixes in Latin names, commands and numbers, so the bar is low; it
  drops text that is not Chinese at all. (CCNet-style pipelines use a fastText language score
  instead; we have no model here.)
* ``max_duplicate_line_fraction`` = 0.3 / ``max_duplicate_line_char_fraction`` = 0.2: Gopher's
  duplicate-line thresholds (Rae et al. 2021), over non-blank lines.
* ``max_char_repetition`` = 0.5 with ``char_ngram`` = 10: the BigScience ROOTS / data-juicer
  ``character_repetition_filter`` measure: the share of all character 10-grams taken by the
  √(distinct) most frequent ones that repeat.
* ``max_punctuation_ratio`` = 0.3: Unicode punctuation (P*) among non-whitespace characters. Our
  choice; ordinary Chinese prose is around 0.1-0.15 (，。、：“”).
* ``max_symbol_ratio`` = 0.1: Unicode symbols (S*: math, currency, emoji, box drawing) among
  non-whitespace characters. Our choice, in the spirit of data-juicer's
  ``special_characters_filter`` (0.25 there, but it also counts punctuation and digits).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import pyarrow as pa

from operators.base import Params
from operators.quality.base import QualityOperator
from operators.quality.rules import Evaluation, enabled, rule, safe_ratio
from operators.quality.text import (
    CJK_CHARS,
    as_array,
    char_counts,
    count_regex,
    duplicate_stats,
    non_space_chars,
    nonblank_lines,
)
from operators.quality.tokenize import code_points
from storage.errors import Invalid


@dataclass(frozen=True)
class ZhParams(Params):
    min_chars: int | None = 100
    max_chars: int | None = 200_000
    min_cjk_ratio: float | None = 0.3
    max_duplicate_line_fraction: float | None = 0.3
    max_duplicate_line_char_fraction: float | None = 0.2
    char_ngram: int = 10
    max_char_repetition: float | None = 0.5
    max_punctuation_ratio: float | None = 0.3
    max_symbol_ratio: float | None = 0.1

    def __post_init__(self) -> None:
        if self.char_ngram < 1:
            raise Invalid("char_ngram must be >= 1")


@numba.njit(cache=True, nogil=True)
def _char_repetition(cps: np.ndarray, offsets: np.ndarray, n: int) -> np.ndarray:
    """Per text: share of character n-grams held by the sqrt(distinct) most frequent repeated ones."""
    out = np.full(len(offsets) - 1, np.nan)
    for d in range(len(offsets) - 1):
        a = offsets[d]
        m = offsets[d + 1] - a - n + 1
        if m <= 0:
            continue
        grams = np.empty(m, dtype=np.uint64)
        for i in range(m):
            h = np.uint64(0xCBF29CE484222325)
            for j in range(n):
                h = (h ^ np.uint64(cps[a + i + j])) * np.uint64(0x100000001B3)
            grams[i] = h
        grams.sort()
        counts = np.empty(m, dtype=np.int64)
        distinct = 0
        run = 1
        for i in range(1, m + 1):
            if i == m or grams[i] != grams[i - 1]:
                counts[distinct] = run
                distinct += 1
                run = 1
            else:
                run += 1
        freqs = np.sort(counts[:distinct])[::-1]
        repeated = 0
        for f in freqs:
            if f > 1:
                repeated += 1
        top = min(int(np.sqrt(distinct)), repeated)
        out[d] = freqs[:top].sum() / m
    return out


class ChineseQuality(QualityOperator):
    """Quality rules for Chinese text; drops samples, never modifies them."""

    name = "quality_zh"
    version = "1"
    Params = ZhParams

    def evaluate(self, texts: pa.Array) -> Evaluation:
        p: ZhParams = self.params
        texts = as_array(texts)
        chars = non_space_chars(texts)
        lines = duplicate_stats(nonblank_lines(texts))
        cps, offsets = code_points(texts)
        return Evaluation(
            enabled(
                [
                    rule("min_chars", chars, p.min_chars, ">="),
                    rule("max_chars", chars, p.max_chars, "<="),
                    rule(
                        "min_cjk_ratio",
                        safe_ratio(count_regex(texts, CJK_CHARS), chars),
                        p.min_cjk_ratio,
                        ">=",
                    ),
                    rule(
                        "duplicate_line_fraction",
                        safe_ratio(lines.duplicates, lines.items),
                        p.max_duplicate_line_fraction,
                        "<=",
                    ),
                    rule(
                        "duplicate_line_char_fraction",
                        safe_ratio(lines.duplicate_chars, char_counts(texts)),
                        p.max_duplicate_line_char_fraction,
                        "<=",
                    ),
                    rule(
                        "char_repetition",
                        _char_repetition(cps, offsets, p.char_ngram),
                        p.max_char_repetition,
                        "<=",
                    ),
                    rule(
                        "punctuation_ratio",
                        safe_ratio(count_regex(texts, r"\p{P}"), chars),
                        p.max_punctuation_ratio,
                        "<=",
                    ),
                    rule(
                        "symbol_ratio",
                        safe_ratio(count_regex(texts, r"\p{S}"), chars),
                        p.max_symbol_ratio,
                        "<=",
                    ),
                ]
            )
        )
