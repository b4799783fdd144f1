"""LSH banding: band layout, per-document band hashes, and bucket -> star edges.

The distributed shape of near-duplicate search is three steps, and each is a function here:

(a) map: :func:`band_hashes` turns signatures into one uint64 per (document, band);
(b) group by (band, bucket hash): :func:`star_edges` turns one group's documents into edges
    ``doc -> smallest doc of the bucket`` (a star: k-1 edges per bucket, never k^2 pairs);
(c) connected components over all edges (``union_find.py``).

:func:`candidate_edges` is the in-process (b) over all bands of a signature matrix.
"""

from __future__ import annotations

import functools

import numpy as np

from operators.minhash import small
from operators.minhash._hashing import GOLDEN, fmix64
from operators.minhash._jit import njit
from operators.minhash.params import MinHashParams
from operators.threads import ordered_map


@functools.lru_cache(maxsize=64)
def optimal_bands(
    threshold: float, num_perm: int, false_positive_weight: float = 0.5, false_negative_weight: float = 0.5
) -> tuple[int, int]:
    """``(bands, rows)`` minimising weighted false-positive + false-negative probability mass.

    Same objective and search order as datasketch's ``_optimal_param``. The integrands are
    polynomials of degree ``bands * rows <= num_perm``, so Gauss-Legendre quadrature with
    ``num_perm // 2 + 1`` nodes integrates them exactly (no scipy needed).
    """
    nodes, weights = np.polynomial.legendre.leggauss(num_perm // 2 + 1)

    def integral(f, lo: float, hi: float) -> float:
        s = (hi - lo) / 2 * nodes + (hi + lo) / 2
        return float((hi - lo) / 2 * np.dot(weights, f(s)))

    best, opt = float("inf"), (0, 0)
    for b in range(1, num_perm + 1):
        for r in range(1, num_perm // b + 1):
            fp = integral(lambda s, b=b, r=r: 1 - (1 - s**r) ** b, 0.0, threshold)
            fn = integral(lambda s, b=b, r=r: (1 - s**r) ** b, threshold, 1.0)
            error = fp * false_positive_weight + fn * false_negative_weight
            if error < best:
                best, opt = error, (b, r)
    return opt


def band_layout(params: MinHashParams) -> tuple[int, int]:
    """The explicit ``(bands, rows)`` of ``params``, or the optimum for its threshold and weights."""
    if params.bands is not None and params.rows is not None:
        return params.bands, params.rows
    return optimal_bands(params.threshold, params.num_perm, params.false_positive_weight, params.false_negative_weight)


@njit(cache=True, nogil=True)
def _band_kernel(sigs: np.ndarray, bands: int, rows: int) -> np.ndarray:
    out = np.empty((sigs.shape[0], bands), dtype=np.uint64)
    for d in range(sigs.shape[0]):
        for j in range(bands):
            h = GOLDEN
            for k in range(j * rows, (j + 1) * rows):
                h = fmix64(h ^ np.uint64(sigs[d, k]))
            out[d, j] = h
    return out


def band_hashes(sigs: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """``(n_docs, bands)`` uint64: band ``j`` hashes signature values ``[j*rows, (j+1)*rows)``.

    Two documents share bucket ``(j, h)`` iff their band ``j`` values agree (up to 64-bit hash
    collisions), which is what LSH needs; the band index stays a separate key.
    """
    if bands * rows > sigs.shape[1]:
        raise ValueError(f"{bands}x{rows} bands do not fit signatures of width {sigs.shape[1]}")
    sigs = np.ascontiguousarray(sigs, dtype=np.uint32)
    if small.suits(sigs.shape[0] <= small.ROW_LIMIT):
        return small.band_hashes(sigs, bands, rows)
    return _band_kernel(sigs, bands, rows)


_EMPTY = np.uint32(0xFFFFFFFF)
ABSENT = np.uint64(0)  # a band hash meaning "no such band": a document without a character half


def sketch_bands(sigs: np.ndarray, bands: int, rows: int, num_perm: int) -> np.ndarray:
    """Band hashes of signatures as ``signatures`` makes them: ``(n, bands)`` of a ``num_perm``-wide
    signature, ``(n, 2 * bands)`` of a ``script="mixed"`` one (stream bands, then character bands,
    :data:`ABSENT` for a document whose character half is empty)."""
    if sigs.shape[1] == num_perm:
        return band_hashes(sigs, bands, rows)
    words, chars = sigs[:, :num_perm], sigs[:, num_perm:]
    out = np.zeros((len(sigs), 2 * bands), dtype=np.uint64)
    has_chars = (chars != _EMPTY).any(axis=1)
    # a text with CJK characters and an empty word half has no word bands; one without keeps today's
    words_present = np.flatnonzero(~has_chars | (words != _EMPTY).any(axis=1))
    out[words_present, :bands] = band_hashes(np.ascontiguousarray(words[words_present]), bands, rows)
    present = np.flatnonzero(has_chars)
    if len(present):
        out[present, bands:] = band_hashes(np.ascontiguousarray(chars[present]), bands, rows)
    return out


def star_edges(
    doc_ids: np.ndarray, bucket_hashes: np.ndarray, band_ids: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Edges ``(src, dst)`` linking every document of a bucket to the bucket's smallest id.

    A bucket is a ``(band, bucket hash)`` pair; ``doc_ids``, ``bucket_hashes`` and ``band_ids``
    are parallel arrays (omit ``band_ids`` when all rows come from one band), e.g. the rows an
    engine grouped by bucket. Documents alone in their bucket yield nothing. Each edge satisfies
    ``src > dst``; an id repeated within a bucket yields no self-loop.
    """
    doc_ids = np.asarray(doc_ids, dtype=np.int64)
    bucket_hashes = np.asarray(bucket_hashes, dtype=np.uint64)
    band_ids = np.zeros(len(doc_ids), np.int64) if band_ids is None else np.asarray(band_ids, np.int64)
    order = np.lexsort((doc_ids, bucket_hashes, band_ids))
    ids, keys, bands = doc_ids[order], bucket_hashes[order], band_ids[order]
    run_start = np.ones(len(keys), dtype=bool)
    run_start[1:] = (keys[1:] != keys[:-1]) | (bands[1:] != bands[:-1])
    heads = ids[np.maximum.accumulate(np.where(run_start, np.arange(len(ids)), 0))]
    member = ids != heads
    return ids[member], heads[member]


@njit(cache=True, nogil=True)
def _star_kernel(bands: np.ndarray, j: int, order: np.ndarray) -> np.ndarray:
    """Band ``j``'s star edges, packed (:func:`pack_edges`), sorted and unique: document ``i`` is row
    ``order[i]``. One pass in document order with a hash table of the band's buckets: a bucket's first
    document is its smallest, and each later one makes one edge to it, so the edges come out in order."""
    n = order.shape[0]
    size = 1
    while size < 2 * n:
        size <<= 1
    mask = np.uint64(size - 1)
    keys = np.zeros(size, dtype=np.uint64)  # ABSENT (0) marks a free slot: an absent hash has no bucket
    heads = np.empty(size, dtype=np.uint32)  # document numbers fit: pack_edges needs them < 2^32
    out = np.empty(n, dtype=np.uint64)
    m = 0
    for i in range(n):
        h = bands[order[i], j]
        if h == 0:
            continue
        slot = h & mask  # band hashes are fmix64 outputs: their low bits are as good as any
        while True:
            key = keys[slot]
            if key == 0:
                keys[slot] = h
                heads[slot] = np.uint32(i)
                break
            if key == h:
                out[m] = (np.uint64(i) << np.uint64(32)) | np.uint64(heads[slot])
                m += 1
                break
            slot = (slot + np.uint64(1)) & mask
    return out[:m].copy()


def candidate_edges(bands: np.ndarray, order: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Star edges over every band of a ``(n_docs, bands)`` band-hash matrix, deduplicated.

    A document is in no bucket of a band where its hash is :data:`ABSENT`.

    Documents are numbered by row, or with ``order`` document ``i`` is row ``order[i]``: the edges of
    ``bands[order]``, without that copy of the matrix (a tenth of a 254k-document cluster step, on one
    core). Each band's edges are made on a thread of their own, by one pass over the band in document
    order (:func:`_star_kernel`; a small input, without numba, by :func:`star_edges`' sort, which was 0.9 s
    of CPU at 254,724 documents against 0.2 s); the bands' sorted runs are then merged by one stable sort
    (timsort merges runs). Memory: at most ``n_docs - 1`` edges per band, and per thread a table of 12
    bytes per slot, at least two slots per document.
    """
    n = bands.shape[0]
    doc_ids = np.arange(n, dtype=np.int64)
    rows = doc_ids if order is None else np.asarray(order, dtype=np.int64)

    def band_keys(j: int) -> np.ndarray:
        if not small.suits(n <= small.ROW_LIMIT):
            return _star_kernel(bands, j, rows)
        column = bands[rows, j]
        present = column != ABSENT
        if present.all():
            return unique_sorted(pack_edges(*star_edges(doc_ids, column)))
        return unique_sorted(pack_edges(*star_edges(doc_ids[present], column[present])))

    keys = list(ordered_map(band_keys, range(bands.shape[1])))
    packed = unique_sorted(np.concatenate(keys), kind="stable") if keys else np.zeros(0, np.uint64)
    return unpack_edges(packed)


def unique_sorted(values: np.ndarray, kind: str | None = None) -> np.ndarray:
    """``np.unique(values)`` of a 1-d integer array, by a sort: NumPy >= 2.3 answers ``np.unique`` of
    integers with a hash table, 5-7x slower than sorting on millions of edge keys."""
    ordered = np.sort(values, kind=kind)  # type: ignore[call-overload]
    first = np.empty(len(ordered), dtype=bool)
    first[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    return ordered[first]


def pack_edges(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """One sortable uint64 per edge (ids must be < 2^32), for cheap deduplication."""
    return (src.astype(np.uint64) << np.uint64(32)) | dst.astype(np.uint64)


def unpack_edges(packed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return (packed >> np.uint64(32)).astype(np.int64), (packed & np.uint64(0xFFFFFFFF)).astype(np.int64)
