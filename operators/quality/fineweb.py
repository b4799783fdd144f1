"""The ``fineweb`` rule set: FineWeb's additional quality filters (Penedo et al. 2024), with
datatrove ``FineWebQualityFilter``'s defaults and rule order. Lines are the non-blank lines of
``text.split("\\n")`` (not stripped otherwise).

* ``empty``: at least one non-blank line;
* ``line_punct_ratio``: lines ending in sentence-final punctuation, at least 0.12
  (``line_punct_exclude_zero`` lets a ratio of exactly 0 pass);
* ``short_line_ratio``: lines of at most ``short_line_length`` = 30 characters, at most 0.67;
* ``char_dup_ratio``: characters in lines repeating an earlier line, over the text's characters
  without newlines, at most 0.01;
* ``list_ratio``: newlines per word (spaCy-like tokens), at most 0.3.

``stop_chars`` defaults to the sentence terminals of :mod:`operators.quality.charclass`
(datatrove uses Unicode's Sentence_Terminal set, a superset in scripts other than Latin).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from operators.base import Params
from operators.quality.base import QualityOperator
from operators.quality.charclass import SENTENCE_TERMINALS
from operators.quality.rules import Evaluation, enabled, rule, safe_ratio
from operators.quality.text import (
    WHITESPACE,
    as_array,
    char_counts,
    count_literal,
    duplicate_stats,
    ends_with_any,
    regroup,
    to_numpy,
)
from operators.quality.tokenize import tokenize


@dataclass(frozen=True)
class FineWebParams(Params):
    line_punct_thr: float | None = 0.12
    line_punct_exclude_zero: bool = False
    stop_chars: tuple[str, ...] = tuple(sorted(SENTENCE_TERMINALS))
    short_line_thr: float | None = 0.67
    short_line_length: int = 30
    char_duplicates_ratio: float | None = 0.01
    new_line_ratio: float | None = 0.3

    def __post_init__(self) -> None:
        object.__setattr__(self, "stop_chars", tuple(self.stop_chars))


class FineWebQuality(QualityOperator):
    """FineWeb quality heuristics; drops samples, never modifies them."""

    name = "quality_fineweb"
    version = "1"
    Params = FineWebParams

    def evaluate(self, texts: pa.Array) -> Evaluation:
        p: FineWebParams = self.params
        texts = as_array(texts)
        n = len(texts)
        split = pc.split_pattern(texts, "\n")
        flat = split.flatten()
        nonblank = to_numpy(pc.invert(pc.match_substring_regex(flat, rf"^{WHITESPACE}*$")), bool)
        parents = to_numpy(pc.list_parent_indices(split))[nonblank]
        lines = flat.filter(pa.array(nonblank))
        n_lines = np.bincount(parents, minlength=n)
        punct = np.bincount(parents, weights=ends_with_any(lines, p.stop_chars), minlength=n)
        punct_ratio = safe_ratio(punct, n_lines)
        if p.line_punct_exclude_zero:
            punct_ratio[punct_ratio == 0] = np.nan
        short = np.bincount(parents, weights=to_numpy(pc.utf8_length(lines)) <= p.short_line_length, minlength=n)
        dups = duplicate_stats(regroup(lines, parents, n))
        chars_without_newlines = char_counts(texts) - count_literal(texts, "\n")
        words = tokenize(texts).counts()
        return Evaluation(
            enabled(
                [
                    rule("empty", n_lines, 1, ">="),
                    rule("line_punct_ratio", punct_ratio, p.line_punct_thr, ">="),
                    rule("short_line_ratio", safe_ratio(short, n_lines), p.short_line_thr, "<="),
                    rule(
                        "char_dup_ratio",
                        safe_ratio(dups.duplicate_chars, chars_without_newlines),
                        p.char_duplicates_ratio,
                        "<=",
                    ),
                    rule("list_ratio", safe_ratio(count_literal(texts, "\n"), words), p.new_line_ratio, "<="),
                ]
            )
        )
