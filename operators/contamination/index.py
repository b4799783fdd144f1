"""An exact n-gram index of eval items, and one streaming probe of sample texts against it.

**N-grams.** Texts become near-dedupe's unit stream (:mod:`operators.contamination.units`). An item
that is CJK by near-dedupe's rule has character n-grams (``char_ngram``, default 20), any other item
word n-grams (``word_ngram``, default 13); an item with fewer units than n has one n-gram, all its
units. A sample is probed in the word stream, and, when it is CJK, in the character stream too, so a
Latin item inside mixed Chinese/English text is found as well as a Chinese one. Probe windows have
every n-gram length the index holds (n, and the lengths of the short items).

**Exact matching.** An n-gram is identified by its string: the units' normalised text, joined by a
space (words) or nothing (characters), with the stream's name. A 64-bit hash of the unit values
(``fmix64`` chained over them, in numba) only preselects: each sample window whose hash is among the
index's is turned back into its string (from the unit spans) and looked up in a dict of strings, so
a match is never a hash collision (no false positives; equal strings have equal hashes, so no false
negatives either). No Bloom filter, no probabilistic step.

**Measures.** For each (sample, item) with a match: the item's distinct n-grams found in the sample,
over all its distinct n-grams (item coverage), and the sample's windows that matched the item, over
the sample's n-grams at its stream's n (sample coverage).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numba
import numpy as np
import pyarrow as pa

from operators.contamination.params import NgramParams
from operators.contamination.units import CHAR, WORD, Units, cjk_documents, folded, unit_text, units
from operators.minhash import _jit
from operators.minhash._hashing import GOLDEN
from operators.minhash.shingle import fmix64

# these kernels call the near-dedupe package's: numba must see those as dispatchers when it compiles
_jit.make_all()

_SEP = {WORD: " ", CHAR: ""}


@numba.njit(cache=True)
def _windows(
    values: np.ndarray, doc_offsets: np.ndarray, sizes: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(doc, first unit, hash) of every window of ``sizes[doc]`` units (0: none) of every document."""
    n_docs = len(doc_offsets) - 1
    total = 0
    for d in range(n_docs):
        k, m = doc_offsets[d + 1] - doc_offsets[d], sizes[d]
        if m > 0 and k >= m:
            total += k - m + 1
    docs = np.empty(total, dtype=np.int64)
    starts = np.empty(total, dtype=np.int64)
    hashes = np.empty(total, dtype=np.uint64)
    w = 0
    for d in range(n_docs):
        lo, k, m = doc_offsets[d], doc_offsets[d + 1] - doc_offsets[d], sizes[d]
        if m <= 0 or k < m:
            continue
        for s in range(lo, lo + k - m + 1):
            h = GOLDEN
            for j in range(s, s + m):
                h = fmix64(h ^ values[j])
            docs[w], starts[w], hashes[w] = d, s, h
            w += 1
    return docs, starts, hashes


def _gram(u: Units, start: int, size: int, mode: int, cache: dict[int, str] | None = None) -> str:
    """The n-gram's string; ``cache`` keeps unit strings across the overlapping windows of one probe."""
    if cache is None:
        return _SEP[mode].join(unit_text(u, j) for j in range(start, start + size))
    parts = []
    for j in range(start, start + size):
        text = cache.get(j)
        if text is None:
            text = cache[j] = unit_text(u, j)
        parts.append(text)
    return _SEP[mode].join(parts)


def _among(hashes: np.ndarray, sorted_index: np.ndarray) -> np.ndarray:
    """Positions of ``hashes`` present in ``sorted_index`` (binary search; the probes are not sorted)."""
    if not len(sorted_index) or not len(hashes):
        return np.zeros(0, dtype=np.int64)
    at = np.minimum(np.searchsorted(sorted_index, hashes), len(sorted_index) - 1)
    return np.flatnonzero(sorted_index[at] == hashes)


@dataclass(frozen=True)
class Item:
    evalset: str  # NAME:vN
    item_id: str
    ngrams: int  # distinct n-grams


@dataclass
class Match:
    """What one sample shares with one item."""

    item: Item
    item_ngrams: set[str] = field(default_factory=set)  # the item's distinct n-grams found
    sample_windows: int = 0  # the sample's windows that are n-grams of the item


@dataclass(frozen=True)
class Probe:
    """One probed sample: its n-gram count and its matches, by item."""

    sample_ngrams: int
    matches: list[Match]


class EvalIndex:
    """The n-grams of eval items (of one or several eval set versions), for exact probing."""

    def __init__(self, params: NgramParams | None = None) -> None:
        self.params = params or NgramParams()
        self.items: list[Item] = []
        self._grams: dict[tuple[int, str], list[int]] = {}  # (stream, n-gram) -> items holding it
        self._hashes: dict[tuple[int, int], set[int]] = defaultdict(set)  # (stream, length) -> hashes
        self._sorted: dict[tuple[int, int], np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.items)

    def _n(self, mode: int) -> int:
        return self.params.char_ngram if mode == CHAR else self.params.word_ngram

    def _modes(self, data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """Each text's stream: near-dedupe's script rule, unless ``script`` forces one."""
        n = len(offsets) - 1
        if self.params.script == "latin":
            return np.zeros(n, dtype=bool)
        if self.params.script == "cjk":
            return np.ones(n, dtype=bool)
        return cjk_documents(data, offsets, self.params.cjk_ratio)

    def add(self, evalset: str, item_ids: Sequence[str], texts: pa.Array | pa.ChunkedArray) -> None:
        """Index the items of one eval set version (an item with no units at all has no n-gram)."""
        data, offsets = folded(texts)
        cjk = self._modes(data, offsets)
        for mode in (WORD, CHAR):
            u = units(data, offsets, mode)
            counts = np.diff(u.doc_offsets)
            mine = cjk if mode == CHAR else ~cjk
            sizes = np.where(mine, np.minimum(counts, self._n(mode)), 0).astype(np.int64)
            docs, starts, hashes = _windows(u.values, u.doc_offsets, sizes)
            per_doc: dict[int, set[str]] = defaultdict(set)
            for d, s, h in zip(docs.tolist(), starts.tolist(), hashes.tolist(), strict=True):
                gram = _gram(u, s, int(sizes[d]), mode)
                per_doc[d].add(gram)
                self._hashes[(mode, int(sizes[d]))].add(h)
            for d in np.flatnonzero(mine).tolist():
                index = len(self.items)
                self.items.append(Item(evalset, str(item_ids[d]), len(per_doc[d])))
                for gram in per_doc[d]:
                    self._grams.setdefault((mode, gram), []).append(index)
        self._sorted = {
            key: np.fromiter(sorted(hs), dtype=np.uint64, count=len(hs)) for key, hs in self._hashes.items()
        }

    def probe(self, texts: pa.Array | pa.ChunkedArray) -> list[Probe]:
        """Each text's matches against the index (see the module for the measures)."""
        data, offsets = folded(texts)
        n_docs = len(offsets) - 1
        cjk = self._modes(data, offsets)
        found: list[dict[int, Match]] = [{} for _ in range(n_docs)]
        sample_ngrams = np.zeros(n_docs, dtype=np.int64)
        for mode in (WORD, CHAR):
            lengths = sorted(m for (md, m) in self._sorted if md == mode)
            streamed = ~cjk if mode == WORD else cjk
            if not lengths and not streamed.any():
                continue
            probed = np.ones(n_docs, dtype=bool) if mode == WORD else cjk
            u = units(data, offsets, mode, probed)
            counts = np.diff(u.doc_offsets)
            n = self._n(mode)
            own = np.where(counts >= n, counts - n + 1, np.minimum(counts, 1))
            sample_ngrams = np.where(streamed, own, sample_ngrams)
            cache: dict[int, str] = {}
            for m in lengths:
                docs, starts, hashes = _windows(u.values, u.doc_offsets, np.where(probed, m, 0).astype(np.int64))
                for w in _among(hashes, self._sorted[(mode, m)]).tolist():
                    d, s = int(docs[w]), int(starts[w])
                    gram = _gram(u, s, m, mode, cache)
                    for index in self._grams.get((mode, gram), ()):
                        match = found[d].setdefault(index, Match(self.items[index]))
                        match.item_ngrams.add(gram)
                        match.sample_windows += 1
        return [Probe(int(sample_ngrams[d]), [found[d][i] for i in sorted(found[d])]) for d in range(n_docs)]
