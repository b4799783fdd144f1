"""The ``gopher_quality`` rule set: Gopher's quality heuristics (Rae et al. 2021, "Scaling Language
Models", appendix A), with datatrove ``GopherQualityFilter``'s defaults and rule order.

Words are spaCy-like English tokens (:mod:`operators.quality.tokenize`); a "symbol word" consists
only of punctuation, symbols or control characters. Rules, in order (``None`` disables one):

* ``min_doc_words`` / ``max_doc_words`` = 50 / 100,000 non-symbol words;
* ``min_avg_word_length`` / ``max_avg_word_length`` = 3 / 10 characters, over non-symbol words;
* ``hash_ratio`` / ``ellipsis_ratio``: ``#`` and ``...``/``…`` occurrences per word, at most
  ``max_symbol_word_ratio`` = 0.1;
* ``bullet_lines_ratio``: lines starting (after indentation) with ``•`` or ``-``, at most 0.9;
* ``ellipsis_lines_ratio``: lines ending with ``...`` or ``…``, at most 0.3;
* ``alpha_words_ratio``: words with at least one alphabetic character, at least 0.8 (datatrove
  calls this threshold ``max_non_alpha_words_ratio``);
* ``min_stop_words``: at least 2 distinct stop words (case-sensitive) from ``stop_words``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from operators.base import Params
from operators.quality import charclass as cc
from operators.quality.base import QualityOperator
from operators.quality.rules import Evaluation, enabled, rule, safe_ratio
from operators.quality.text import WHITESPACE, as_array, count_literal, list_lengths, splitlines, to_numpy
from operators.quality.tokenize import Tokens, string_hash, tokenize

STOP_WORDS = ("the", "be", "to", "of", "and", "that", "have", "with")


@dataclass(frozen=True)
class GopherQualityParams(Params):
    min_doc_words: int | None = 50
    max_doc_words: int | None = 100_000
    min_avg_word_length: float | None = 3
    max_avg_word_length: float | None = 10
    max_symbol_word_ratio: float | None = 0.1
    max_bullet_lines_ratio: float | None = 0.9
    max_ellipsis_lines_ratio: float | None = 0.3
    min_alpha_words_ratio: float | None = 0.8
    min_stop_words: int | None = 2
    stop_words: tuple[str, ...] = STOP_WORDS

    def __post_init__(self) -> None:
        object.__setattr__(self, "stop_words", tuple(self.stop_words))


def line_fraction(lines: pa.ListArray, pattern: str) -> np.ndarray:
    """Per sample: fraction of its lines matching an RE2 pattern (NaN without lines)."""
    matches = pc.match_substring_regex(lines.flatten(), pattern)
    parents = to_numpy(pc.list_parent_indices(lines))
    hits = np.bincount(parents, weights=to_numpy(matches, bool), minlength=len(lines))
    return safe_ratio(hits, list_lengths(lines))


def distinct_stop_words(tokens: Tokens, stop_words: tuple[str, ...]) -> np.ndarray:
    """Distinct stop words per sample (exact, case-sensitive token match)."""
    n = len(tokens.offsets) - 1
    if not stop_words:
        return np.zeros(n, dtype=np.int64)
    stop = np.unique(np.array([string_hash(w) for w in stop_words], dtype=np.uint64))
    hashes = tokens.hashes()
    which = np.minimum(np.searchsorted(stop, hashes), len(stop) - 1)
    hit = stop[which] == hashes
    keys = np.unique(tokens.doc_index[hit] * len(stop) + which[hit])
    return np.bincount(keys // len(stop), minlength=n)


class GopherQuality(QualityOperator):
    """Gopher quality heuristics; drops samples, never modifies them."""

    name = "quality_gopher"
    version = "1"
    Params = GopherQualityParams

    def evaluate(self, texts: pa.Array) -> Evaluation:
        p: GopherQualityParams = self.params
        texts = as_array(texts)
        tokens = tokenize(texts)
        n_words = tokens.counts()
        non_symbol = ~tokens.all_chars(cc.SYMBOL)
        n_non_symbol = tokens.counts(non_symbol)
        length_sum = np.bincount(tokens.doc_index, weights=tokens.lengths * non_symbol, minlength=len(texts))
        alpha_words = tokens.counts(tokens.any_char(cc.ALPHA))
        ellipses = count_literal(texts, "...") + count_literal(texts, "…")
        lines = splitlines(texts)
        return Evaluation(
            enabled(
                [
                    rule("min_doc_words", n_non_symbol, p.min_doc_words, ">="),
                    rule("max_doc_words", n_non_symbol, p.max_doc_words, "<="),
                    rule(
                        "min_avg_word_length",
                        safe_ratio(length_sum, n_non_symbol),
                        p.min_avg_word_length,
                        ">=",
                    ),
                    rule(
                        "max_avg_word_length",
                        safe_ratio(length_sum, n_non_symbol),
                        p.max_avg_word_length,
                        "<=",
                    ),
                    rule(
                        "hash_ratio",
                        safe_ratio(count_literal(texts, "#"), n_words),
                        p.max_symbol_word_ratio,
                        "<=",
                    ),
                    rule("ellipsis_ratio", safe_ratio(ellipses, n_words), p.max_symbol_word_ratio, "<="),
                    rule(
                        "bullet_lines_ratio",
                        line_fraction(lines, rf"^{WHITESPACE}*[•-]"),
                        p.max_bullet_lines_ratio,
                        "<=",
                    ),
                    rule(
                        "ellipsis_lines_ratio",
                        line_fraction(lines, rf"(\.\.\.|…){WHITESPACE}*$"),
                        p.max_ellipsis_lines_ratio,
                        "<=",
                    ),
                    rule("alpha_words_ratio", safe_ratio(alpha_words, n_words), p.min_alpha_words_ratio, ">="),
                    rule("min_stop_words", distinct_stop_words(tokens, p.stop_words), p.min_stop_words, ">="),
                ]
            )
        )
