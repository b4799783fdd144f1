"""LSH layout, band hashes, star edges and connected components."""

from __future__ import annotations

import numpy as np
import pytest
from datasketch.lsh import _optimal_param

from operators.minhash import (
    MinHashParams,
    band_hashes,
    band_layout,
    candidate_edges,
    connected_components,
    optimal_bands,
    star_edges,
)


@pytest.mark.parametrize(
    ("threshold", "num_perm", "weights"),
    [
        (0.8, 128, (0.5, 0.5)),
        (0.8, 128, (0.2, 0.8)),
        (0.8, 128, (0.002, 0.998)),
        (0.5, 128, (0.5, 0.5)),
        (0.9, 256, (0.3, 0.7)),
        (0.7, 64, (0.1, 0.9)),
    ],
)
def test_optimal_bands_match_datasketch(threshold: float, num_perm: int, weights: tuple[float, float]) -> None:
    assert optimal_bands(threshold, num_perm, *weights) == _optimal_param(threshold, num_perm, *weights)


def test_band_layout_explicit_or_derived() -> None:
    assert band_layout(MinHashParams(bands=16, rows=8)) == (16, 8)
    assert band_layout(MinHashParams()) == _optimal_param(0.8, 128, 0.002, 0.998) == (21, 6)
    with pytest.raises(ValueError):
        MinHashParams(bands=16)
    with pytest.raises(ValueError):
        MinHashParams(bands=20, rows=7)


def test_band_hashes_agree_exactly_when_band_values_agree() -> None:
    rng = np.random.default_rng(0)
    sigs = rng.integers(0, 2**32, (3, 12), dtype=np.uint64).astype(np.uint32)
    sigs[1] = sigs[0]
    sigs[1, 5] ^= 1  # band 1 (rows 4..7) differs, bands 0 and 2 agree
    bands = band_hashes(sigs, 3, 4)
    assert bands.shape == (3, 3) and bands.dtype == np.uint64
    assert bands[0, 0] == bands[1, 0] and bands[0, 2] == bands[1, 2]
    assert bands[0, 1] != bands[1, 1]
    assert not np.isin(bands[2], bands[0]).any()
    with pytest.raises(ValueError):
        band_hashes(sigs, 4, 4)


def test_star_edges_link_each_bucket_member_to_the_smallest_id() -> None:
    ids = np.array([7, 3, 9, 5, 4, 8])
    buckets = np.array([1, 1, 2, 1, 3, 2], dtype=np.uint64)
    src, dst = star_edges(ids, buckets)
    assert sorted(zip(src.tolist(), dst.tolist(), strict=True)) == [(5, 3), (7, 3), (9, 8)]


def test_star_edges_keep_bands_apart() -> None:
    ids = np.array([1, 2, 3, 4])
    buckets = np.array([5, 5, 5, 5], dtype=np.uint64)
    src, dst = star_edges(ids, buckets, band_ids=np.array([0, 1, 0, 1]))
    assert sorted(zip(src.tolist(), dst.tolist(), strict=True)) == [(3, 1), (4, 2)]
    assert star_edges(np.array([3, 3]), np.array([1, 1], dtype=np.uint64))[0].size == 0


def test_candidate_edges_deduplicate_across_bands() -> None:
    bands = np.array([[1, 10], [1, 10], [2, 11], [2, 12]], dtype=np.uint64)
    src, dst = candidate_edges(bands)
    assert list(zip(src.tolist(), dst.tolist(), strict=True)) == [(1, 0), (3, 2)]


def test_connected_components_label_with_smallest_member_regardless_of_edge_order() -> None:
    src, dst = np.array([5, 2, 7, 3]), np.array([2, 1, 6, 5])
    expected = [0, 1, 1, 1, 4, 1, 6, 6]
    assert connected_components(8, src, dst).tolist() == expected
    assert connected_components(8, dst[::-1], src[::-1]).tolist() == expected
    assert connected_components(3, np.array([], np.int64), np.array([], np.int64)).tolist() == [0, 1, 2]
    with pytest.raises(ValueError):
        connected_components(3, np.array([3]), np.array([0]))


def test_connected_components_long_chain() -> None:
    n = 100_000
    labels = connected_components(n, np.arange(1, n), np.arange(n - 1))
    assert (labels == 0).all()


def test_unique_sorted_is_np_unique() -> None:
    from operators.minhash.lsh import unique_sorted

    rng = np.random.default_rng(3)
    for values in (rng.integers(0, 50, 1000, dtype=np.uint64), np.zeros(0, np.uint64), np.array([7], np.int64)):
        np.testing.assert_array_equal(unique_sorted(values), np.unique(values))
        np.testing.assert_array_equal(unique_sorted(values, kind="stable"), np.unique(values))


def test_candidate_edges_merge_bands_with_repeated_edges() -> None:
    """Per-band deduplicated, then merged: equal to deduplicating every band's edges at once."""
    rng = np.random.default_rng(5)
    bands = rng.integers(1, 40, (500, 9), dtype=np.uint64)
    bands[rng.random((500, 9)) < 0.2] = 0  # ABSENT: no bucket in that band
    src, dst = candidate_edges(bands)
    ids = np.arange(500, dtype=np.int64)
    every = [star_edges(ids[bands[:, j] != 0], bands[bands[:, j] != 0, j]) for j in range(9)]
    packed = np.unique(np.concatenate([(s.astype(np.uint64) << np.uint64(32)) | d.astype(np.uint64) for s, d in every]))
    np.testing.assert_array_equal(src, (packed >> np.uint64(32)).astype(np.int64))
    np.testing.assert_array_equal(dst, (packed & np.uint64(0xFFFFFFFF)).astype(np.int64))


def test_candidate_edges_in_an_order_are_those_of_the_matrix_in_that_order() -> None:
    """``dedupe`` leaves the band matrix in table order and has it read in sample-id order."""
    from operators.minhash.survivors import inverse_permutation

    rng = np.random.default_rng(11)
    bands = rng.integers(1, 30, (400, 7), dtype=np.uint64)
    bands[rng.random((400, 7)) < 0.2] = 0  # ABSENT
    order = rng.permutation(400)
    for got, want in zip(candidate_edges(bands, order), candidate_edges(bands[order]), strict=True):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(inverse_permutation(order), np.argsort(order))
