"""Exact character n-gram Jaccard of text pairs, straight from their folded UTF-8 bytes.

This is the reference metric of ``script="mixed"`` (``params.py``): the n-grams of a text's code
points after folding (``normalize.fold``), with every P*/S* and whitespace code point deleted; a
text with fewer than ``n`` such code points is one n-gram of all of them (none when it has none).
Two texts without any n-gram are identical (Jaccard 1.0), as in ``verify._exact_kernel``.

Why hand-written: an English text has about six times as many character n-grams as word n-grams,
so sorted character sets of every candidate (what ``verify.sorted_sets`` would make) cost 2.7 s of
sorting and 280 MB at 254,724 documents. Here a pair never materialises its sets. The edges are
grouped by their first text; that text's n-grams go into an open-addressing table once per group
(slots stamped with the group, so the table is never cleared), and each second text is streamed
against it, inserting the n-grams the first text lacks under a stamp of its own so repeats count
once. An n-gram is a 64-bit polynomial rolling hash of its code points (one multiply per
character), so the values are exact up to 64-bit collisions (for texts not built against the
base, about 2^-64 per pair of distinct n-grams). The 577,012 candidate edges of 254,724 documents
(105 MB) take 2.2 s of one core; the groups are split over the cores (the kernel releases the GIL).

Memory is one table per thread, 16 bytes a slot, sized to twice the bytes of the largest pair it
meets: a pair over :data:`TABLE_LIMIT` bytes (1 MB) is compared by sorted sets instead (4 bytes an
n-gram, one pair at a time). A caller that holds texts for this metric holds them as
:func:`compared_texts` makes them: without what it deletes, 17-19% of the folded bytes of the
bundled and the mixed-script corpora (57 MB of the 330 MB ``lineage dedupe`` holds for 254,724
Chinese documents), with the same Jaccard for every pair.
"""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa

from operators.minhash import small
from operators.minhash._jit import njit
from operators.minhash.lsh import unique_sorted
from operators.minhash.normalize import punct_or_symbol_table
from operators.minhash.params import MinHashParams
from operators.minhash.shingle import _decode, _folded_shingles, is_space, string_buffers
from operators.minhash.verify import exact_jaccard, sorted_sets
from operators.threads import ordered_map, threads

# bytes of a pair's two texts above which it is compared by sorted sets, not in a table (a thread's
# table then stays within 2^22 slots, 64 MB)
TABLE_LIMIT = 1 << 20
# pairs from which the groups are split over every core (below, one thread's work is a few ms)
_PARALLEL_PAIRS = 1 << 14

# an odd multiplier with no structure (MurmurHash3's): with a base like FNV's prime (2^40 + 435) short
# differences of code points could cancel mod 2^64
_BASE = np.uint64(0xFF51AFD7ED558CCD)
_SPREAD = np.uint64(0x9E3779B97F4A7C15)
_SHIFT = np.uint64(32)
_LOW = np.int64(0xFFFFFFFF)


@njit(inline="always")
def _grams(data: np.ndarray, start: int, end: int, drop: np.ndarray, n: int, power: np.uint64, out: np.ndarray) -> int:
    """Rolling hashes of the text's character n-grams into ``out``; returns how many.
    ``power`` is ``_BASE ** (n - 1)``: the weight of the code point leaving the window."""
    window = np.zeros(n, np.uint64)
    count = 0
    slot = 0
    k = 0
    h = np.uint64(0)
    i = start
    while i < end:
        cp, i = _decode(data, i)  # inlined: an ASCII byte is its first branch
        if drop[cp] or is_space(cp):
            continue
        unit = np.uint64(cp) + np.uint64(1)  # never 0, so a short text's hash is not a longer one's
        h = h * _BASE + unit - window[slot] * power * _BASE  # the window is zeros until it is full
        window[slot] = unit
        slot = slot + 1 if slot + 1 < n else 0
        count += 1
        if count >= n:
            out[k] = h
            k += 1
    if 0 < count < n:
        out[k] = h
        k += 1
    return k


@njit(cache=True, nogil=True)
def _compared_kernel(
    data: np.ndarray, offsets: np.ndarray, drop: np.ndarray, ascii_kept: np.ndarray, out: np.ndarray, ends: np.ndarray
) -> int:
    """Each text's bytes without its P*/S* and whitespace code points into ``out``, its end into ``ends``.
    ``ascii_kept[b]``: whether ASCII byte ``b`` stays (a table lookup, not the code point tests)."""
    pos = 0
    for d in range(len(offsets) - 1):
        i, end = offsets[d], offsets[d + 1]
        while i < end:
            b = data[i]
            if b < 0x80:
                out[pos] = b
                pos += ascii_kept[b]
                i += 1
                continue
            cp, nxt = _decode(data, i)
            if not drop[cp] and not is_space(cp):
                for j in range(i, nxt):
                    out[pos] = data[j]
                    pos += 1
            i = nxt
        ends[d + 1] = pos
    return pos


@functools.cache
def _ascii_kept() -> np.ndarray:
    drop = punct_or_symbol_table()
    return np.array([not drop[b] and not chr(b).isspace() for b in range(128)], np.int64)


def compared_texts(folded: pa.Array) -> pa.Array:
    """``folded`` texts (``normalize.fold``, no nulls) without the code points this metric deletes: a large
    string array, in Arrow's pool, whose every pair has the same :func:`character_jaccard` as before."""
    data, offsets = string_buffers(folded)
    size = int(offsets[-1] - offsets[0])  # an empty array has one offset too
    drop = punct_or_symbol_table()
    if small.suits(size <= small.SHINGLE_LIMIT):
        return pa.array(small.compared_texts(folded.to_pylist(), drop), pa.large_string())
    # in Arrow's pool, as ``shingle.concat_releasing``'s buffer: it is held to the end of the run
    out_buf, ends_buf = pa.allocate_buffer(size, resizable=True), pa.allocate_buffer(8 * len(offsets))
    out, ends = np.frombuffer(out_buf, np.uint8), np.frombuffer(ends_buf, np.int64)
    ends[0] = 0
    kept = _compared_kernel(data, offsets, drop, _ascii_kept(), out, ends)
    del out  # before the buffer shrinks under it
    out_buf.resize(kept, shrink_to_fit=True)
    return pa.Array.from_buffers(pa.large_string(), len(offsets) - 1, [None, ends_buf, out_buf])


@njit(inline="always")
def _slot(h: np.uint64, mask: int) -> int:
    return np.int64((h * _SPREAD) >> _SHIFT) & mask


@njit(cache=True, nogil=True)
def _pairs_kernel(
    data: np.ndarray, offsets: np.ndarray, drop: np.ndarray, n: int, src: np.ndarray, dst: np.ndarray
) -> np.ndarray:
    """Jaccard per edge; edges sharing a first text must be adjacent (each group builds its table once).

    A slot is ``(n-gram, stamp)``, side by side so a probe reads one cache line: a first text's n-gram
    is stamped ``group << 32 | (edge + 1 that met it)``, a second text's own ``-(edge + 1)``; any other
    stamp is a free slot (stamps only grow, so nothing is ever cleared)."""
    power = np.uint64(1)
    for _ in range(n - 1):
        power *= _BASE
    out = np.empty(len(src), dtype=np.float64)
    table = np.zeros((16, 2), np.int64)
    grams = np.empty(16, np.uint64)
    group = 0
    first = -1
    in_first = 0
    mask = 0
    for e in range(len(src)):
        a = src[e]
        if a != first:  # a new group: the first text's table
            first, group, in_first = a, group + 1, 0
            length_a = offsets[a + 1] - offsets[a]
            longest = 0
            f = e
            while f < len(src) and src[f] == a:
                longest = max(longest, offsets[dst[f] + 1] - offsets[dst[f]])
                f += 1
            size = 16
            while size < 2 * (length_a + longest + 1):
                size *= 2
            if size > len(table):  # grow only
                table = np.zeros((size, 2), np.int64)
            if max(length_a, longest) + 1 > len(grams):
                grams = np.empty(max(length_a, longest) + 1, np.uint64)
            mask = size - 1
            for t in range(_grams(data, offsets[a], offsets[a + 1], drop, n, power, grams)):
                h = np.int64(grams[t])
                s = _slot(grams[t], mask)
                while (table[s, 1] >> 32) == group and table[s, 0] != h:
                    s = (s + 1) & mask
                if (table[s, 1] >> 32) != group:
                    table[s, 0], table[s, 1] = h, group << 32
                    in_first += 1
        b = dst[e]
        common = 0
        in_second = 0
        mine = -(e + 1)
        for t in range(_grams(data, offsets[b], offsets[b + 1], drop, n, power, grams)):
            h = np.int64(grams[t])
            s = _slot(grams[t], mask)
            # the first text's n-grams came first, so a chain holds them before any of this text's own
            while True:
                stamp = table[s, 1]
                if (stamp >> 32) == group:
                    if table[s, 0] == h:
                        if (stamp & _LOW) != e + 1:  # met for the first time by this edge
                            table[s, 1] = (group << 32) | (e + 1)
                            common += 1
                            in_second += 1
                        break
                elif stamp == mine:
                    if table[s, 0] == h:
                        break
                else:  # free, or stale from another group or edge
                    table[s, 0], table[s, 1] = h, mine
                    in_second += 1
                    break
                s = (s + 1) & mask
        union = in_first + in_second - common
        out[e] = common / union if union else 1.0
    return out


def character_jaccard(
    data: np.ndarray, offsets: np.ndarray, src: np.ndarray, dst: np.ndarray, ngram: int
) -> np.ndarray:
    """Exact Jaccard of the character ``ngram``-gram sets of each pair ``(src[e], dst[e])`` of texts.

    ``data``/``offsets``: folded UTF-8 bytes and int64 offsets (``shingle.string_buffers(fold(texts))``).
    Pairs over :data:`TABLE_LIMIT` bytes are compared by sorted sets (``verify``).
    """
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    offsets = np.asarray(offsets, dtype=np.int64)
    drop = punct_or_symbol_table()
    if small.suits(int(offsets[-1] - offsets[0]) <= small.SHINGLE_LIMIT, len(src) <= small.ROW_LIMIT):
        return small.character_jaccard(data, offsets, drop, ngram, src, dst)
    lengths = np.diff(offsets)
    huge = lengths[src] + lengths[dst] > TABLE_LIMIT
    out = np.empty(len(src), dtype=np.float64)
    if huge.any():
        out[huge] = _by_sets(data, offsets, src[huge], dst[huge], ngram)
    rest = np.flatnonzero(~huge)
    # Jaccard is symmetric: group by the side that repeats more (a star's centre, a cluster's survivor),
    # so its table is built once for all its pairs
    if len(unique_sorted(dst[rest])) < len(unique_sorted(src[rest])):
        src, dst = dst, src
    order = rest[np.argsort(src[rest], kind="stable")]
    out[order] = _in_groups(data, offsets, drop, ngram, src[order], dst[order])
    return out


def _in_groups(
    data: np.ndarray, offsets: np.ndarray, drop: np.ndarray, n: int, src: np.ndarray, dst: np.ndarray
) -> np.ndarray:
    parts = threads() if len(src) >= _PARALLEL_PAIRS else 1
    if parts == 1:
        return _pairs_kernel(data, offsets, drop, n, src, dst)
    # equal slices, each moved forward to a group's start; a pair's value does not depend on the cut
    cuts = np.searchsorted(src, src[np.linspace(0, len(src) - 1, parts + 1).astype(np.int64)[1:-1]])
    cuts = np.unique(np.concatenate([[0], cuts, [len(src)]]))
    slices = list(zip(cuts[:-1], cuts[1:], strict=True))
    done = ordered_map(
        lambda cut: _pairs_kernel(data, offsets, drop, n, src[cut[0] : cut[1]], dst[cut[0] : cut[1]]), slices, parts
    )
    return np.concatenate(list(done)) if slices else np.zeros(0, np.float64)


def _by_sets(data: np.ndarray, offsets: np.ndarray, src: np.ndarray, dst: np.ndarray, n: int) -> np.ndarray:
    """The pairs of very long texts: their sorted character sets (shingle hashes), one pair at a time."""
    params = MinHashParams(ngram=n, script="cjk")
    out = np.empty(len(src), dtype=np.float64)
    for e, (a, b) in enumerate(zip(src.tolist(), dst.tolist(), strict=True)):
        pieces = [data[offsets[a] : offsets[a + 1]], data[offsets[b] : offsets[b + 1]]]
        both = np.concatenate(pieces)
        hashes, hash_offsets, _ = _folded_shingles(both, np.array([0, len(pieces[0]), len(both)], np.int64), params)
        sets, set_offsets = sorted_sets(hashes, hash_offsets)
        out[e] = exact_jaccard(sets, set_offsets, np.array([0]), np.array([1]))[0]
    return out
