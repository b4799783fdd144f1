"""The exact reference that near-duplicate quality is measured against, in plain Python.

Normalisation: NFKC, lower-case, delete every Unicode punctuation and symbol character (P*, S*).
Then, whatever shingling the operator under test uses:

* :func:`char_shingles` (Chinese and mixed text): delete every whitespace character too and take
  every ``n``-character substring;
* :func:`word_shingles` (English): split on whitespace and take every ``n``-word sequence.

A text shorter than ``n`` units is one shingle of all of it. Two documents are duplicates when
the Jaccard of their shingle *sets* reaches the threshold; :func:`similar_pairs` finds every such
pair exactly (no sketching), so it is the ground truth for precision and recall.
"""

from __future__ import annotations

import math
import unicodedata
from collections import defaultdict
from collections.abc import Iterable


class _Deletions(dict):
    """``str.translate`` table deleting P* and S* characters, filled as characters are met."""

    def __missing__(self, cp: int) -> int | None:
        value = None if unicodedata.category(chr(cp))[0] in "PS" else cp
        self[cp] = value
        return value


_DELETE = _Deletions()


def normalise(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower().translate(_DELETE)


def char_shingles(text: str, n: int = 5) -> set[str]:
    chars = "".join(normalise(text).split())
    if len(chars) < n:
        return {chars}
    return {chars[i : i + n] for i in range(len(chars) - n + 1)}


def word_shingles(text: str, n: int = 5) -> set[str]:
    words = normalise(text).split()
    if len(words) < n:
        return {" ".join(words)}
    return {" ".join(words[i : i + n]) for i in range(len(words) - n + 1)}


def similar_pairs(sets: Iterable[set[str]], threshold: float) -> list[tuple[int, int, int, int]]:
    """Every pair ``(i, j, common, union)``, ``i < j``, whose Jaccard ``common / union`` is >= threshold.

    Exact, by AllPairs prefix filtering: with shingles ordered rarest first, two sets with
    Jaccard >= t share a shingle among the first ``|x| - ceil(t |x|) + 1`` of each, so only pairs
    sharing a prefix shingle are compared, and each is compared in full.
    """
    vocab: dict[str, int] = {}
    ids = [sorted({vocab.setdefault(s, len(vocab)) for s in shingles}) for shingles in sets]
    freq = [0] * len(vocab)
    for x in ids:
        for token in x:
            freq[token] += 1
    rank = {token: r for r, token in enumerate(sorted(range(len(vocab)), key=lambda t: (freq[t], t)))}
    ordered = [sorted(rank[t] for t in x) for x in ids]
    index: dict[int, list[int]] = defaultdict(list)
    pairs = []
    for d, x in enumerate(ordered):
        prefix = len(x) - math.ceil(threshold * len(x) - 1e-9) + 1
        candidates = {e for token in x[:prefix] for e in index[token]}
        for token in x[:prefix]:
            index[token].append(d)
        xs = set(x)
        for e in sorted(candidates):
            y = ordered[e]
            if min(len(x), len(y)) < threshold * max(len(x), len(y)) - 1e-9:
                continue
            common = len(xs.intersection(y))
            union = len(x) + len(y) - common
            if common >= threshold * union - 1e-9:
                pairs.append((e, d, common, union))
    pairs.sort()
    return pairs
