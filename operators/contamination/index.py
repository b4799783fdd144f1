"""An exact n-gram index of eval items, and one streaming probe of sample texts against it.

**N-grams.** Texts become near-dedupe's unit stream (:mod:`operators.contamination.units`). An item
that is CJK by near-dedupe's rule has character n-grams (``char_ngram``, default 20), any other item
word n-grams (``word_ngram``, default 13); an item with fewer units than n has one n-gram, all its
units. A sample is probed in the word stream, and, when it is CJK, in the character stream too, so a
Latin item inside mixed Chinese/English text is found as well as a Chinese one. Probe windows have
every n-gram length the index holds (n, and the lengths of the short items).

**Exact matching.** An n-gram is identified by its string: the units' normalised text, joined by a
space (words) or nothing (characters), with the stream's name. A 64-bit hash of the unit values (a
polynomial rolling hash through ``fmix64``) only preselects: each sample window whose hash is among the
index's is compared, byte by byte, with the indexed n-gram's string (rebuilt from the window's unit
spans), so a match is never a hash collision (no false positives; equal strings have equal hashes, so
no false negatives either). No Bloom filter, no probabilistic step: the bitmap in front of the hash
table only saves cache misses and decides nothing.

**Why hand-written numba.** The probe is one pass over a release's units, and what costs is per window:
Python objects per window (strings, dict lookups) made the first version 6x the plain-Python baseline
only. No library does exact n-gram probing over Arrow buffers with spans for confirmation (datatrove and
dolma hash n-grams in Python or use Bloom filters), so the kernel rolls the hash (one multiply-add a
unit), checks a cache-sized bitmap and an open-addressing table, and confirms by bytes, all in numba
over the batch's buffers; Python only sees the (rare) confirmed windows. Index building is Python
(eval sets are small).

**Measures.** For each (sample, item) with a match: the item's distinct n-grams found in the sample,
over all its distinct n-grams (item coverage), and the sample's windows that matched the item, over
the sample's n-grams at its stream's n (sample coverage).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import NamedTuple

import numba
import numpy as np
import pyarrow as pa

from operators.contamination.params import NgramParams
from operators.contamination.units import CHAR, WORD, Units, cjk_documents, folded, unit_text, units
from operators.minhash import _jit
from operators.minhash.normalize import punct_or_symbol_table
from operators.minhash.shingle import _decode, fmix64

# these kernels call the near-dedupe package's: numba must see those as dispatchers when it compiles
_jit.make_all()

# these kernels call the near-dedupe package's: numba must see those as dispatchers when it compiles
_jit.make_all()

_SEP = {WORD: " ", CHAR: ""}


_B = np.uint64(0x100000001B3)  # the rolling hash's multiplier (odd: every power of it is a unit mod 2**64)


@numba.njit(cache=True)
def _windows(
    values: np.ndarray, doc_offsets: np.ndarray, sizes: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(doc, first unit, hash) of every window of ``sizes[doc]`` units (0: none) of every document; used to
    index the (few) eval items, so it materialises every window."""
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
            h = np.uint64(0)
            for j in range(s, s + m):
                h = h * _B + values[j]
            docs[w], starts[w], hashes[w] = d, s, fmix64(h)
            w += 1
    return docs, starts, hashes


@numba.njit(cache=True)
def _same(
    data: np.ndarray,
    drop: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    s: int,
    m: int,
    sep: int,
    gram_bytes: np.ndarray,
    lo: int,
    hi: int,
) -> bool:
    """Whether units ``s .. s+m-1`` spell the n-gram ``gram_bytes[lo:hi]``: their folded bytes with P*/S*
    code points skipped, joined by byte ``sep`` (-1: none), compared byte by byte (what :func:`_gram` and
    :func:`~operators.contamination.units.unit_text` make as a string, without making it)."""
    pos = lo
    for j in range(s, s + m):
        if sep >= 0 and j > s:
            if pos >= hi or gram_bytes[pos] != sep:
                return False
            pos += 1
        i = starts[j]
        while i < ends[j]:
            cp, nxt = _decode(data, i)
            if not drop[cp]:
                if pos + (nxt - i) > hi:
                    return False
                for b in range(i, nxt):
                    if gram_bytes[pos] != data[b]:
                        return False
                    pos += 1
            i = nxt
    return pos == hi


_EMPTY = np.uint64(0xFFFFFFFFFFFFFFFF)  # a free slot's n-gram id
_SIX, _LOW6 = np.uint64(6), np.uint64(63)


@numba.njit(cache=True)
def _probe_kernel(
    data: np.ndarray,
    drop: np.ndarray,
    values: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    doc_offsets: np.ndarray,
    sep: int,
    mask: np.uint64,
    lengths: np.ndarray,
    powers: np.ndarray,
    bases: np.ndarray,
    sizes: np.ndarray,
    shifts: np.ndarray,
    slots: np.ndarray,
    fbases: np.ndarray,
    fshifts: np.ndarray,
    bitmaps: np.ndarray,
    gram_bytes: np.ndarray,
    gram_offsets: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(doc, n-gram id) of every window (of each length in ``lengths``) whose string is an indexed
    n-gram, in one pass over the units.

    The window hash rolls (one multiply-add a unit, not one a unit of the window), its 64 bits
    (``mask``: fewer, in tests) preselect through an open-addressing table a length (``slots`` rows
    ``bases[l] .. bases[l] + sizes[l]``: (hash, n-gram id), one cache line a probe), and each
    preselected window is confirmed against every indexed n-gram of that hash by :func:`_same`.
    Before the table, a window's top key bits are looked up in a bitmap of the keys' top bits (``bitmaps``,
    16 bits an n-gram, so it stays in cache while the table does not): most windows stop there. It has
    no false negatives and decides nothing, like the table: only :func:`_same` makes a match.
    Nothing is allocated per window."""
    n_docs = len(doc_offsets) - 1
    cap = 1024
    hit_docs = np.empty(cap, dtype=np.int64)
    hit_grams = np.empty(cap, dtype=np.int64)
    k = 0
    for d in range(n_docs):
        lo, hi = doc_offsets[d], doc_offsets[d + 1]
        for li in range(len(lengths)):
            m = lengths[li]
            if hi - lo < m:
                continue
            power, base, size, shift = powers[li], bases[li], sizes[li], shifts[li]
            fbase, fshift = fbases[li], fshifts[li]
            h = np.uint64(0)
            for j in range(lo, lo + m - 1):
                h = h * _B + values[j]
            for s in range(lo, hi - m + 1):
                h = h * _B + values[s + m - 1]
                key = fmix64(h) & mask
                bit = key >> fshift
                if not (bitmaps[fbase + np.int64(bit >> _SIX)] >> (bit & _LOW6)) & np.uint64(1):
                    h -= values[s] * power
                    continue
                slot = np.int64(key >> shift)
                while slots[base + slot, 1] != _EMPTY:
                    if slots[base + slot, 0] == key:
                        g = np.int64(slots[base + slot, 1])
                        if _same(data, drop, starts, ends, s, m, sep, gram_bytes, gram_offsets[g], gram_offsets[g + 1]):
                            if k == cap:
                                cap *= 2
                                hit_docs = np.concatenate((hit_docs, np.empty(cap - k, dtype=np.int64)))
                                hit_grams = np.concatenate((hit_grams, np.empty(cap - k, dtype=np.int64)))
                            hit_docs[k], hit_grams[k] = d, g
                            k += 1
                            break  # n-gram strings are distinct: at most one can equal the window
                    slot = (slot + 1) & (size - 1)
                h -= values[s] * power
    return hit_docs[:k].copy(), hit_grams[:k].copy()


@numba.njit(cache=True)
def _fill_table(keys: np.ndarray, grams: np.ndarray, n_slots: int, shift: np.uint64) -> np.ndarray:
    slots = np.zeros((n_slots, 2), dtype=np.uint64)
    slots[:, 1] = _EMPTY
    for i in range(len(keys)):
        slot = np.int64(keys[i] >> shift)
        while slots[slot, 1] != _EMPTY:
            slot = (slot + 1) & (n_slots - 1)
        slots[slot, 0], slots[slot, 1] = keys[i], np.uint64(grams[i])
    return slots


def _gram(u: Units, start: int, size: int, mode: int) -> str:
    """The n-gram's string: its units' normalised text joined by the stream's separator."""
    return _SEP[mode].join(unit_text(u, j) for j in range(start, start + size))


@dataclass(frozen=True)
class _Tables:
    """The indexed n-grams of one stream, a hash table a length, as the probe kernel reads them."""

    lengths: np.ndarray  # int64
    powers: np.ndarray  # uint64: _B ** (length - 1), the weight of the unit a window rolls out
    bases: np.ndarray  # int64: each table's first row in ``slots``
    sizes: np.ndarray  # int64: its rows (a power of 2)
    shifts: np.ndarray  # uint64: a slot is a key's top bits (keys are mixed)
    slots: np.ndarray  # (rows, 2) uint64: (hash, n-gram id)
    fbases: np.ndarray  # int64: each bitmap's first word in ``bitmaps``
    fshifts: np.ndarray  # uint64: a key's bitmap bit is its top bits
    bitmaps: np.ndarray  # uint64 words


@dataclass(frozen=True)
class Item:
    evalset: str  # NAME:vN
    item_id: str
    ngrams: int  # distinct n-grams


class Match(NamedTuple):  # a tuple: made once a (sample, item) pair, cheaply
    """What one sample shares with one item."""

    item: Item
    item_ngrams: int  # the item's distinct n-grams found in the sample
    sample_windows: int  # the sample's windows that are n-grams of the item


class Probe(NamedTuple):  # a tuple: made once a sample, cheaply
    """One probed sample: its n-gram count and its matches, by item."""

    sample_ngrams: int
    matches: tuple[Match, ...]


@dataclass(frozen=True)
class Matches:
    """A batch probed: each text's n-gram count, and the matches of those with any, by position."""

    sample_ngrams: np.ndarray
    by_doc: dict[int, tuple[Match, ...]]


class EvalIndex:
    """The n-grams of eval items (of one or several eval set versions), for exact probing.

    ``preselect_bits`` (64) is how many bits of the window hash preselect; fewer make every hash collide
    (tests use 0 to show that matching rests on the strings alone)."""

    def __init__(self, params: NgramParams | None = None, *, preselect_bits: int = 64) -> None:
        self.params = params or NgramParams()
        self.items: list[Item] = []
        self._mask = np.uint64((1 << preselect_bits) - 1)
        self._ids: dict[tuple[int, str], int] = {}  # (stream, n-gram) -> n-gram id
        self._gram_items: list[list[int]] = []  # n-gram id -> the items holding it
        self._gram_hash: list[int] = []
        self._gram_key: list[tuple[int, int]] = []  # n-gram id -> (stream, length)
        self._gram_text: list[bytes] = []
        self._tables: dict[int, _Tables] = {}
        self._bytes = np.zeros(0, dtype=np.uint8)
        self._offsets = np.zeros(1, dtype=np.int64)
        self._item_of = np.zeros(0, dtype=np.int64)  # CSR of _gram_items
        self._item_offsets = np.zeros(1, dtype=np.int64)

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
            per_doc: dict[int, set[int]] = {}
            for d, s, h in zip(docs.tolist(), starts.tolist(), hashes.tolist(), strict=True):
                size = int(sizes[d])
                gram = _gram(u, s, size, mode)
                gid = self._ids.get((mode, gram))
                if gid is None:
                    gid = self._ids[(mode, gram)] = len(self._gram_items)
                    self._gram_items.append([])
                    self._gram_hash.append(h)
                    self._gram_key.append((mode, size))
                    self._gram_text.append(gram.encode("utf-8"))
                per_doc.setdefault(d, set()).add(gid)
            for d in np.flatnonzero(mine).tolist():
                index = len(self.items)
                grams = per_doc.get(d, set())
                self.items.append(Item(evalset, str(item_ids[d]), len(grams)))
                for gid in grams:
                    self._gram_items[gid].append(index)
        self._build()

    def _build(self) -> None:
        """The flat arrays the kernel reads: n-gram bytes, items per n-gram, one hash table a (stream, length)."""
        self._offsets = np.zeros(len(self._gram_text) + 1, dtype=np.int64)
        np.cumsum([len(t) for t in self._gram_text], out=self._offsets[1:])
        self._bytes = np.frombuffer(b"".join(self._gram_text), dtype=np.uint8)
        self._item_offsets = np.zeros(len(self._gram_items) + 1, dtype=np.int64)
        np.cumsum([len(i) for i in self._gram_items], out=self._item_offsets[1:])
        self._item_of = np.fromiter((i for items in self._gram_items for i in items), dtype=np.int64)
        hashes = np.array(self._gram_hash, dtype=np.uint64) & self._mask
        keys = np.array(self._gram_key, dtype=np.int64).reshape(-1, 2)
        self._tables = {}
        for mode in (WORD, CHAR):
            lengths = sorted({m for md, m in self._gram_key if md == mode})
            if not lengths:
                continue
            tables, sizes, shifts, bitmaps, fshifts = [], [], [], [], []
            for m in lengths:
                gids = np.flatnonzero((keys[:, 0] == mode) & (keys[:, 1] == m))
                n_slots = 1 << max(4, int(2 * len(gids)).bit_length())  # load factor <= 1/2
                shifts.append(64 - (n_slots.bit_length() - 1))
                tables.append(_fill_table(hashes[gids], gids.astype(np.int64), n_slots, np.uint64(shifts[-1])))
                sizes.append(n_slots)
                bits = max(12, int(16 * len(gids)).bit_length())
                fshifts.append(64 - bits)
                bitmap = np.zeros(1 << (bits - 6), dtype=np.uint64)
                top = hashes[gids] >> np.uint64(64 - bits)
                np.bitwise_or.at(bitmap, (top >> np.uint64(6)).astype(np.int64), np.uint64(1) << (top & np.uint64(63)))
                bitmaps.append(bitmap)
            self._tables[mode] = _Tables(
                lengths=np.array(lengths, dtype=np.int64),
                powers=np.array([pow(int(_B), m - 1, 1 << 64) for m in lengths], dtype=np.uint64),
                bases=np.r_[0, np.cumsum(sizes)[:-1]].astype(np.int64),
                sizes=np.array(sizes, dtype=np.int64),
                shifts=np.array(shifts, dtype=np.uint64),
                slots=np.concatenate(tables),
                fbases=np.r_[0, np.cumsum([len(b) for b in bitmaps])[:-1]].astype(np.int64),
                fshifts=np.array(fshifts, dtype=np.uint64),
                bitmaps=np.concatenate(bitmaps),
            )

    def probe(self, texts: pa.Array | pa.ChunkedArray) -> list[Probe]:
        """Each text's matches against the index (see the module for the measures)."""
        found = self.matches(texts)
        probes = list(map(Probe, found.sample_ngrams.tolist(), repeat((), len(found.sample_ngrams))))
        for d, matches in found.by_doc.items():
            probes[d] = Probe(probes[d].sample_ngrams, matches)
        return probes

    def matches(self, texts: pa.Array | pa.ChunkedArray) -> Matches:
        """:meth:`probe`, sparse: every text's n-gram count, and the matches of the texts that have any
        (what a release check needs; most texts match nothing and get no object)."""
        data, offsets = folded(texts)
        n_docs = len(offsets) - 1
        cjk = self._modes(data, offsets)
        sample_ngrams = np.zeros(n_docs, dtype=np.int64)
        hit_docs, hit_grams = [], []
        drop = punct_or_symbol_table()
        for mode in (WORD, CHAR):
            t = self._tables.get(mode)
            streamed = ~cjk if mode == WORD else cjk
            if t is None and not streamed.any():
                continue
            probed = np.ones(n_docs, dtype=bool) if mode == WORD else cjk
            u = units(data, offsets, mode, probed)
            counts = np.diff(u.doc_offsets)
            n = self._n(mode)
            own = np.where(counts >= n, counts - n + 1, np.minimum(counts, 1))
            sample_ngrams = np.where(streamed, own, sample_ngrams)
            sep = ord(_SEP[mode]) if _SEP[mode] else -1
            if t is None:
                continue
            docs, grams = _probe_kernel(
                data, drop, u.values, u.starts, u.ends, u.doc_offsets, sep, self._mask,
                t.lengths, t.powers, t.bases, t.sizes, t.shifts, t.slots, t.fbases, t.fshifts, t.bitmaps,
                self._bytes, self._offsets,
            )  # fmt: skip
            hit_docs.append(docs)
            hit_grams.append(grams)
        return Matches(sample_ngrams, self._matches(hit_docs, hit_grams))

    def _matches(self, hit_docs: list[np.ndarray], hit_grams: list[np.ndarray]) -> dict[int, tuple[Match, ...]]:
        """Matches per (sample, item) from the confirmed windows, counted with numpy (hits are few)."""
        found: dict[int, tuple[Match, ...]] = {}
        docs = np.concatenate(hit_docs) if hit_docs else np.zeros(0, dtype=np.int64)
        grams = np.concatenate(hit_grams) if hit_grams else np.zeros(0, dtype=np.int64)
        if len(docs):
            per = self._item_offsets[grams + 1] - self._item_offsets[grams]  # items holding each n-gram
            docs, grams = np.repeat(docs, per), np.repeat(grams, per)
            at = np.repeat(np.cumsum(per) - per, per)
            within = np.arange(len(docs)) - at
            items = self._item_of[self._item_offsets[grams] + within]
            pair = docs * len(self.items) + items
            order = np.lexsort((grams, pair))
            pair, grams = pair[order], grams[order]
            new_pair = np.r_[True, pair[1:] != pair[:-1]]
            new_gram = new_pair | np.r_[True, grams[1:] != grams[:-1]]
            starts = np.flatnonzero(new_pair)
            windows = np.diff(np.r_[starts, len(pair)])  # hits per (sample, item)
            distinct = np.add.reduceat(new_gram.astype(np.int64), starts)  # distinct n-grams per (sample, item)
            for p, w, c in zip(pair[starts].tolist(), windows.tolist(), distinct.tolist(), strict=True):
                d, i = divmod(p, len(self.items))
                found[d] = (*found.get(d, ()), Match(self.items[i], c, w))
        return found
