"""How closely operators.quality.tokenize matches spaCy's blank English tokenizer (as datatrove
uses it). Run in the bench venv: benchmarks/.venv/bin/python benchmarks/tokenizer_parity.py [N]"""

from __future__ import annotations

import collections
import gzip
import json
import sys
import time

import pyarrow as pa
import spacy

from operators.quality.tokenize import tokenize

CORPUS = "/work/shared/data/debian_en.jsonl.gz"


def main(n: int) -> None:
    with gzip.open(CORPUS, "rt") as f:
        texts = [json.loads(line)["text"] for _, line in zip(range(n), f, strict=False)]
    t = time.perf_counter()
    tokens = tokenize(pa.array(texts))
    ours_s = time.perf_counter() - t
    nlp = spacy.blank("en")
    t = time.perf_counter()
    ref = [[tok.text.strip() for tok in nlp(text) if tok.text.strip()] for text in texts]
    spacy_s = time.perf_counter() - t
    same = 0
    diffs: collections.Counter[tuple[str, str]] = collections.Counter()
    for d, want in enumerate(ref):
        got = tokens.texts(d)
        if got == want:
            same += 1
            continue
        a, b = set(collections.Counter(got).items()), set(collections.Counter(want).items())
        diffs[(" ".join(w for w, _ in sorted(a - b))[:60], " ".join(w for w, _ in sorted(b - a))[:60])] += 1
    speed = f"ours {n / ours_s:,.0f} docs/s, spaCy {n / spacy_s:,.0f} docs/s"
    print(f"{same}/{n} docs tokenized identically; {speed}")
    for (ours, theirs), count in diffs.most_common(40):
        print(f"{count:5d}  ours: {ours!r:62}  spacy: {theirs!r}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3000)
