"""Signatures must equal datasketch's (default affine32 scheme) bit for bit."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyarrow as pa
import pytest
from datasketch import MinHash

from operators.minhash import MinHashParams, shingle_hashes, signatures, signatures_from_hashes


def _datasketch(values: np.ndarray, num_perm: int, seed: int) -> np.ndarray:
    m = MinHash(num_perm=num_perm, seed=seed, hashfunc=lambda x: x)
    m.update_batch(values.tolist())
    return m.hashvalues


@pytest.mark.parametrize(("num_perm", "seed"), [(128, 1), (64, 0), (256, 42), (7, 2**32 - 1), (1, 12345)])
def test_signatures_equal_datasketch(num_perm: int, seed: int) -> None:
    rng = np.random.default_rng(seed % 1000)
    docs = [rng.integers(0, 2**32, size, dtype=np.uint64).astype(np.uint32) for size in (1, 3, 50, 400)] + [
        np.array([0, 1, 2**32 - 1, 2**32 - 2, 2**31], dtype=np.uint32)
    ]
    offsets = np.concatenate([[0], np.cumsum([len(d) for d in docs])])
    ours = signatures_from_hashes(np.concatenate(docs), offsets, num_perm, seed)
    assert ours.dtype == np.uint32 and ours.shape == (len(docs), num_perm)
    for row, doc in zip(ours, docs, strict=True):
        expected = _datasketch(doc, num_perm, seed)
        assert expected.dtype == np.uint32
        np.testing.assert_array_equal(row, expected)


def test_single_update_matches_too() -> None:
    # update() and update_batch() take different code paths in datasketch.
    m = MinHash(num_perm=32, seed=9, hashfunc=lambda x: x)
    for v in (4294967295, 17, 3000000000):
        m.update(v)
    ours = signatures_from_hashes(np.array([4294967295, 17, 3000000000]), np.array([0, 3]), 32, 9)
    np.testing.assert_array_equal(ours[0], m.hashvalues)


def test_document_without_hashes_is_an_empty_minhash() -> None:
    ours = signatures_from_hashes(np.zeros(0, np.uint32), np.array([0, 0]), 16, 1)
    np.testing.assert_array_equal(ours[0], MinHash(num_perm=16, seed=1).hashvalues)


def test_text_signatures_equal_datasketch_fed_our_shingle_hashes() -> None:
    params = MinHashParams(num_perm=64, seed=3)
    texts = pa.array(["The quick brown fox jumps over the lazy dog again and again", "短文本", "x"])
    hashes, offsets, _ = shingle_hashes(texts, params)
    sigs = signatures(texts, params)
    assert sigs.shape == (3, 128)  # script="mixed": the stream's signature, then the character half
    char_hashes, char_offsets, _ = shingle_hashes(texts, replace(params, script="cjk"))
    for i in range(len(texts)):
        np.testing.assert_array_equal(sigs[i, :64], _datasketch(hashes[offsets[i] : offsets[i + 1]], 64, 3))
    np.testing.assert_array_equal(sigs[1, 64:], _datasketch(char_hashes[char_offsets[1] : char_offsets[2]], 64, 3))
    assert (sigs[[0, 2], 64:] == 0xFFFFFFFF).all()  # no CJK character: no character half
    latin = MinHashParams(num_perm=64, seed=3, script="latin", ngram=params.word_ngram)  # the word half
    np.testing.assert_array_equal(signatures(texts, latin)[0], sigs[0, :64])


def test_batches_do_not_change_signatures() -> None:
    params = MinHashParams()
    texts = pa.array([f"document number {i} has some words in it {i % 3}" for i in range(50)])
    whole = signatures(texts, params)
    parts = np.vstack([signatures(texts.slice(i, 7), params) for i in range(0, 50, 7)])
    np.testing.assert_array_equal(whole, parts)


def test_seed_changes_signatures() -> None:
    texts = pa.array(["one two three four five six"])
    assert not np.array_equal(signatures(texts, MinHashParams(seed=1)), signatures(texts, MinHashParams(seed=2)))
