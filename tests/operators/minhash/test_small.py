"""The numpy twins of the numba kernels (``operators/minhash/small.py``) return the kernels' exact values,
so a small input (which never loads numba) is decided as a large one is; and a small ``lineage dedupe``
really does not load numba."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from benchmarks.common import CORPUS_EN, read_corpus
from operators.minhash import MinHashParams, small
from operators.minhash.lsh import _band_kernel, _star_kernel, pack_edges, star_edges, unique_sorted
from operators.minhash.normalize import fold, punct_or_symbol_table
from operators.minhash.shingle import _MODES, _shingle_kernel, string_buffers
from operators.minhash.signature import _minhash_kernel, permutations
from operators.minhash.union_find import _components_kernel
from operators.minhash.verify import _estimate_kernel, _exact_kernel, _sorted_sets_kernel

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    ("ngram", "script", "cjk_ratio"),
    [(5, "auto", 0.0), (5, "auto", 0.3), (3, "latin", 0.0), (5, "cjk", 0.0), (1, "auto", 0.0), (9, "auto", 0.0)],
)
def test_shingles_signatures_and_bands_equal_the_kernels(texts: list[str], ngram: int, script: str, cjk_ratio: float):
    params = MinHashParams(ngram=ngram, script=script, cjk_ratio=cjk_ratio)
    drop = punct_or_symbol_table()
    a, b = permutations(params.num_perm, params.seed)
    for start in range(0, len(texts), 97):  # batches, some sliced out of a larger array
        batch = pa.array(texts, pa.string()).slice(start, 97)
        data, offsets = string_buffers(fold(batch))
        args = (data, offsets, drop, ngram, _MODES[script], cjk_ratio)
        want, got = _shingle_kernel(*args), small.shingle_hashes(*args)
        for w, g in zip(want, got, strict=True):
            assert w.dtype == g.dtype
            np.testing.assert_array_equal(w, g)
        hashes, hash_offsets, _ = want
        sigs = _minhash_kernel(hashes, hash_offsets, a, b)
        np.testing.assert_array_equal(sigs, small.minhash(hashes, hash_offsets, a, b))
        bands = small.band_hashes(sigs, 21, 6)
        assert bands.dtype == np.uint64
        np.testing.assert_array_equal(_band_kernel(sigs, 21, 6), bands)
        np.testing.assert_array_equal(_band_kernel(sigs, 16, 8), small.band_hashes(sigs, 16, 8))


def test_verification_and_components_equal_the_kernels(texts: list[str]) -> None:
    params = MinHashParams()
    data, offsets = string_buffers(fold(pa.array(texts[:600], pa.string())))
    hashes, hash_offsets, _ = _shingle_kernel(data, offsets, punct_or_symbol_table(), 5, 0, 0.0)
    sets, set_offsets = _sorted_sets_kernel(hashes, hash_offsets)
    got_sets, got_offsets = small.sorted_sets(hashes, hash_offsets)
    np.testing.assert_array_equal(sets, got_sets)
    np.testing.assert_array_equal(set_offsets, got_offsets)
    assert got_sets.dtype == sets.dtype and got_offsets.dtype == set_offsets.dtype
    rng = np.random.default_rng(4)
    src = rng.integers(0, 600, 3000)
    dst = np.where(rng.random(3000) < 0.2, src, rng.integers(0, 600, 3000))  # some self-pairs: Jaccard 1
    np.testing.assert_array_equal(_exact_kernel(sets, set_offsets, src, dst), small.exact(sets, set_offsets, src, dst))
    a, b = permutations(params.num_perm, params.seed)
    sigs = _minhash_kernel(hashes, hash_offsets, a, b)
    np.testing.assert_array_equal(_estimate_kernel(sigs, src, dst), small.estimated(sigs, src, dst))
    empty = np.zeros(0, np.int64)
    assert len(small.estimated(sigs, empty, empty)) == len(small.exact(sets, set_offsets, empty, empty)) == 0
    for n, edges in [(600, 300), (600, 2000), (50, 0), (1, 0)]:
        e_src, e_dst = rng.integers(0, n, edges), rng.integers(0, n, edges)
        np.testing.assert_array_equal(_components_kernel(n, e_src, e_dst), small.components(n, e_src, e_dst))


@pytest.mark.parametrize("n", [0, 1, 7, 3000])
def test_the_star_kernel_makes_the_edges_of_a_bands_sort(n: int) -> None:
    """Each band's star edges by one pass over a hash table are those of sorting the band (star_edges): the
    same sorted, unique packed edges, rows taken in any order, absent hashes in no bucket."""
    rng = np.random.default_rng(n)
    buckets = rng.integers(1, 2**64 - 1, max(1, n // 4), dtype=np.uint64)
    bands = buckets[rng.integers(0, len(buckets), (n, 5))]
    bands[rng.random((n, 5)) < 0.15] = 0  # ABSENT
    # hashes alike in their low bits, which pick a slot: every bucket probes past the others
    bands[:, 4] = rng.integers(1, 50, n, dtype=np.uint64) << np.uint64(40)
    doc_ids = np.arange(n, dtype=np.int64)
    for order in (doc_ids, rng.permutation(n)):
        for j in range(5):
            column = bands[order, j]
            present = column != 0
            want = unique_sorted(pack_edges(*star_edges(doc_ids[present], column[present])))
            got = _star_kernel(bands, j, order)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


def test_once_numba_is_loaded_small_inputs_take_the_kernels(texts: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A large dedupe's sketch batches are at the size limit (4,096 documents): once a kernel loaded numba,
    they must not go on through the numpy twins (0.5 s of the sketcher at 254,724 documents)."""
    from operators.minhash import characters, lsh, signature, union_find, verify
    from operators.minhash._jit import make_all

    make_all()
    params = MinHashParams()
    batch = pa.array(texts[:200], pa.string())
    names = ("shingle_hashes", "minhash", "band_hashes", "sorted_sets", "exact", "estimated", "components")
    for name in (*names, "character_jaccard"):
        monkeypatch.setattr(small, name, lambda *_a, _name=name: pytest.fail(f"small.{_name} ran with numba loaded"))
    sigs = signature.signatures(batch, params)
    assert sigs.shape == (200, 2 * params.num_perm)
    lsh.band_hashes(sigs[:, : params.num_perm], 21, 6)
    src, dst = np.arange(10), np.arange(1, 11)
    verify.estimated_jaccard(sigs[:, : params.num_perm], src, dst)
    sets, offsets = verify.sorted_sets(np.arange(40, dtype=np.uint32), np.arange(0, 41, 2))
    verify.exact_jaccard(sets, offsets, src, dst)
    union_find.connected_components(20, src, dst)
    characters.character_jaccard(*string_buffers(fold(batch)), src, dst, params.ngram)


def test_a_small_dedupe_loads_neither_numba_nor_the_catalog(tmp_path: Path) -> None:
    """``lineage dedupe`` of a 10-document file: no numba, no Alembic (the user's catalog is not opened),
    no DuckDB, and a near copy is still found."""
    docs = read_corpus(CORPUS_EN)[:9]
    docs.append({**docs[0], "id": "copy", "text": docs[0]["text"] + " extra"})
    src = tmp_path / "ten.jsonl"
    src.write_text("".join(json.dumps(d) + "\n" for d in docs))
    code = (
        "import json, sys\nfrom lineage.cli.main import main\nsys.argv = ['lineage', *sys.argv[1:]]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(sorted(m.split('.')[0] for m in sys.modules)))"
    )
    out = tmp_path / "out.jsonl"
    result = subprocess.run(
        [sys.executable, "-c", code, "dedupe", str(src), "--output", str(out)],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "LINEAGE_HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    # by characters the copy joins 0ad's description and those of its two data packages (0.81-0.99)
    assert "kept 7, dropped 3 near-duplicates" in result.stdout
    loaded = set(json.loads(result.stdout.strip().splitlines()[-1]))
    assert not loaded & {"numba", "llvmlite", "alembic", "duckdb", "scipy"}, sorted(loaded)
    assert not (tmp_path / "home").exists()  # the user's catalog was never opened


def test_many_pairs_are_verified_on_every_core_with_the_same_values() -> None:
    """Past ``_PARALLEL_PAIRS`` the pairs are cut in slices, one thread each: every value is the kernel's."""
    from operators.minhash import verify

    rng = np.random.default_rng(7)
    lengths = rng.integers(0, 60, 3000)
    sets = np.concatenate([np.sort(rng.choice(500, k, replace=False)).astype(np.uint32) for k in lengths])
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    src, dst = rng.integers(0, 3000, verify._PARALLEL_PAIRS + 3), rng.integers(0, 3000, verify._PARALLEL_PAIRS + 3)
    want = _exact_kernel(sets, offsets, src, dst)
    np.testing.assert_array_equal(verify.exact_jaccard(sets, offsets, src, dst), want)
