"""The ``c4`` rule set: C4's cleaning heuristics (Raffel et al. 2020), with datatrove
``C4QualityFilter``'s defaults. Lines are ``str.splitlines()`` lines, stripped.

Line rules remove lines; the sample is kept with the remaining lines joined by ``\\n`` and is
recorded as ``modified`` with the removed (non-blank) lines. In datatrove's order, a line goes
when it has a word longer than ``max_word_length`` (1000), does not end in ``. ? ! " '`` or ends
in ``...`` (``filter_no_terminal_punct``), has fewer than ``min_words_per_line`` (3) words,
mentions "javascript" (``filter_javascript``), or a cookie/terms-of-use phrase
(``filter_policy``). Citation markers ``[1]``, ``[edit]``, ``[citation needed]`` are deleted first
(``remove_citations``).

Sample rules (drop the sample):

* ``lorem_ipsum``: a line that survived the first three line rules contains "lorem ipsum";
* ``curly_bracket``: a line that survived up to the javascript rule contains ``{``;
* ``min_num_sentences`` = 5: sentences in the kept lines, counted like spaCy's ``sentencizer``
  over our spaCy-like tokens.

``None`` disables a numeric rule. The bad-words list and sentence-mode splitting
(``split_paragraph=False``) of datatrove are not implemented.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from operators.base import Params
from operators.quality import charclass as cc
from operators.quality.base import QualityOperator
from operators.quality.rules import Evaluation, RuleOutcome, enabled, rule
from operators.quality.text import (
    NON_WHITESPACE,
    as_array,
    ends_with_any,
    regroup,
    splitlines,
    to_numpy,
    whitespace_word_counts,
)
from operators.quality.tokenize import Tokens, tokenize

END_PUNCTUATION = (".", "?", "!", '"', "'")
CITATION = r"\[\d*\]|\[edit\]|\[citation needed\]"
POLICY = r"terms of use|privacy policy|cookie policy|uses cookies|use of cookies|use cookies"


@dataclass(frozen=True)
class C4Params(Params):
    remove_citations: bool = True
    filter_no_terminal_punct: bool = True
    min_num_sentences: int | None = 5
    min_words_per_line: int | None = 3
    max_word_length: int | None = 1000
    filter_lorem_ipsum: bool = True
    filter_javascript: bool = True
    filter_curly_bracket: bool = True
    filter_policy: bool = True


def _long_word_pattern(max_len: int) -> str:
    """RE2 caps repetition counts at 1000, so spell ``{max_len + 1}`` in pieces."""
    need = max_len + 1
    return "".join(f"{NON_WHITESPACE}{{{min(1000, need - i)}}}" for i in range(0, need, 1000))


def _has_long_word(lines: pa.Array, max_len: int) -> np.ndarray:
    """Lines with a word longer than ``max_len``; the regex only runs on lines long enough."""
    out = np.zeros(len(lines), dtype=bool)
    candidates = np.flatnonzero(to_numpy(pc.utf8_length(lines)) > max_len)
    if len(candidates):
        out[candidates] = _matches(lines.take(pa.array(candidates)), _long_word_pattern(max_len))
    return out


def _matches(values: pa.Array, pattern: str, *, regex: bool = True) -> np.ndarray:
    found = pc.match_substring_regex(values, pattern) if regex else pc.match_substring(values, pattern)
    return to_numpy(found, bool)


@numba.njit(cache=True, nogil=True)
def _sentence_counts(cps, starts, ends, sent_end, punct, offsets) -> np.ndarray:
    """spaCy sentencizer: a sentence starts at the first token that is not punctuation after a
    sentence-final token. spaCy keeps whitespace other than one plain space as a token of its own
    (not punctuation), so such a gap also starts a sentence."""
    n = len(offsets) - 1
    out = np.zeros(n, dtype=np.int64)
    for d in range(n):
        if offsets[d + 1] == offsets[d]:
            continue
        count = 1
        seen_end = False
        for t in range(offsets[d], offsets[d + 1]):
            if t > offsets[d] and seen_end:
                gap = starts[t] - ends[t - 1]
                if gap > 1 or (gap == 1 and cps[ends[t - 1]] != 32):
                    count += 1
                    seen_end = False
            if seen_end and not punct[t] and not sent_end[t]:
                count += 1
                seen_end = False
            elif sent_end[t]:
                seen_end = True
        out[d] = count
    return out


def sentence_counts(tokens: Tokens) -> np.ndarray:
    sent_end = (tokens.lengths == 1) & tokens.all_chars(cc.SENT_END)
    punct = tokens.all_chars(cc.UNI_PUNCT)
    return _sentence_counts(tokens.cps, tokens.starts, tokens.ends, sent_end, punct, tokens.offsets)


class C4Quality(QualityOperator):
    """C4 heuristics: removes lines (verdict ``modified``) and drops samples."""

    name = "quality_c4"
    version = "1"
    Params = C4Params

    def evaluate(self, texts: pa.Array) -> Evaluation:
        p: C4Params = self.params
        texts = as_array(texts)
        n = len(texts)
        lines = splitlines(texts)
        raw = lines.flatten()
        parents = to_numpy(pc.list_parent_indices(lines))
        stripped = pc.utf8_trim_whitespace(raw)
        line = pc.replace_substring_regex(stripped, CITATION, "") if p.remove_citations else stripped
        lower = pc.utf8_lower(line)

        alive = np.ones(len(raw), dtype=bool)
        if p.max_word_length is not None:
            alive &= ~_has_long_word(stripped, p.max_word_length)
        if p.filter_no_terminal_punct:
            terminal = ends_with_any(line, END_PUNCTUATION)
            alive &= terminal & ~to_numpy(pc.ends_with(line, "..."), bool)
        if p.min_words_per_line is not None:
            alive &= whitespace_word_counts(stripped) >= p.min_words_per_line
        lorem = alive & _matches(lower, "lorem ipsum", regex=False)
        if p.filter_javascript:
            alive &= ~_matches(lower, "javascript", regex=False)
        curly = alive & _matches(line, "{", regex=False)
        if p.filter_policy:
            alive &= ~_matches(lower, POLICY)

        kept_lines = line.filter(pa.array(alive))
        kept_parents = parents[alive]
        outcomes: list[RuleOutcome | None] = [
            rule("lorem_ipsum", np.bincount(parents, lorem, n), 0 if p.filter_lorem_ipsum else None, "<="),
            rule("curly_bracket", np.bincount(parents, curly, n), 0 if p.filter_curly_bracket else None, "<="),
        ]
        if p.min_num_sentences is not None:
            per_line = sentence_counts(tokenize(kept_lines))
            sentences = np.bincount(kept_parents, per_line, n)
            outcomes.append(rule("min_num_sentences", sentences, p.min_num_sentences, ">="))

        new_text = pc.utf8_trim_whitespace(pc.binary_join(regroup(kept_lines, kept_parents, n), "\n"))
        changed = pc.not_equal(new_text, texts)
        removed_mask = ~alive & to_numpy(pc.greater(pc.utf8_length(stripped), 0), bool)
        return Evaluation(
            enabled(outcomes),
            new_texts=pc.if_else(changed, new_text, pa.scalar(None, pa.string())),
            removed=regroup(raw.filter(pa.array(removed_mask)), parents[removed_mask], n),
        )
