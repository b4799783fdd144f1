"""The ``gopher_repetition`` rule set: Gopher's repetition heuristics (Rae et al. 2021, Table A1),
with datatrove ``GopherRepetitionFilter``'s defaults and rule order.

Rules (all "at most"; character fractions are over the whole text's length):

* ``dup_para_frac`` 0.3 / ``dup_para_char_frac`` 0.2: paragraphs (split on 2+ newlines) that
  repeat an earlier paragraph, by count and by characters;
* ``dup_line_frac`` 0.3 / ``dup_line_char_frac`` 0.2: the same for lines (split on newlines);
* ``top_{n}_gram`` for n = 2, 3, 4 with 0.20, 0.18, 0.16: characters covered by the most
  frequent word n-gram;
* ``duplicated_{n}_n_grams`` for n = 5..10 with 0.15 down to 0.10: characters in word n-grams
  that repeat an earlier one.

``top_n_grams`` and ``dup_n_grams`` are sequences of ``(n, threshold)`` pairs.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from operators.base import Params
from operators.quality.base import QualityOperator
from operators.quality.ngrams import NgramStats
from operators.quality.repeats import piece_repeats
from operators.quality.rules import Evaluation, RuleOutcome, enabled, rule, safe_ratio
from operators.quality.text import as_array, char_counts
from operators.quality.tokenize import tokenize
from storage.errors import Invalid

NgramThresholds = tuple[tuple[int, float], ...]


@dataclass(frozen=True)
class GopherRepetitionParams(Params):
    dup_line_frac: float | None = 0.3
    dup_para_frac: float | None = 0.3
    dup_line_char_frac: float | None = 0.2
    dup_para_char_frac: float | None = 0.2
    top_n_grams: NgramThresholds = ((2, 0.2), (3, 0.18), (4, 0.16))
    dup_n_grams: NgramThresholds = ((5, 0.15), (6, 0.14), (7, 0.13), (8, 0.12), (9, 0.11), (10, 0.10))

    def __post_init__(self) -> None:
        for name in ("top_n_grams", "dup_n_grams"):
            pairs = tuple((int(n), float(t)) for n, t in getattr(self, name))
            if any(n < 1 for n, _ in pairs):
                raise Invalid(f"{name}: n-gram sizes must be >= 1")
            object.__setattr__(self, name, pairs)


class GopherRepetition(QualityOperator):
    """Gopher repetition heuristics; drops samples, never modifies them."""

    name = "quality_gopher_repetition"
    version = "1"
    Params = GopherRepetitionParams

    def evaluate(self, texts: pa.Array) -> Evaluation:
        p: GopherRepetitionParams = self.params
        texts = as_array(texts)
        length = char_counts(texts)
        paragraphs = piece_repeats(pc.utf8_trim_whitespace(texts), min_run=2)
        lines = piece_repeats(texts, min_run=1)
        outcomes: list[RuleOutcome | None] = [
            rule("dup_para_frac", safe_ratio(paragraphs.duplicates, paragraphs.items), p.dup_para_frac, "<="),
            rule(
                "dup_para_char_frac",
                safe_ratio(paragraphs.duplicate_chars, length),
                p.dup_para_char_frac,
                "<=",
            ),
            rule("dup_line_frac", safe_ratio(lines.duplicates, lines.items), p.dup_line_frac, "<="),
            rule("dup_line_char_frac", safe_ratio(lines.duplicate_chars, length), p.dup_line_char_frac, "<="),
        ]
        if p.top_n_grams or p.dup_n_grams:
            ngrams = NgramStats(tokenize(texts))
            for n, threshold in p.top_n_grams:
                outcomes.append(rule(f"top_{n}_gram", safe_ratio(ngrams.top_ngram_chars(n), length), threshold, "<="))
            for n, threshold in p.dup_n_grams:
                value = safe_ratio(ngrams.duplicate_ngram_chars(n), length)
                outcomes.append(rule(f"duplicated_{n}_n_grams", value, threshold, "<="))
        return Evaluation(enabled(outcomes))
