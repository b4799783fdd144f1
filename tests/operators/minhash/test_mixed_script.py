"""Near twins across the old cliff: a document with no CJK character and its twin with a few.

The texts are real sections of the mixed evaluation set (``benchmarks/evalsets/zh_mixed.jsonl.gz``):
partly translated documentation with a few Chinese words (a translated heading, a "示例:" label)
among English paragraphs. Each twin is the same section with its CJK characters deleted, as the
untranslated upstream page reads. Under the reference (character 5-grams) every pair is a
duplicate at 0.8; ``script="auto"`` shingled one twin by characters and the other by words, so it
could never match them.
"""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pytest

from benchmarks.evalsets import build_zh_mixed
from benchmarks.evalsets.reference import char_shingles
from operators.minhash import MinHashParams, dedupe, dedupe_incremental, load_signatures, signature_batch

SECTIONS = (
    "man/zh_CN/man1/systemd-ask-password.1#6",
    "man/zh_CN/man2/socket.2#8",
    "debian-edu-doc-zh-cn/debian-edu-bookworm-manual.html#125",
    "libreoffice/text/sbasic/shared/03/sf_base.html.3",
)
_CJK = re.compile(
    "[\u1100-\u11ff\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]"
)


@pytest.fixture(scope="module")
def pairs() -> list[tuple[str, str]]:
    texts = {d["id"]: d["text"] for d in build_zh_mixed.read_docs()}
    out = []
    for sid in SECTIONS:
        text = texts[sid]
        twin = _CJK.sub("", text)
        assert 0 < len(_CJK.findall(text)) <= 12 and not _CJK.search(twin)
        a, b = char_shingles(text), char_shingles(twin)
        assert len(a & b) / len(a | b) >= 0.8  # duplicates under the reference
        out.append((text, twin))
    return out


def _decisions(pairs: list[tuple[str, str]], params: MinHashParams) -> pa.Table:
    texts = [t for pair in pairs for t in pair]
    ids = pa.array([f"{i:04d}" for i in range(len(texts))])
    table = pa.Table.from_batches([signature_batch(ids, pa.array(texts), params)])
    return dedupe(table, params, texts=pa.array(texts))


def _dropped_per_pair(decisions: pa.Table) -> list[int]:
    dropped = np.array(decisions.column("verdict").to_pylist()) == "dropped"
    return dropped.reshape(-1, 2).sum(axis=1).tolist()


@pytest.mark.parametrize("verify", ["exact", "estimate"])
def test_twins_across_the_cliff_are_found(pairs: list[tuple[str, str]], verify: str) -> None:
    params = MinHashParams(verify=verify)
    assert params.script == "mixed"
    decisions = _decisions(pairs, params)
    assert _dropped_per_pair(decisions) == [1] * len(pairs)
    if verify == "exact":  # a pair with a CJK character is compared as the reference compares it
        for (text, twin), jaccard in zip(pairs, decisions.column("jaccard").to_pylist()[1::2], strict=True):
            a, b = char_shingles(text), char_shingles(twin)
            assert jaccard == pytest.approx(len(a & b) / len(a | b))


def test_the_per_document_rule_misses_them(pairs: list[tuple[str, str]]) -> None:
    assert _dropped_per_pair(_decisions(pairs, MinHashParams(script="auto"))) == [0] * len(pairs)


def test_mixed_signatures_store_a_character_half_only_with_cjk(pairs: list[tuple[str, str]]) -> None:
    params = MinHashParams()
    texts = [t for pair in pairs for t in pair]
    batch = signature_batch(pa.array([str(i) for i in range(len(texts))]), pa.array(texts), params)
    widths = [len(v) for v in batch.column("signature").to_pylist()]
    assert widths == [params.num_perm * 8, params.num_perm * 4] * len(pairs)
    assert [len(v) for v in batch.column("bands").to_pylist()] == [42, 21] * len(pairs)
    sigs, bands = load_signatures(pa.Table.from_batches([batch]), params)
    assert sigs.shape == (len(texts), 2 * params.num_perm) and bands.shape == (len(texts), 42)
    assert (bands[1::2, 21:] == 0).all() and (bands[::2, 21:] != 0).all()
    _, rebanded = load_signatures(pa.Table.from_batches([batch]), replace(params, bands=16, rows=8))
    assert (rebanded[1::2, 16:] == 0).all() and (rebanded[::2, 16:] != 0).all()


def test_an_english_twin_is_deduped_against_a_published_release_with_cjk(pairs: list[tuple[str, str]]) -> None:
    """The new table has no CJK text (its signatures load narrow), the published one has: they line up."""
    params = MinHashParams()
    texts, twins = [p[0] for p in pairs], [p[1] for p in pairs]
    published = pa.Table.from_batches(
        [signature_batch(pa.array([f"p{i}" for i in range(len(texts))]), pa.array(texts), params)]
    )
    new = pa.Table.from_batches(
        [signature_batch(pa.array([f"n{i}" for i in range(len(twins))]), pa.array(twins), params)]
    )
    assert load_signatures(new, params)[0].shape[1] == params.num_perm
    assert load_signatures(published, params)[0].shape[1] == 2 * params.num_perm
    decisions = dedupe_incremental(new, published, params, pa.array(twins), pa.array(texts))
    assert decisions.column("verdict").to_pylist() == ["dropped"] * len(pairs)
    assert decisions.column("kept_id").to_pylist() == [f"p{i}" for i in range(len(pairs))]
