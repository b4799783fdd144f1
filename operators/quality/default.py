"""The ``default`` rule set: a small, language-aware core every pipeline can start with.

Thresholds (all configurable; ``None`` disables a rule):

* ``min_words`` / ``max_words`` = 50 / 100,000: Gopher's document length bounds (Rae et al. 2021,
  Table A1). Words are whitespace-separated tokens here (no tokenizer), so the bounds are cheap and
  script-agnostic; the ``gopher_quality`` rule set applies them to spaCy-like words.
* ``min_cjk_chars`` / ``max_cjk_chars`` = 100 / 200,000: the same bounds for Chinese/CJK text,
  counted in non-whitespace characters. Our choice: roughly two characters per English word
  (a common Chinese-to-English length ratio for the same content).
* ``min_mean_word_length`` / ``max_mean_word_length`` = 3 / 10 characters: Gopher. Not applied to
  CJK text, which has no word boundaries.
* ``max_symbol_word_ratio`` = 0.1: Gopher's cap on ``#`` and on ellipses (``...``, ``…``) per word
  (per character for CJK text), as two rules.
* ``max_duplicate_line_fraction`` = 0.3: Gopher's duplicate line fraction, over non-blank lines.
* ``min_cjk_ratio`` = 0.3: with ``language="cjk"``, the share of CJK characters (Han, Kana,
  Hangul) among non-whitespace characters. Our choice: technical Chinese mixes in Latin names and
  code, so the bar is low; it catches documents that are not Chinese at all.

``language``: ``"space"`` measures every sample in words, ``"cjk"`` in characters, and ``"auto"``
(default) decides per sample: a sample whose CJK share is at least ``cjk_sample_ratio`` is CJK.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from operators.base import Params
from operators.quality.base import QualityOperator
from operators.quality.rules import Evaluation, enabled, rule, safe_ratio
from operators.quality.text import (
    CJK_CHARS,
    as_array,
    count_literal,
    count_regex,
    duplicate_stats,
    non_space_chars,
    nonblank_lines,
    whitespace_word_counts,
)
from storage.errors import Invalid

LANGUAGES = ("auto", "space", "cjk")


@dataclass(frozen=True)
class DefaultParams(Params):
    language: str = "auto"
    cjk_sample_ratio: float = 0.3
    min_words: int | None = 50
    max_words: int | None = 100_000
    min_cjk_chars: int | None = 100
    max_cjk_chars: int | None = 200_000
    min_mean_word_length: float | None = 3
    max_mean_word_length: float | None = 10
    max_symbol_word_ratio: float | None = 0.1
    max_duplicate_line_fraction: float | None = 0.3
    min_cjk_ratio: float | None = 0.3

    def __post_init__(self) -> None:
        if self.language not in LANGUAGES:
            raise Invalid(f"language must be one of {LANGUAGES}, not {self.language!r}")


class DefaultQuality(QualityOperator):
    """Core quality rules; drops samples, never modifies them."""

    name = "quality"
    version = "1"
    Params = DefaultParams

    def evaluate(self, texts: pa.Array) -> Evaluation:
        p: DefaultParams = self.params
        texts = as_array(texts)
        chars = non_space_chars(texts)
        cjk_ratio = safe_ratio(count_regex(texts, CJK_CHARS), chars)
        if p.language == "auto":
            is_cjk = np.nan_to_num(cjk_ratio) >= p.cjk_sample_ratio
        else:
            is_cjk = np.full(len(texts), p.language == "cjk")

        words = whitespace_word_counts(texts).astype(np.float64)
        space_words = np.where(is_cjk, np.nan, words)
        cjk_chars = np.where(is_cjk, chars, np.nan)
        mean_word_length = np.where(is_cjk, np.nan, safe_ratio(chars, words))
        units = np.where(is_cjk, chars, words)  # denominator of the symbol ratios
        hashes = count_literal(texts, "#")
        ellipses = count_literal(texts, "...") + count_literal(texts, "…")
        lines = duplicate_stats(nonblank_lines(texts))

        return Evaluation(
            enabled(
                [
                    rule("min_words", space_words, p.min_words, ">="),
                    rule("max_words", space_words, p.max_words, "<="),
                    rule("min_cjk_chars", cjk_chars, p.min_cjk_chars, ">="),
                    rule("max_cjk_chars", cjk_chars, p.max_cjk_chars, "<="),
                    rule("min_cjk_ratio", cjk_ratio, p.min_cjk_ratio if p.language == "cjk" else None, ">="),
                    rule("min_mean_word_length", mean_word_length, p.min_mean_word_length, ">="),
                    rule("max_mean_word_length", mean_word_length, p.max_mean_word_length, "<="),
                    rule("hash_ratio", safe_ratio(hashes, units), p.max_symbol_word_ratio, "<="),
                    rule("ellipsis_ratio", safe_ratio(ellipses, units), p.max_symbol_word_ratio, "<="),
                    rule(
                        "duplicate_line_fraction",
                        safe_ratio(lines.duplicates, lines.items),
                        p.max_duplicate_line_fraction,
                        "<=",
                    ),
                ]
            )
        )
