"""The kernels' values for small inputs, in numpy and plain Python, so a small run never loads numba.

Each function here returns exactly what its numba kernel returns (same dtype, same bits, same floats):
``tests/operators/minhash/test_small.py`` and ``test_characters.py`` compare them on the bundled corpora,
the mixed-script evaluation set and edge cases. The public functions (``shingle_hashes``,
``signatures_from_hashes``, ``band_hashes``, ``connected_components``, ``sorted_sets``, ``exact_jaccard``,
``estimated_jaccard``, ``character_jaccard``) call these when an input is below the ``*_LIMIT`` sizes and
numba is not loaded yet (:func:`suits`): there, loading numba (about 1 s of CPU) costs more than the work.
"""

from __future__ import annotations

import numpy as np

from operators.minhash._jit import made

SHINGLE_LIMIT = 64 << 10  # UTF-8 bytes of folded text in one call
HASH_LIMIT = 16 << 10  # shingle hashes in one call (a 16k x num_perm uint32 temporary)
ROW_LIMIT = 4096  # documents (band hashes), edges (components) or pairs (verification)


def suits(*within_limits: bool) -> bool:
    """Whether an input goes to the functions here: it is within every limit, and numba is not loaded.

    Once a large input has loaded numba, its kernels are faster on every size, and one not called yet
    loads from numba's cache in 4-8 ms. A large dedupe's sketch batches (4,096 documents, at the limit)
    went on taking the numpy band hashes: 0.5 s of the sketcher's thread at 254,724 documents, where the
    kernel takes 0.4 of its time and releases the GIL throughout.
    """
    return all(within_limits) and not made()


_M64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_SPACES = frozenset([*range(9, 14), *range(28, 33), 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B)]) | {
    0x2028,
    0x2029,
    0x202F,
    0x205F,
    0x3000,
}
_CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x323AF),
    (0xF900, 0xFAFF),
    (0x3040, 0x30FF),
    (0x31F0, 0x31FF),
    (0x3100, 0x312F),
    (0xAC00, 0xD7AF),
    (0x1100, 0x11FF),
    (0x3130, 0x318F),
)


def _fmix64(h: int) -> int:
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & _M64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & _M64
    return h ^ (h >> 33)


def _fmix64_np(h: np.ndarray) -> np.ndarray:
    s = np.uint64(33)
    h = h ^ (h >> s)
    h = h * np.uint64(0xFF51AFD7ED558CCD)
    h = h ^ (h >> s)
    h = h * np.uint64(0xC4CEB9FE1A85EC53)
    return h ^ (h >> s)


def _is_cjk(cp: int) -> bool:
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


def _is_cjk_doc(cps: list[int], drop: np.ndarray, cjk_ratio: float) -> bool:
    total = cjk = 0
    for cp in cps:
        if not drop[cp] and cp not in _SPACES:
            total += 1
            if _is_cjk(cp):
                if cjk_ratio == 0.0:
                    return True
                cjk += 1
    return cjk > 0 and cjk >= cjk_ratio * total


def _word_units(text: str, drop: np.ndarray) -> list[int]:
    units = []
    h, in_word = _FNV_OFFSET, False
    for ch in text:
        cp = ord(ch)
        if cp in _SPACES:
            if in_word:
                units.append(_fmix64(h))
                h, in_word = _FNV_OFFSET, False
        elif not drop[cp]:
            for byte in ch.encode("utf-8"):
                h = ((h ^ byte) * _FNV_PRIME) & _M64
            in_word = True
    if in_word:
        units.append(_fmix64(h))
    return units


def _mixed_units(text: str, drop: np.ndarray) -> tuple[list[int], int, int]:
    units: list[int] = []
    h, in_word, n_cjk, n_chars = _FNV_OFFSET, False, 0, 0
    for ch in text:
        cp = ord(ch)
        if drop[cp]:
            continue
        if cp in _SPACES or _is_cjk(cp):
            if in_word:
                units.append(_fmix64(h))
                h, in_word = _FNV_OFFSET, False
            if cp not in _SPACES:
                n_cjk += 1
                n_chars += 1
        else:
            for byte in ch.encode("utf-8"):
                h = ((h ^ byte) * _FNV_PRIME) & _M64
            in_word = True
            n_chars += 1
    if in_word:
        units.append(_fmix64(h))
    return units, n_cjk, n_chars


def _ngrams(units: list[int], n: int) -> np.ndarray:
    values = np.array(units, dtype=np.uint64)
    k = len(values)
    count = 1 if k < n else k - n + 1
    width = k if k < n else n
    h = np.full(count, _GOLDEN, dtype=np.uint64)
    for j in range(width):
        h = _fmix64_np(h ^ values[j : j + count])
    return (h & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def shingle_hashes(
    data: np.ndarray, offsets: np.ndarray, drop: np.ndarray, ngram: int, mode: int, cjk_ratio: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``shingle._shingle_kernel``: (hashes, offsets, is_cjk) of folded UTF-8 documents."""
    n_docs = len(offsets) - 1
    parts: list[np.ndarray] = []
    out_offsets = np.zeros(n_docs + 1, dtype=np.int64)
    cjk_docs = np.zeros(n_docs, dtype=np.bool_)
    raw = data.tobytes()
    for d in range(n_docs):
        text = raw[offsets[d] : offsets[d + 1]].decode("utf-8")
        cps = [ord(ch) for ch in text]
        if mode == 3:
            units, n_cjk, n_chars = _mixed_units(text, drop)
            cjk = n_cjk > 0
            word_half = not cjk or (len(units) > 0 and n_cjk <= cjk_ratio * n_chars)
        else:
            cjk = _is_cjk_doc(cps, drop, cjk_ratio) if mode == 0 else mode == 2
            units = [cp for cp in cps if not drop[cp] and cp not in _SPACES] if cjk else _word_units(text, drop)
            word_half = True
        cjk_docs[d] = cjk
        parts.append(_ngrams(units, ngram) if word_half else np.zeros(0, np.uint32))
        out_offsets[d + 1] = out_offsets[d] + len(parts[-1])
    hashes = np.concatenate(parts) if parts else np.zeros(0, np.uint32)
    return hashes, out_offsets, cjk_docs


def _fmix32(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(0x85EBCA6B)
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(0xC2B2AE35)
    return h ^ (h >> np.uint32(16))


def minhash(hashes: np.ndarray, offsets: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``signature._minhash_kernel``: per-document minima of ``a * fmix32(h) + b`` (mod 2^32)."""
    n_docs = len(offsets) - 1
    out = np.full((n_docs, len(a)), 0xFFFFFFFF, dtype=np.uint32)
    for d in range(n_docs):
        h = _fmix32(hashes[offsets[d] : offsets[d + 1]].astype(np.uint32))
        if len(h):
            out[d] = np.minimum(out[d], (h[:, None] * a[None, :] + b[None, :]).min(axis=0))
    return out


def band_hashes(sigs: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """``lsh._band_kernel``."""
    out = np.empty((sigs.shape[0], bands), dtype=np.uint64)
    for j in range(bands):
        h = np.full(sigs.shape[0], _GOLDEN, dtype=np.uint64)
        for k in range(j * rows, (j + 1) * rows):
            h = _fmix64_np(h ^ sigs[:, k].astype(np.uint64))
        out[:, j] = h
    return out


def components(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """``union_find._components_kernel``: the smallest node of each node's component."""
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in zip(src.tolist(), dst.tolist(), strict=True):
        ra, rb = find(a), find(b)
        if ra < rb:
            parent[rb] = ra
        elif rb < ra:
            parent[ra] = rb
    return np.array([find(x) for x in range(n)], dtype=np.int64)


def estimated(sigs: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """``verify._estimate_kernel``."""
    same = np.count_nonzero(sigs[src] == sigs[dst], axis=1) if len(src) else np.zeros(0, np.int64)
    return same / sigs.shape[1]


def sorted_sets(hashes: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``verify._sorted_sets_kernel``."""
    parts = [np.unique(hashes[offsets[d] : offsets[d + 1]]) for d in range(len(offsets) - 1)]
    out_offsets = np.zeros(len(offsets), dtype=np.int64)
    out_offsets[1:] = np.cumsum([len(p) for p in parts]) if parts else []
    return (np.concatenate(parts).astype(hashes.dtype) if parts else hashes[:0].copy()), out_offsets


def exact(sets: np.ndarray, offsets: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """``verify._exact_kernel``."""
    out = np.empty(len(src), dtype=np.float64)
    for e, (i, j) in enumerate(zip(src.tolist(), dst.tolist(), strict=True)):
        a, b = sets[offsets[i] : offsets[i + 1]], sets[offsets[j] : offsets[j + 1]]
        common = len(np.intersect1d(a, b, assume_unique=True))
        union = len(a) + len(b) - common
        out[e] = common / union if union else 1.0
    return out


def _compared(text: str, drop: np.ndarray) -> str:
    return "".join(c for c in text if not drop[ord(c)] and ord(c) not in _SPACES)


def compared_texts(texts: list[str], drop: np.ndarray) -> list[str]:
    """``characters._compared_kernel``: the texts without their P*/S* and whitespace code points."""
    return [_compared(text, drop) for text in texts]


def character_jaccard(
    data: np.ndarray, offsets: np.ndarray, drop: np.ndarray, n: int, src: np.ndarray, dst: np.ndarray
) -> np.ndarray:
    """``characters._pairs_kernel``, by the definition: sets of ``n``-character strings."""
    grams: dict[int, set[str]] = {}

    def of(d: int) -> set[str]:
        if d not in grams:
            kept = _compared(bytes(data[offsets[d] : offsets[d + 1]]).decode("utf-8"), drop)
            grams[d] = {kept[i : i + n] for i in range(len(kept) - n + 1)} if len(kept) >= n else ({kept} - {""})
        return grams[d]

    out = np.empty(len(src), dtype=np.float64)
    for e, (a, b) in enumerate(zip(src.tolist(), dst.tolist(), strict=True)):
        common = len(of(a) & of(b))
        union = len(of(a)) + len(of(b)) - common
        out[e] = common / union if union else 1.0
    return out
