"""The exact n-gram index against a brute-force reference (issue #19, items 2 and 4: the detector finds
exactly what the reference finds, planted four ways), and its unit stream against near-dedupe's."""

from __future__ import annotations

import pyarrow as pa
import pytest

from operators.contamination.index import EvalIndex
from operators.contamination.params import NgramParams
from operators.contamination.units import unit_counts
from operators.minhash.params import MinHashParams
from operators.minhash.shingle import shingle_hashes
from tests.support.contamination_reference import contained, item_grams, planted_corpus
from tests.support.evalset_items import LONG_EN, LONG_ZH, OTHER_EN, items_v1


def _items() -> dict[str, str]:
    return {i["id"]: "\n".join([i["question"], *i["choices"]]) for i in items_v1()}


def _index(items: dict[str, str], params: NgramParams | None = None) -> EvalIndex:
    idx = EvalIndex(params)
    idx.add("mmlu-zh:v1", list(items), pa.array(list(items.values())))
    return idx


@pytest.mark.parametrize("params", [NgramParams(), NgramParams(word_ngram=5, char_ngram=8)])
def test_planted_items_are_found_exactly_as_the_reference_finds_them(params: NgramParams) -> None:
    items = _items()
    docs = planted_corpus(items, params)
    probes = _index(items, params).probe(pa.array(docs))
    found = reference = 0
    for doc, probe in zip(docs, probes, strict=True):
        want = contained(items, doc, params)
        got = {m.item.item_id: m.item_ngrams for m in probe.matches}
        assert got == want, doc[:80]  # same items, same matched n-gram counts: no miss, no false flag
        found, reference = found + len(got), reference + len(want)
    assert found == reference > 0


def test_item_and_sample_measures() -> None:
    items = _items()
    idx = _index(items)
    assert {i.item_id: i.ngrams for i in idx.items} == {k: len(item_grams(v, idx.params)) for k, v in items.items()}
    (probe,) = idx.probe(pa.array([f"Intro words here. {LONG_EN} — and an unrelated ending of the page"]))
    (match,) = probe.matches
    assert match.item.item_id == "q1" and match.item.evalset == "mmlu-zh:v1"
    assert match.item_ngrams == 19 - 13 + 1  # the question's windows; those reaching into the choices miss
    assert probe.sample_ngrams == 3 + 19 + 7 - 13 + 1
    assert match.sample_windows == 7


def test_mixed_script_text_is_one_stream() -> None:
    """A Latin item inside Chinese text is found (the word stream is probed too), and a Chinese item
    inside English text (the sample is CJK by near-dedupe's rule)."""
    idx = _index(_items())
    zh_doc, en_doc = f"这是一个中文网页，内容如下：{OTHER_EN}结束", f"Translated question: {LONG_ZH} end of page"
    got = [{m.item.item_id for m in p.matches} for p in idx.probe(pa.array([zh_doc, en_doc]))]
    assert got == [{"q6"}, {"q2"}]


def test_short_items_count_as_one_ngram_and_empty_texts_have_none() -> None:
    idx = _index({"s": "Is water wet?", "e": "  ", "p": "!!!"})
    assert [(i.item_id, i.ngrams) for i in idx.items] == [("s", 1), ("e", 0), ("p", 0)]
    probes = idx.probe(pa.array(["so, is WATER wet? maybe", "is water", "", "water wet is"]))
    assert [[m.item.item_id for m in p.matches] for p in probes] == [["s"], [], [], []]


def test_unit_counts_match_near_dedupe_shingles() -> None:
    """The unit stream is near-dedupe's ``script="auto"`` one: with n larger than any text, each text is
    one shingle of all its units, so the shingle counts equal our unit counts' non-empty texts, and the
    CJK flags agree."""
    texts = pa.array([LONG_EN, LONG_ZH, "Mixed 中文 and English", "", "¡Hola, señor!"])
    counts, cjk = unit_counts(texts)
    _, offsets, cjk_minhash = shingle_hashes(texts, MinHashParams(ngram=1, script="auto"))
    assert cjk.tolist() == cjk_minhash.tolist() == [False, True, True, False, False]
    assert counts.tolist()[:2] == [19, len([c for c in LONG_ZH if c not in "，？"])]
    # n=1: one shingle a unit, and a text without units one shingle over none
    assert (offsets[1:] - offsets[:-1]).tolist() == [max(c, 1) for c in counts.tolist()]


@pytest.mark.parametrize("bits", [0, 3])
def test_matching_rests_on_the_strings_when_every_hash_collides(bits: int) -> None:
    """With the preselecting hash cut to ``bits`` bits, almost every window of every sample preselects
    some n-gram; the byte-by-byte confirmation alone must then give exactly the reference's matches
    (a 64-bit collision can cost time, never a false flag or a miss)."""
    items = _items()
    params = NgramParams(word_ngram=5, char_ngram=8)
    docs = planted_corpus(items, params)
    idx = EvalIndex(params, preselect_bits=bits)
    idx.add("mmlu-zh:v1", list(items), pa.array(list(items.values())))
    for doc, probe in zip(docs, idx.probe(pa.array(docs)), strict=True):
        assert {m.item.item_id: m.item_ngrams for m in probe.matches} == contained(items, doc, params), doc[:80]


def test_fold_takes_ascii_texts_on_the_fast_path_with_the_same_result() -> None:
    """``fold`` lower-cases ASCII texts without NFKC (NFKC leaves ASCII unchanged) and runs NFKC only on
    the others: the same strings as NFKC + lower-casing everything, nulls as empty strings."""
    import pyarrow.compute as pc

    from operators.minhash.normalize import fold

    texts = pa.array(["Plain ASCII Text", "Ｆｕｌｌ-width ＡＢＣ", None, "ĲSSEL ﬁne Straße", "", "MiXeD 中文 TEXT"])
    want = pc.utf8_lower(pc.utf8_normalize(pc.fill_null(texts, ""), "NFKC"))
    assert fold(texts).to_pylist() == want.to_pylist()
    assert fold(pa.array(["ONLY ascii", None])).to_pylist() == ["only ascii", ""]
    assert fold(pa.chunked_array([["A"], ["Ｂ"]])).to_pylist() == ["a", "b"]
