"""Texts shared by the kernel tests: the bundled corpora, the mixed-script evaluation set, edited copies
and the edge cases of tests/support/minhash_texts.py."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest

from benchmarks.common import CORPUS_EN, CORPUS_ZH, edited_copies, read_corpus
from tests.support.minhash_texts import EDGES

ROOT = Path(__file__).resolve().parents[3]
EVALSET = ROOT / "benchmarks" / "evalsets" / "zh_mixed.jsonl.gz"


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
