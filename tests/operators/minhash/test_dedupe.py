"""Clustering, verification, survivors, lineage, stored signatures and incremental dedupe."""

from __future__ import annotations

import importlib
import random
import weakref
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from datasketch import MinHash

from benchmarks.evalsets.reference import char_shingles
from operators.lineage_records import LINEAGE_SCHEMA
from operators.minhash import (
    DECISION_SCHEMA,
    SIGNATURE_SCHEMA,
    MinHashParams,
    band_hashes,
    decide,
    dedupe,
    dedupe_incremental,
    estimated_jaccard,
    lineage_records,
    load_signatures,
    published_candidates,
    signature_batch,
    signatures,
)
from operators.minhash.characters import compared_texts
from operators.minhash.lsh import sketch_bands
from operators.minhash.normalize import fold
from operators.minhash.store import (
    FOLDED_TEXT,
    SHINGLE_SET,
    _bands_column,
    contiguous,
    held_apart,
    sketch_id,
    with_held,
)
from storage.errors import Invalid

_WORDS = [f"w{i}" for i in range(5000)]


def _doc(seed: int, length: int = 60) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(_WORDS) for _ in range(length))


def _edit(text: str, changes: int, seed: int) -> str:
    words = text.split()
    rng = random.Random(seed)
    for pos in rng.sample(range(len(words)), changes):
        words[pos] = f"edited{pos}"
    return " ".join(words)


def _jaccard5(a: str, b: str) -> float:
    """The reference ``script="mixed"`` verifies by: character 5-grams, whitespace deleted."""
    sa, sb = char_shingles(a), char_shingles(b)
    return len(sa & sb) / len(sa | sb)


A = _doc(1)
A_LONGER = A + " appended"
B = _doc(2)
C = _doc(3)


def _table(ids: list[str], texts: list[str], params: MinHashParams, published: list[bool] | None = None) -> pa.Table:
    table = pa.Table.from_batches([signature_batch(pa.array(ids, pa.string()), pa.array(texts, pa.string()), params)])
    if published is not None:
        table = table.append_column("published", pa.array(published))
    return table


def _run(ids: list[str], texts: list[str], published: list[bool] | None = None, **kw: object) -> dict[str, dict]:
    params = MinHashParams(**kw)
    decisions = dedupe(_table(ids, texts, params, published), params, texts=pa.array(texts))
    assert decisions.schema == DECISION_SCHEMA
    assert decisions.column("sample_id").to_pylist() == ids
    return {row["sample_id"]: row for row in decisions.to_pylist()}


def test_clusters_keep_longest_then_smallest_id() -> None:
    ids = ["a", "a_long", "b2", "b1", "c"]
    out = _run(ids, [A, A_LONGER, B, B, C])
    assert out["a_long"]["verdict"] == "kept" and out["a"]["verdict"] == "dropped"
    assert out["a"]["kept_id"] == "a_long"
    assert out["a"]["jaccard"] == pytest.approx(_jaccard5(A, A_LONGER))
    assert out["a"]["cluster_id"] == out["a_long"]["cluster_id"] == "a"
    assert out["a"]["cluster_size"] == 2
    assert (out["b1"]["verdict"], out["b2"]["verdict"], out["b2"]["kept_id"]) == ("kept", "dropped", "b1")
    assert out["b2"]["jaccard"] == 1.0
    assert out["c"] == {
        "sample_id": "c",
        "verdict": "kept",
        "cluster_id": None,
        "kept_id": None,
        "jaccard": None,
        "cluster_size": 1,
    }


@pytest.mark.parametrize(
    ("survivor", "kept"), [("longest", "z_long"), ("shortest", "y_short"), ("smallest_id", "x_mid")]
)
def test_survivor_policies(survivor: str, kept: str) -> None:
    out = _run(["z_long", "y_short", "x_mid"], [A_LONGER + " more", A, A_LONGER], survivor=survivor)
    assert [sid for sid, row in out.items() if row["verdict"] == "kept"] == [kept]
    assert {row["kept_id"] for row in out.values() if row["verdict"] == "dropped"} == {kept}


def test_published_samples_always_survive() -> None:
    out = _run(["a", "a_long"], [A, A_LONGER], published=[True, False])
    assert out["a"]["verdict"] == "kept" and out["a_long"]["verdict"] == "dropped"
    assert out["a_long"]["kept_id"] == "a"

    ids, texts = ["p1", "p2", "new_longest"], [A, A, A_LONGER + " more"]
    out = _run(ids, texts, published=[True, True, False])
    assert [out[i]["verdict"] for i in ids] == ["kept", "kept", "dropped"]
    assert out["new_longest"]["kept_id"] == "p1"
    assert out["p2"]["cluster_size"] == 3


def test_verification_rejects_bucket_sharing_below_threshold() -> None:
    far = _edit(A, 6, seed=5)
    assert 0.25 < _jaccard5(A, far) < 0.7
    loose = {"bands": 64, "rows": 2}
    assert _run(["a", "far"], [A, far], verify="none", **loose)["a"]["cluster_size"] == 2
    for verify in ("estimate", "exact"):
        out = _run(["a", "far"], [A, far], verify=verify, **loose)
        assert [row["verdict"] for row in out.values()] == ["kept", "kept"]
        assert out["a"]["cluster_size"] == 1


def test_exact_and_estimated_jaccard_of_dropped_samples() -> None:
    near = _edit(A, 1, seed=9)
    # "near" is longer (its edited word is), so "a" is the dropped one.
    exact = _run(["a", "near"], [A, near], threshold=0.7, verify="exact")["a"]
    assert exact["jaccard"] == pytest.approx(_jaccard5(A, near))
    params = MinHashParams(threshold=0.7, verify="estimate")
    est = _run(["a", "near"], [A, near], threshold=0.7, verify="estimate")["a"]
    # script="mixed": the stream half, then the character half (empty: the texts have no CJK character)
    sigs = signatures(pa.array([A, near]), params)[:, : params.num_perm]
    assert est["jaccard"] == estimated_jaccard(sigs, np.array([0]), np.array([1]))[0]
    m1, m2 = (MinHash(num_perm=128, seed=1, hashvalues=s, scheme="affine32") for s in sigs)
    assert est["jaccard"] == m1.jaccard(m2)


def test_exact_verification_needs_texts() -> None:
    params = MinHashParams()
    with pytest.raises(ValueError, match="texts"):
        dedupe(_table(["a", "b"], [A, A], params), params)


def test_chinese_near_duplicates() -> None:
    base = "这是一个用于测试中文近似重复检测的句子，它包含足够多的汉字以形成很多字符五元组。"
    out = _run(["z1", "z2", "z3"], [base, base + "附加", "完全不同的另一段中文文本内容，没有任何共同之处可言啊。"])
    assert out["z1"]["verdict"] == "dropped" and out["z1"]["kept_id"] == "z2"
    assert out["z3"]["cluster_id"] is None


def test_lineage_records() -> None:
    ids = ["a", "a_long", "c"]
    params = MinHashParams()
    decisions = dedupe(_table(ids, [A, A_LONGER, C], params), params, texts=pa.array([A, A_LONGER, C]))
    records = lineage_records(decisions, "minhash_dedupe", "1")
    assert records.schema == LINEAGE_SCHEMA
    rows = {r["sample_id"]: r for r in records.to_pylist()}
    dropped = rows["a"]
    assert (dropped["verdict"], dropped["reason"], dropped["related_ids"]) == (
        "dropped",
        "near_duplicate",
        ["a_long"],
    )
    dup = dropped["detail"]["duplicate"]
    assert dup["method"] == "minhash" and dup["kept_id"] == "a_long" and dup["cluster_size"] == 2
    assert dup["jaccard"] == pytest.approx(_jaccard5(A, A_LONGER))
    assert rows["a_long"]["detail"]["duplicate"]["kept_id"] == "a_long"
    assert rows["a_long"]["related_ids"] is None and rows["c"]["detail"] is None


def test_signature_table_roundtrip_and_refusal() -> None:
    params = MinHashParams()
    texts = [A, B, C]
    table = _table(["a", "b", "c"], texts, params)
    assert table.schema == SIGNATURE_SCHEMA
    assert table.column("text_length").to_pylist() == [len(t) for t in texts]
    sigs, bands = load_signatures(table, params)
    # no text has a CJK character: the mixed signatures load as their word halves only
    np.testing.assert_array_equal(sigs, signatures(pa.array(texts), params)[:, :128])
    np.testing.assert_array_equal(bands, sketch_bands(sigs, 21, 6, 128))
    _, rebanded = load_signatures(table, MinHashParams(bands=16, rows=8))
    np.testing.assert_array_equal(rebanded, sketch_bands(sigs, 16, 8, 128))
    latin = MinHashParams(script="latin")
    sigs, bands = load_signatures(_table(["a", "b", "c"], texts, latin), latin)
    np.testing.assert_array_equal(bands, band_hashes(sigs, 21, 6))
    with pytest.raises(ValueError, match="seed=2"):
        load_signatures(table, MinHashParams(seed=2))


def test_signature_table_survives_a_delta_roundtrip(tmp_path: Path) -> None:
    deltalake = pytest.importorskip("deltalake")
    params = MinHashParams()
    table = _table(["a", "b", "c"], [A, B, "short"], params)
    deltalake.write_deltalake(str(tmp_path), table)
    fs = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())
    loaded = deltalake.DeltaTable(str(tmp_path)).to_pyarrow_dataset(filesystem=fs).to_table()
    for got, expected in zip(load_signatures(loaded, params), load_signatures(table, params), strict=True):
        np.testing.assert_array_equal(got, expected)


def test_incremental_against_published_signatures() -> None:
    params = MinHashParams()
    old_ids, old_texts = (
        ["old_a", "old_b", *(f"old_{i}" for i in range(20))],
        [A, B, *(_doc(100 + i) for i in range(20))],
    )
    published = _table(old_ids, old_texts, params)
    new_ids, new_texts = (
        ["new_a_long", "new_c", "new_c_copy", "new_b_edit"],
        [A_LONGER, C, C, _edit(B, 1, seed=3)],
    )
    new = _table(new_ids, new_texts, params)
    out = dedupe_incremental(new, published, params, new_texts=pa.array(new_texts), published_texts=pa.array(old_texts))
    rows = {r["sample_id"]: r for r in out.to_pylist()}
    assert out.column("sample_id").to_pylist() == new_ids
    assert rows["new_a_long"]["verdict"] == "dropped" and rows["new_a_long"]["kept_id"] == "old_a"
    assert rows["new_b_edit"]["kept_id"] == "old_b"
    assert rows["new_b_edit"]["jaccard"] == pytest.approx(_jaccard5(B, _edit(B, 1, seed=3)))
    assert (rows["new_c"]["verdict"], rows["new_c_copy"]["verdict"]) == ("kept", "dropped")

    # An engine may load only the published rows (and texts) that share a bucket.
    rows = published_candidates(new, published, params)
    assert sorted(published.column("sample_id").take(pa.array(rows)).to_pylist()) == ["old_a", "old_b"]
    narrow = dedupe_incremental(
        new,
        published.take(pa.array(rows)),
        params,
        new_texts=pa.array(new_texts),
        published_texts=pa.array(old_texts).take(pa.array(rows)),
    )
    assert narrow == out

    # Same decisions as one full run over both tables with the old rows flagged published.
    full = dedupe(
        pa.concat_tables([new, published]).append_column("published", pa.array([False] * 4 + [True] * 22)),
        params,
        texts=pa.array(new_texts + old_texts),
    ).slice(0, 4)
    assert full.select(["sample_id", "verdict", "kept_id", "jaccard"]) == out.select(
        ["sample_id", "verdict", "kept_id", "jaccard"]
    )


def test_decide_on_a_subset_of_components_with_global_labels() -> None:
    # An engine may call decide per group of complete components, with labels from a global run.
    decisions = decide(
        pa.array(["d", "c", "b", "a"]),
        np.array([10**9, 10**9, 7, 7]),
        np.array([5, 9, 1, 1]),
        np.array([False, False, False, False]),
        "longest",
        lambda rows, kept: np.full(len(rows), 0.9),
    )
    rows = decisions.to_pylist()
    assert [(r["verdict"], r["kept_id"], r["cluster_id"]) for r in rows] == [
        ("dropped", "c", "c"),
        ("kept", None, "c"),
        ("dropped", "a", "a"),
        ("kept", None, "a"),
    ]


def test_empty_input() -> None:
    params = MinHashParams()
    empty = _table([], [], params)
    assert dedupe(empty, params, texts=pa.array([], pa.string())).num_rows == 0


def test_params_validation() -> None:
    with pytest.raises(ValueError, match="unknown"):
        MinHashParams.from_dict({"treshold": 0.8})
    for bad in (
        {"verify": "maybe"},
        {"script": "thai"},
        {"threshold": 0},
        {"ngram": 0},
        {"survivor": "random"},
    ):
        with pytest.raises(ValueError):
            MinHashParams(**bad)


def test_permuted_texts_verify_as_a_sorted_copy_does() -> None:
    """The operator hands exact verification its texts as a permuted view (no sorted copy of every
    text); reading rows through the view, across chunks and in batches, decides as the copy does."""
    import sys

    from operators.minhash.dedupe import PermutedTexts

    module_dedupe = sys.modules["operators.minhash.dedupe"]  # the package exports a function of that name

    bases = [_doc(s, 80) for s in range(300)]
    near = [_edit(t, 1, 100 + i) for i, t in enumerate(bases[:200])]
    texts = bases + near + [_edit(bases[i], 30, i) for i in range(100)]
    rng = np.random.default_rng(7)
    order = rng.permutation(len(texts))
    chunked = pa.chunked_array([pa.array(texts[i : i + 37], pa.string()) for i in range(0, len(texts), 37)])
    sorted_texts = chunked.take(pa.array(order))
    ids = pa.array([f"{k:08x}" for k in range(len(texts))], pa.string())
    table = pa.Table.from_batches([signature_batch(ids, sorted_texts, MinHashParams())])
    old_batch = module_dedupe._SET_BATCH
    module_dedupe._SET_BATCH = 64  # many batches, each spanning chunks
    try:
        want = dedupe(table, MinHashParams(), sorted_texts)
        got = dedupe(table, MinHashParams(), PermutedTexts(chunked, order.astype(np.int64)))
    finally:
        module_dedupe._SET_BATCH = old_batch
    assert got.equals(want)
    assert pa.compute.sum(pa.compute.equal(want.column("verdict"), "dropped")).as_py() >= 100


def test_priority_orders_a_cluster_after_published_and_before_the_policy() -> None:
    ids = pa.array(["a", "b", "c", "d"])
    labels = np.array([0, 0, 0, 1])
    lengths = np.array([10, 30, 20, 5])
    none = np.zeros(4, bool)

    def kept(published: np.ndarray, priority: np.ndarray | None) -> list[str | None]:
        out = decide(ids, labels, lengths, published, "longest", lambda s, d: np.ones(len(s)), priority)
        return out.column("kept_id").to_pylist()

    assert kept(none, None) == ["b", None, "b", None]  # the longest
    assert kept(none, np.zeros(4, np.int64)) == kept(none, None)  # equal ranks: the default order
    assert kept(none, np.array([0, 0, 1, 0])) == ["c", "c", None, None]  # the higher rank, though shorter
    published = np.array([True, False, False, False])
    assert kept(published, np.array([0, 0, 1, 0])) == [None, "a", "a", None]  # published still first


def test_without_signatures_decides_as_the_whole_table_does() -> None:
    """Exact verification never reads a signature: a table (or batch) without them loads zero-width
    signatures and the same bands, and the operator decides exactly as before; a malformed signature
    is still refused, and a table whose bands must be recomputed keeps its signatures."""
    from operators.minhash.operator import MinHashDedupe
    from operators.minhash.store import without_signatures

    params = MinHashParams()
    bases = [_doc(s, 80) for s in range(60)]
    texts = bases + [_edit(t, 1, 100 + i) for i, t in enumerate(bases[:40])] + ["中文文本 near 重复 " * 6] * 2
    ids = [f"{k:08x}" for k in range(len(texts))][::-1]  # not in sample_id order: cluster sorts
    table = _table(ids, texts, params)
    slim = without_signatures(table, params)
    assert "signature" not in slim.column_names
    sigs, bands = load_signatures(slim, params)
    assert sigs.shape == (len(texts), 0)
    np.testing.assert_array_equal(bands, load_signatures(table, params)[1])
    assert dedupe(slim, params, pa.array(texts)).equals(dedupe(table, params, pa.array(texts)))

    op = MinHashDedupe(params.to_dict())
    batch = pa.record_batch({"sample_id": ids, "text": texts})
    held = op.held_sketch(batch)
    assert "signature" not in held.schema.names and held.num_rows == batch.num_rows
    want = op.cluster(table, pa.chunked_array([pa.array(texts)]))
    assert op.cluster(pa.Table.from_batches([held]), pa.chunked_array([pa.array(texts)])).equals(want)
    assert pa.compute.sum(pa.compute.equal(want.column("verdict"), "dropped")).as_py() >= 40
    # estimated verification reads signatures: they are kept
    assert "signature" in MinHashDedupe({**params.to_dict(), "verify": "estimate"}).held_sketch(batch).schema.names
    # another band layout recomputes bands from signatures: they are kept
    assert "signature" in without_signatures(table, MinHashParams(bands=16, rows=8)).column_names

    short = table.set_column(
        table.schema.get_field_index("signature"), "signature", pa.array([b"\x00" * 8] * len(texts), pa.binary())
    )
    with pytest.raises(ValueError, match="signature"):
        without_signatures(short, params)
    with pytest.raises(ValueError, match="seed=2"):
        without_signatures(table, MinHashParams(seed=2))


@pytest.mark.parametrize("script", ["mixed", "latin"])
def test_held_sketches_carry_what_exact_verification_compares(script: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``lineage dedupe`` holds every sketch in memory: the sketcher keeps what verification compares, so the
    cluster step decides as it does from the texts without making it again: ``script="mixed"``, each row's
    folded text (the cluster step then needs no texts at all); otherwise its sorted shingle set. Held in
    several batches, in another order than ``sample_id``'s, with texts NFKC changes."""
    from operators.minhash.operator import MinHashDedupe

    dedupe_module = importlib.import_module("operators.minhash.dedupe")
    params = MinHashParams(script=script)
    bases = [_doc(s, 80) for s in range(60)]
    texts = bases + [_edit(t, 1, 100 + i) for i, t in enumerate(bases[:40])] + ["", "!!", bases[3]]
    texts += ["ＦＵＬＬ Ｗｉｄｔｈ " + bases[5], "中文的说明 " + bases[6]]
    ids = [f"{(k * 7919) % 1000:08x}" for k in range(len(texts))]
    op = MinHashDedupe(params.to_dict())
    assert op.held_texts == (script == "mixed")
    whole = pa.chunked_array([pa.array(texts)])
    want = op.cluster(pa.Table.from_batches([op.sketch(pa.record_batch({"sample_id": ids, "text": texts}))]), whole)
    held = pa.Table.from_batches(
        [
            op.held_sketch(pa.record_batch({"sample_id": ids[lo : lo + 17], "text": texts[lo : lo + 17]}))
            for lo in range(0, len(texts), 17)
        ]
    )
    if op.held_texts:  # as verification reads them: folded, less what the character metric deletes
        assert held.column(FOLDED_TEXT).to_pylist() == compared_texts(fold(pa.array(texts))).to_pylist()
    monkeypatch.setattr(dedupe_module, "_shingle_sets", lambda *_: pytest.fail("the texts were shingled again"))
    monkeypatch.setattr(dedupe_module, "fold", lambda *_: pytest.fail("the texts were folded again"))
    got = op.cluster(held, None if op.held_texts else whole)
    assert got.equals(want)
    assert pa.compute.sum(pa.compute.equal(got.column("verdict"), "dropped")).as_py() >= 42

    # as ``lineage dedupe`` holds them: the large columns apart from the batches, then put back as one chunk
    pieces: dict[str, list[pa.Array]] = {}
    apart = []
    for batch in held.to_batches():
        rest, columns = held_apart(batch)
        assert sorted(columns) == sorted([FOLDED_TEXT if script == "mixed" else SHINGLE_SET, "bands"])
        assert not set(columns) & set(rest.schema.names)
        apart.append(rest)
        for name, column in columns.items():
            pieces.setdefault(name, []).append(column)
    rejoined = pa.Table.from_batches(apart)
    for name in list(pieces):
        rejoined = with_held(rejoined, name, pieces[name])
        assert not pieces[name] and rejoined.column(name).num_chunks == 1
    verified = FOLDED_TEXT if script == "mixed" else SHINGLE_SET
    assert rejoined.column(verified).equals(held.column(verified))
    # the bands join as the band matrix itself, which then loads without a copy
    matrix = load_signatures(rejoined, params)[1]
    assert matrix.ctypes.data == rejoined.column("bands").chunk(0).values.buffers()[1].address
    assert np.array_equal(matrix, load_signatures(held, params)[1])
    assert op.cluster(rejoined, None if op.held_texts else whole).equals(want)


def test_bands_columns_hold_a_matrix_s_rows_or_their_first_halves_in_arrow_memory() -> None:
    """The ``bands`` column of a band matrix, as it was built from NumPy before (a list per row: whole, or its
    first half for a mixed-script row without a character half), now in Arrow's pool."""
    rng = np.random.default_rng(3)
    bands = rng.integers(0, 2**63, size=(9, 6), dtype=np.int64).view(np.uint64)
    full = np.array([True, False, True, True, False, False, True, False, True])
    whole = _bands_column(bands, None)
    assert whole.to_pylist() == bands.view(np.int64).tolist()
    halves = _bands_column(bands, full)
    assert halves.to_pylist() == [
        row if f else row[:3] for row, f in zip(bands.view(np.int64).tolist(), full, strict=True)
    ]
    before = pa.total_allocated_bytes()
    column = _bands_column(bands, full)
    assert pa.total_allocated_bytes() - before >= 8 * len(column.values)  # the values: Arrow's, not NumPy's
    assert _bands_column(np.zeros((0, 6), np.uint64), None).to_pylist() == []


@pytest.mark.parametrize("script", ["mixed", "latin"])
def test_the_cluster_step_lets_its_sketches_go_before_it_makes_the_records(
    script: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Handed over with no other reference, the held sketches (every text ``lineage dedupe`` verified) are freed
    before the lineage records are made: that allocation had come on top of them, the run's peak."""
    operator_module = importlib.import_module("operators.minhash.operator")
    op = operator_module.MinHashDedupe(MinHashParams(script=script).to_dict())
    texts = [_doc(s, 80) for s in range(30)] + [_edit(_doc(s, 80), 1, 7 + s) for s in range(10)]
    ids = [f"{k:04d}" for k in range(len(texts))]
    held = [pa.Table.from_batches([op.held_sketch(pa.record_batch({"sample_id": ids, "text": texts}))])]
    sketches = weakref.ref(held[0])
    whole = None if op.held_texts else pa.chunked_array([pa.array(texts)])
    make_records = operator_module.lineage_records

    def records(*args: object) -> pa.RecordBatch:
        assert sketches() is None, "the sketches were still held when the records were made"
        return make_records(*args)

    monkeypatch.setattr(operator_module, "lineage_records", records)
    got = op.cluster(held.pop(), whole)
    assert pa.compute.sum(pa.compute.equal(got.column("verdict"), "dropped")).as_py() >= 10


def test_one_chunk_is_read_where_it_is() -> None:
    """A held column put back as one chunk is the verification's buffer itself: ``combine_chunks`` copies
    even a single chunk, which doubled the folded texts held at the cluster step."""
    texts = pa.array(["abcdefgh", "abcdefgx", "zzzzzzzz"], pa.large_string())
    assert contiguous(pa.chunked_array([texts])).buffers()[2].address == texts.buffers()[2].address
    two = pa.chunked_array([texts.slice(0, 1), texts.slice(1)])
    assert contiguous(two).equals(texts)
    dedupe_module = importlib.import_module("operators.minhash.dedupe")
    held = dedupe_module._FoldedTexts(pa.chunked_array([texts]), None, MinHashParams(script="mixed"), True)
    assert held._data.ctypes.data == texts.buffers()[2].address
    assert held.compare(np.array([0, 0]), np.array([1, 2])).tolist() == pytest.approx([3 / 5, 0.0])


def test_signatures_stored_with_word_five_gram_halves_keep_their_id_and_are_refused_by_the_default() -> None:
    """Releases stored before ``word_ngram`` had word halves of ``ngram`` words: that setting names the same
    space as then, and the default (2 words) refuses them with the settings they were made with."""
    before = MinHashParams(word_ngram=5)
    assert sketch_id(before) == "minhash-v1 affine32 ngram=5 num_perm=128 seed=1 script=mixed word_half_share=0.4"
    assert "word_ngram=2" in sketch_id(MinHashParams())
    stored = _table(["a", "b"], [A, B], before).append_column("published", pa.array([True, True]))
    new = _table(["c"], [A], MinHashParams())
    with pytest.raises(Invalid, match="word_half_share=0.4'.*word_ngram=2"):
        dedupe_incremental(new, stored, MinHashParams(), pa.array([A]), pa.array([A, B]))
    decided = dedupe_incremental(_table(["c"], [A], before), stored, before, pa.array([A]), pa.array([A, B]))
    assert decided.column("verdict").to_pylist() == ["dropped"]


def test_edges_verified_in_batches_skip_joined_ends_and_give_the_same_decisions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Over ``_EDGE_BATCH`` candidate edges, an edge whose ends verified edges have joined is not compared:
    the clusters, survivors and similarities are those of comparing every edge."""
    dedupe_module = importlib.import_module("operators.minhash.dedupe")
    bases = [_doc(s, 80) for s in range(40)]
    texts = bases + [_edit(t, k % 4 + 3, 300 + k) for k in range(6) for t in bases] + [_edit(bases[0], 20, 9)]
    ids = [f"{k:05d}" for k in range(len(texts))]
    params = MinHashParams()
    table = _table(ids, texts, params)
    want = dedupe(table, params, pa.array(texts))
    compared: list[int] = []
    real = dedupe_module.character_jaccard

    def counted(*args: object) -> np.ndarray:
        compared.append(len(args[2]))
        return real(*args)

    monkeypatch.setattr(dedupe_module, "character_jaccard", counted)
    monkeypatch.setattr(dedupe_module, "_EDGE_BATCH", 16)
    got = dedupe(table, params, pa.array(texts))
    assert got.equals(want)
    edges = dedupe_module.candidate_edges(load_signatures(table, params)[1])[0]
    assert sum(compared[:-1]) < len(edges)  # the last call is the survivors' similarities


@pytest.mark.parametrize("shape", ["random", "sorted", "sorted with repeats", "one", "none"])
def test_id_ranks_are_those_of_a_stable_sort(shape: str) -> None:
    """Ids already in order are ranked without sorting them: the ranks a stable sort gives, repeats too."""
    from operators.minhash.survivors import _id_ranks

    rng = random.Random(3)
    ids = [f"id-{rng.randrange(50):03d}" for _ in range(200)]
    ids = {
        "random": ids,
        "sorted": sorted(set(ids)),
        "sorted with repeats": sorted(ids),
        "one": ids[:1],
        "none": [],
    }[shape]
    want = np.empty(len(ids), np.int64)
    want[np.argsort(np.array(ids, dtype=object), kind="stable")] = np.arange(len(ids))
    np.testing.assert_array_equal(_id_ranks(pa.array(ids, pa.string())), want)


@pytest.mark.parametrize("shape", ["row numbers", "any integers", "one", "none"])
def test_dense_labels_are_numpys_inverse(shape: str) -> None:
    """Component labels ranked without NumPy's hashing unique: its inverse, exactly."""
    from operators.minhash.survivors import _dense

    rng = np.random.default_rng(5)
    labels = {
        "row numbers": rng.integers(0, 300, 300),
        "any integers": rng.integers(-(2**40), 2**40, 300) // 2**35,
        "one": np.array([7]),
        "none": np.zeros(0, np.int64),
    }[shape].astype(np.int64)
    np.testing.assert_array_equal(_dense(labels), np.unique(labels, return_inverse=True)[1].reshape(-1))
