"""A per-code-point flag table, so numba kernels classify characters with one array lookup.

The classes mirror what the reference filters look at: Python's ``str.isalpha``/``isspace``
(datatrove's checks), the character classes of spaCy's rule-based English tokenizer (prefix,
suffix, quote, hyphen, lower/upper case with "uncased" letters in both, as spaCy's ``ALPHA_LOWER``
and ``ALPHA_UPPER`` do), and sentence-final punctuation for sentence counting. Built over all
0x110000 code points (about 1.3 s of Python) once per Unicode version and per content of this module,
and kept on disk (:mod:`operators.code_point_tables`): a process loads it in about a millisecond.
"""

from __future__ import annotations

import unicodedata
from functools import cache
from pathlib import Path

import numpy as np

from operators import code_point_tables

SPACE = 1 << 0  # str.isspace
ALPHA = 1 << 1  # str.isalpha
LOWER = 1 << 2  # lowercase or uncased letter (spaCy ALPHA_LOWER)
UPPER = 1 << 3  # uppercase or uncased letter (spaCy ALPHA_UPPER)
DIGIT = 1 << 4  # ASCII 0-9 (spaCy's patterns use [0-9])
SYMBOL = 1 << 5  # punctuation, symbol or control: a word made only of these is a "symbol word"
PREFIX = 1 << 6  # split off the start of a whitespace-delimited chunk
SUFFIX = 1 << 7  # split off the end of a chunk
QUOTE = 1 << 8
PUNCT = 1 << 9  # spaCy's punctuation list (a "." after one of these is a suffix)
ICON = 1 << 10  # other symbols (category So): always split off
SENT_END = 1 << 11  # a one-character token that ends a sentence
UNI_PUNCT = 1 << 12  # Unicode category P* (spaCy's ``is_punct``)
CURRENCY = 1 << 13
INFIX = 1 << 14  # may start an infix split (a cheap pre-filter for the tokenizer)

# spaCy English tokenizer character lists (spacy/lang/char_classes.py), as plain sets.
SPACY_PUNCT = set("…,:;!?¿؟¡()[]{}<>_#*&。？！，、；：～·।،۔؛٪")
SPACY_QUOTES = set("'\"”“`‘´’‚,„»«「」『』（）〔〕【】《》〈〉〈〉⟦⟧")
SPACY_CURRENCY = set("$£€¥฿₽﷼") | {chr(c) for c in range(0x20A0, 0x20C0)}
PREFIX_ONLY = set("§%=—–+") | SPACY_CURRENCY  # "+" only when no digit follows (kernel checks)
SUFFIX_ONLY = set("—–")
HYPHENS = set("-–—~")
INFIX_SEPARATORS = set(":<>=/")
SENTENCE_TERMINALS = set(".!?։؟۔܀܁܂߹।॥၊။።፧፨᙮᜵᜶᠃᠉᥄᥅᪨᪩᪪᪫᭚᭛᭞᭟᰻᰼᱾᱿‼‽⁇⁈⁉⸮⸼꓿꘎꘏꛳꛷꡶꡷꣎꣏꤯꧈꧉꩝꩞꩟꫰꫱꯫﹒﹖﹗！．？｡。")


@cache
def flag_table() -> np.ndarray:
    """uint16 flags for every code point (read-only)."""
    return code_point_tables.cached("quality_flags", np.uint16, _build_flags, salt=Path(__file__).read_bytes())


def _build_flags() -> np.ndarray:
    chars = [chr(c) for c in range(0x110000)]
    categories = [unicodedata.category(c) for c in chars]
    flags = np.zeros(0x110000, dtype=np.uint16)
    is_alpha = np.fromiter((c.isalpha() for c in chars), bool, len(chars))
    is_lower = np.fromiter((c.islower() for c in chars), bool, len(chars))
    is_upper = np.fromiter((c.isupper() for c in chars), bool, len(chars))
    uncased = is_alpha & ~is_lower & ~is_upper
    cat0 = np.array([c[0] for c in categories])
    flags[np.fromiter((c.isspace() for c in chars), bool, len(chars))] |= SPACE
    flags[is_alpha] |= ALPHA
    flags[is_lower | uncased] |= LOWER
    flags[is_upper | uncased] |= UPPER
    flags[ord("0") : ord("9") + 1] |= DIGIT
    flags[(cat0 == "P") | (cat0 == "S") | (cat0 == "C")] |= SYMBOL
    flags[cat0 == "P"] |= UNI_PUNCT
    flags[np.array([c == "So" for c in categories])] |= ICON
    for chars_, flag in (
        (SPACY_PUNCT | SPACY_QUOTES | PREFIX_ONLY, PREFIX),
        (SPACY_PUNCT | SPACY_QUOTES | SUFFIX_ONLY, SUFFIX),
        (SPACY_QUOTES, QUOTE),
        (SPACY_PUNCT, PUNCT),
        (SENTENCE_TERMINALS, SENT_END),
        (SPACY_CURRENCY, CURRENCY),
    ):
        flags[[ord(c) for c in chars_]] |= flag
    flags[(flags & ICON) > 0] |= PREFIX | SUFFIX | INFIX
    flags[[ord(c) for c in ".…+-*^,–—~:<>=/"]] |= INFIX
    return flags
