"""MinHash signatures, bit-identical to ``datasketch.MinHash``'s default ``affine32`` scheme.

datasketch >= 2.0 (scheme ``"affine32"``, its default) pre-mixes each 32-bit input hash with the
MurmurHash3 32-bit finaliser and applies ``a_k * h + b_k mod 2^32`` with odd ``a_k``; the
signature is the per-permutation minimum. ``a`` and ``b`` are drawn from
``np.random.RandomState(seed)`` exactly as datasketch draws them, so for the same shingle hashes,
``num_perm`` and ``seed`` our values equal ``MinHash(num_perm, seed, hashfunc=identity)``'s.
We do not match ``scheme="legacy"`` (the pre-2.0 Mersenne-prime formula): it is slower (64-bit
modulo) and its 61-to-32-bit fold biases estimates on large sets.
"""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa

from operators.minhash import small
from operators.minhash._jit import njit
from operators.minhash.params import MinHashParams
from operators.minhash.shingle import mixed_shingles, shingle_hashes

_EMPTY = np.uint32(0xFFFFFFFF)


@functools.lru_cache(maxsize=16)
def permutations(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(a, b)`` as uint32 arrays, drawn in datasketch's order from ``RandomState(seed)``."""
    gen = np.random.RandomState(seed)
    a = gen.randint(0, 1 << 31, num_perm, dtype=np.uint32) * np.uint32(2) + np.uint32(1)
    b = gen.randint(0, 1 << 32, num_perm, dtype=np.uint32)
    a.setflags(write=False)
    b.setflags(write=False)
    return a, b


@njit(inline="always")
def _fmix32(h: np.uint32) -> np.uint32:
    h ^= h >> np.uint32(16)
    h = np.uint32(h * np.uint32(0x85EBCA6B))
    h ^= h >> np.uint32(13)
    h = np.uint32(h * np.uint32(0xC2B2AE35))
    h ^= h >> np.uint32(16)
    return h


@njit(cache=True, nogil=True)
def _minhash_kernel(hashes: np.ndarray, offsets: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    n_docs = len(offsets) - 1
    num_perm = len(a)
    out = np.full((n_docs, num_perm), _EMPTY, dtype=np.uint32)
    for d in range(n_docs):
        row = out[d]
        for i in range(offsets[d], offsets[d + 1]):
            h = _fmix32(np.uint32(hashes[i]))
            for k in range(num_perm):
                v = np.uint32(a[k] * h + b[k])
                if v < row[k]:
                    row[k] = v
    return out


def signatures_from_hashes(hashes: np.ndarray, offsets: np.ndarray, num_perm: int, seed: int) -> np.ndarray:
    """``(n_docs, num_perm)`` uint32 signatures of documents given as flat shingle hashes.

    Document ``i`` owns ``hashes[offsets[i]:offsets[i + 1]]``; a document without hashes gets
    the all-``2^32-1`` signature, as an empty datasketch ``MinHash`` has.
    """
    hashes = np.ascontiguousarray(hashes, dtype=np.uint32)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    a, b = permutations(num_perm, seed)
    if small.suits(len(hashes) <= small.HASH_LIMIT):
        return small.minhash(hashes, offsets, a, b)
    return _minhash_kernel(hashes, offsets, a, b)


def signatures(texts: pa.Array | pa.ChunkedArray, params: MinHashParams) -> np.ndarray:
    """Raw texts of one batch -> ``(len(texts), num_perm)`` uint32 signatures.

    With ``script="mixed"`` they are ``(len(texts), 2 * num_perm)``: the word half's signature, then
    the character half's (all ``2^32-1`` for a text without CJK characters).

    Call it per batch (memory is bounded by the batch), then keep only the signatures.
    """
    return signatures_and_shingles(texts, params)[0]


def signatures_and_shingles(
    texts: pa.Array | pa.ChunkedArray, params: MinHashParams, *, folded: bool = False
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """:func:`signatures`, and the shingles they were made of as ``shingle_hashes`` returns them
    (``script="mixed"``: the word half), which exact verification compares. ``folded``: the texts
    were normalised by ``normalize.fold`` already."""
    if params.script != "mixed":
        hashes, offsets, cjk = shingle_hashes(texts, params, folded=folded)
        return signatures_from_hashes(hashes, offsets, params.num_perm, params.seed), (hashes, offsets, cjk)
    hashes, offsets, cjk, char_hashes, char_offsets = mixed_shingles(texts, params, folded=folded)
    out = np.full((len(cjk), 2 * params.num_perm), _EMPTY, dtype=np.uint32)
    lengths = np.diff(offsets)
    words = np.flatnonzero(lengths)  # a Chinese text often has no word half: do not loop over it
    word_offsets = np.concatenate([[0], np.cumsum(lengths[words])]).astype(np.int64)
    out[words, : params.num_perm] = signatures_from_hashes(hashes, word_offsets, params.num_perm, params.seed)
    # the character half: empty (all 2^32-1) for a text without CJK characters, never read by character
    out[cjk, params.num_perm :] = signatures_from_hashes(char_hashes, char_offsets, params.num_perm, params.seed)
    return out, (hashes, offsets, cjk)
