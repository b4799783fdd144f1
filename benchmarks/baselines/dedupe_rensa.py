"""Baseline: near-duplicate removal as a user would script it with rensa and Python shingling.

    python benchmarks/baselines/dedupe_rensa.py IN.jsonl[.gz] --output OUT.jsonl[.gz]

read JSONL → normalise → shingle (plain Python) → ``RMinHash`` (rensa's Rust MinHash, built in
bulk with ``RMinHash.from_token_sets``, 128 permutations) → ``RMinHashLSH(threshold=0.8,
num_bands=16)`` (the layout rensa's own examples use), streaming: a record is dropped when a
candidate from the index has estimated Jaccard ≥ the threshold, otherwise inserted and kept;
kept lines are written unchanged.

Normalising and shingling follow ``lineage dedupe``'s defaults: NFKC, lower-case, delete every
Unicode punctuation and symbol character (P*, S*); a text with any Han, kana, Bopomofo or Hangul
character is shingled by ``--ngram`` consecutive non-whitespace characters, any other text by
``--ngram`` consecutive words (a shorter text is one shingle).

This file is a fixed reference for ``benchmarks/dedupe_e2e.py``: it is never changed once
committed, so it holds its own copy of the shingling instead of importing the project.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import unicodedata
from pathlib import Path

from rensa import RMinHash, RMinHashLSH

_CJK = (
    "\u1100-\u11ff\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U000323af"
)
_HAS_CJK = re.compile(f"[{_CJK}]")
_CHUNK = 4096


class _Deletions(dict):
    """``str.translate`` table deleting P* and S* characters, filled as characters are met."""

    def __missing__(self, cp: int) -> int | None:
        value = None if unicodedata.category(chr(cp))[0] in "PS" else cp
        self[cp] = value
        return value


_DELETE = _Deletions()


def shingles(text: str, n: int) -> list[str]:
    norm = unicodedata.normalize("NFKC", text).lower().translate(_DELETE)
    if _HAS_CJK.search(norm):
        chars = "".join(norm.split())
        return [chars[i : i + n] for i in range(len(chars) - n + 1)] or [chars]
    words = norm.split()
    if len(words) < n:
        return [" ".join(words)]
    return [" ".join(words[i : i + n]) for i in range(len(words) - n + 1)]


def _open(path: Path, mode: str):
    return gzip.open(path, mode) if path.name.endswith(".gz") else path.open(mode)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input", type=Path)
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--text-field", default="text")
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument("--num-perm", type=int, default=128)
    parser.add_argument("--num-bands", type=int, default=16)
    parser.add_argument("--ngram", type=int, default=5)
    args = parser.parse_args()

    lsh = RMinHashLSH(threshold=args.threshold, num_perm=args.num_perm, num_bands=args.num_bands)
    sketches: dict[int, RMinHash] = {}
    kept = dropped = row = 0

    def flush(lines: list[bytes], out) -> None:
        nonlocal kept, dropped, row
        texts = [json.loads(line)[args.text_field] for line in lines]
        minhashes = RMinHash.from_token_sets([shingles(t, args.ngram) for t in texts], args.num_perm, 42)
        for line, m in zip(lines, minhashes, strict=True):
            if any(m.jaccard(sketches[c]) >= args.threshold for c in lsh.query(m)):
                dropped += 1
            else:
                lsh.insert(row, m)
                sketches[row] = m
                out.write(line if line.endswith(b"\n") else line + b"\n")
                kept += 1
            row += 1

    with _open(args.input, "rb") as src, _open(args.output, "wb") as out:
        chunk: list[bytes] = []
        for line in src:
            chunk.append(line)
            if len(chunk) == _CHUNK:
                flush(chunk, out)
                chunk = []
        if chunk:
            flush(chunk, out)
    print(f"kept {kept}, dropped {dropped}")


if __name__ == "__main__":
    main()
