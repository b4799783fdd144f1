"""Exact character n-gram Jaccard (``operators/minhash/characters.py``): the numba kernel, its plain-Python
twin and the sorted-set path for very long texts all equal the issue's reference definition
(``benchmarks/evalsets/reference.py``), on real texts and edge cases, however the pairs are grouped or cut."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from benchmarks.evalsets.reference import char_shingles
from operators.minhash import characters, small
from operators.minhash._jit import make_all
from operators.minhash.normalize import fold, punct_or_symbol_table
from operators.minhash.shingle import string_buffers
from tests.support.minhash_texts import CASED


def _reference(texts: list[str], src: np.ndarray, dst: np.ndarray, n: int) -> np.ndarray:
    sets = [char_shingles(t, n) - {""} for t in texts]  # the reference keeps "" for a text with no character
    out = []
    for a, b in zip(src.tolist(), dst.tolist(), strict=True):
        union = len(sets[a] | sets[b])
        out.append(len(sets[a] & sets[b]) / union if union else 1.0)
    return np.array(out)


def _pairs(texts: list[str], count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Random pairs, plus stars (one text against many, as bucket edges come) and each text against itself."""
    rng = np.random.default_rng(seed)
    n = len(texts)
    centres = rng.integers(0, n, 40)
    src = np.concatenate([rng.integers(0, n, count), np.repeat(centres, 25), np.arange(n)])
    dst = np.concatenate([rng.integers(0, n, count), rng.integers(0, n, 40 * 25), np.arange(n)])
    return src.astype(np.int64), dst.astype(np.int64)


def _folded(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    return string_buffers(fold(pa.array(texts, pa.string())))


@pytest.mark.parametrize("n", [5, 2, 1])
def test_kernel_and_twin_equal_the_reference(texts: list[str], n: int) -> None:
    make_all()
    data, offsets = _folded(texts)
    src, dst = _pairs(texts, 3000, seed=n)
    want = _reference(texts, src, dst, n)
    drop = punct_or_symbol_table()
    order = np.argsort(src, kind="stable")
    got = np.empty(len(src))
    got[order] = characters._pairs_kernel(data, offsets, drop, n, src[order], dst[order])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(small.character_jaccard(data, offsets, drop, n, src, dst), want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(characters.character_jaccard(data, offsets, src, dst, n), want, rtol=0, atol=1e-12)


def test_the_texts_held_for_verification_lack_what_it_deletes_and_score_as_the_reference(texts: list[str]) -> None:
    """``compared_texts``, what a held sketch keeps for verification: the kernel and its twin make the same
    strings, in Arrow's large strings, with no P*/S* or whitespace code point left (fewer bytes than the folded
    texts), a slice as the whole; and every pair of them scores as the reference scores the raw texts."""
    make_all()
    folded = fold(pa.array(texts, pa.string()))
    held = characters.compared_texts(folded)
    drop = punct_or_symbol_table()
    assert held.type == pa.large_string() and len(held) == len(texts)
    assert held.to_pylist() == small.compared_texts(folded.to_pylist(), drop)
    assert not any(drop[ord(c)] or c.isspace() for text in held.to_pylist() for c in text)
    assert held.buffers()[2].size < folded.buffers()[2].size
    assert characters.compared_texts(folded.slice(5, 40)).to_pylist() == held.to_pylist()[5:45]
    assert characters.compared_texts(folded.slice(0, 0)).to_pylist() == []
    src, dst = _pairs(texts, 3000, seed=4)
    data, offsets = string_buffers(held)
    for n in (5, 2):
        got = characters.character_jaccard(data, offsets, src, dst, n)
        np.testing.assert_allclose(got, _reference(texts, src, dst, n), rtol=0, atol=1e-12)


def test_an_all_caps_copy_scores_as_the_reference_scores_it() -> None:
    """The texts are folded as the reference folds them (``str.lower``): an all-caps Greek copy keeps its
    word-final sigmas (Arrow's lower-casing made them σ, not ς: 0.51 against 1.0)."""
    make_all()
    texts = CASED
    half = len(texts) // 2
    src, dst = np.arange(half, dtype=np.int64), np.arange(half, len(texts), dtype=np.int64)
    want = _reference(texts, src, dst, 5)
    assert want[0] == 1.0
    data, offsets = _folded(texts)
    np.testing.assert_allclose(characters.character_jaccard(data, offsets, src, dst, 5), want, rtol=0, atol=1e-12)


def test_the_cut_over_threads_and_the_long_text_path_change_nothing(
    texts: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    make_all()
    data, offsets = _folded(texts)
    src, dst = _pairs(texts, 3000, seed=11)
    want = _reference(texts, src, dst, 5)
    monkeypatch.setattr(characters, "_PARALLEL_PAIRS", 16)  # every call split over the threads
    np.testing.assert_allclose(characters.character_jaccard(data, offsets, src, dst, 5), want, rtol=0, atol=1e-12)
    monkeypatch.setattr(characters, "TABLE_LIMIT", 600)  # pairs of long texts by sorted sets
    lengths = np.diff(offsets)
    assert (lengths[src] + lengths[dst] > 600).any() and (lengths[src] + lengths[dst] <= 600).any()
    got = characters.character_jaccard(data, offsets, src, dst, 5)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)  # sorted sets hash to 32 bits


def test_the_table_grows_for_a_long_text_after_short_ones() -> None:
    make_all()
    rng = random.Random(3)
    words = [f"w{i}" for i in range(3000)]
    long_text = " ".join(rng.choice(words) for _ in range(40_000))
    texts = ["short text one", "short text two", long_text, long_text[: len(long_text) // 2], "short text one"]
    data, offsets = _folded(texts)
    src, dst = np.array([0, 0, 2, 2, 4], np.int64), np.array([1, 4, 3, 0, 3], np.int64)
    drop = punct_or_symbol_table()
    got = characters._pairs_kernel(data, offsets, drop, 5, src, dst)
    np.testing.assert_allclose(got, _reference(texts, src, dst, 5), rtol=0, atol=1e-12)
