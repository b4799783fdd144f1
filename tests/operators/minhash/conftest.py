"""Texts shared by the kernel tests: the bundled corpora, the mixed-script evaluation set, edited copies
and edge cases (empty, whitespace only, punctuation only, full-width forms, astral Han, odd spaces, Greek
and Turkish letters whose lower case depends on context)."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest

from benchmarks.common import CORPUS_EN, CORPUS_ZH, edited_copies, read_corpus

ROOT = Path(__file__).resolve().parents[3]
EVALSET = ROOT / "benchmarks" / "evalsets" / "zh_mixed.jsonl.gz"
# texts whose lower-casing has context or expands (Greek word-final sigma, Turkish dotted capital I), and
# their all-caps copies
CASED = [
    "Η Ελλάδα είναι χώρα της νοτιοανατολικής Ευρώπης. Οι κάτοικοί της μιλούν ελληνικά.",
    "İstanbul ve İzmir, Türkiye'nin en büyük şehirleri arasındadır.",
]
CASED += [t.upper() for t in CASED]
EDGES = [
    "",
    "   \n\t ",
    "!!! ,,, ???",
    "one",
    "two words",
    "a b c d e f g h",
    "Ｆｕｌｌ-Width «Quotes» ½ ™ and\u00a0no-break\u2003spaces\u3000here",
    "emoji 😀 between 😀 words 😀 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 letters",
    "中文",
    "中文文档，包含 English words 和 `commands --flag`。",
    "日本語のテキストとカタカナ、한국어 텍스트",
    "𠀀𠀁𠀂 astral Han 𠀃𠀄𠀅𠀆",
    "x" * 3000,
    "\u0085next\u2028line\u2029para\u205fmath\u180emongolian",
    *CASED,
]


def _texts() -> list[str]:
    en = [d["text"] for d in read_corpus(CORPUS_EN)[:400]]
    zh = [d["text"] for d in read_corpus(CORPUS_ZH)[:300]]
    with gzip.open(EVALSET, "rt", encoding="utf-8") as fh:
        mixed = [json.loads(line)["text"] for _, line in zip(range(300), fh, strict=False)]
    copies = [d["text"] for d in edited_copies([{"id": str(i), "text": t} for i, t in enumerate(en[:50])], 2, seed=5)]
    texts = EDGES + en + zh + mixed + copies
    random.Random(2).shuffle(texts)
    return texts


@pytest.fixture(scope="session")
def texts() -> list[str]:
    return _texts()
