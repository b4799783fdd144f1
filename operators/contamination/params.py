"""What the contamination check measures: n-gram sizes and the script rule (defaults and why)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from operators.base import Params
from storage.errors import Invalid

WORD_NGRAM = 13  # GPT-3's decontamination (Brown et al. 2020, appendix C): 13-word overlaps
# Chinese averages about 1.5-1.7 characters a word (segmented corpora such as PKU's), so 13 words are some
# 20 characters: long enough that set phrases and chengyu (4-10 characters) shared by any two texts do not
# match, short enough that a typical question (30-150 characters) has many n-grams to find it by.
CHAR_NGRAM = 20


@dataclass(frozen=True)
class NgramParams(Params):
    """Word n-grams for space-delimited text, character n-grams for CJK (near-dedupe's ``auto`` rule)."""

    word_ngram: int = WORD_NGRAM
    char_ngram: int = CHAR_NGRAM
    script: Literal["auto", "latin", "cjk"] = "auto"
    cjk_ratio: float = 0.0

    def __post_init__(self) -> None:
        if self.word_ngram < 1 or self.char_ngram < 1:
            raise Invalid(f"n-gram sizes must be >= 1, got word {self.word_ngram}, char {self.char_ngram}")
        if self.script not in ("auto", "latin", "cjk"):
            raise Invalid(f"script must be auto, latin or cjk, not {self.script!r}")
        if not 0.0 <= self.cjk_ratio <= 1.0:
            raise Invalid(f"cjk_ratio must be in [0, 1], got {self.cjk_ratio}")
