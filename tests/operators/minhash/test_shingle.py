"""Normalisation, shingling and script detection."""

from __future__ import annotations

import sys
import unicodedata
import weakref

import numpy as np
import pyarrow as pa
import pytest

from benchmarks.evalsets.reference import char_shingles, normalise
from operators import code_point_tables
from operators.minhash import MinHashParams, normalize, shingle_hashes
from operators.minhash.normalize import fold, punct_or_symbol_table
from operators.minhash.shingle import concat_releasing, is_space
from tests.support.minhash_texts import EDGES


def _doc_hashes(texts: list[str], **kw: object) -> list[np.ndarray]:
    hashes, offsets, _ = shingle_hashes(pa.array(texts, pa.string()), MinHashParams(**kw))
    return [hashes[offsets[i] : offsets[i + 1]] for i in range(len(texts))]


def _py_shingles(text: str, n: int, cjk: bool) -> set[str]:
    norm = unicodedata.normalize("NFKC", text).lower()
    norm = "".join(ch for ch in norm if unicodedata.category(ch)[0] not in "PS")
    units = list("".join(norm.split())) if cjk else norm.split()
    if len(units) < n:
        return {"\x00".join(units)}
    return {"\x00".join(units[i : i + n]) for i in range(len(units) - n + 1)}


def test_fold_is_nfkc_then_lower() -> None:
    assert fold(pa.array(["Ｆｕｌｌ-Width «Quotes» ½ ™", None])).to_pylist() == [
        "full-width «quotes» 1⁄2 tm",
        "",
    ]
    texts = [*EDGES, "ΟΔΟΣ ΤΗΣ ΧΩΡΑΣ.", "ΑΣ, ΒΣ; ΓΣ ΣΣ Σ", "Σήμερα", "İİ", "ｆｕｌｌ Σ"]
    assert fold(pa.array(texts)).to_pylist() == [unicodedata.normalize("NFKC", t).lower() for t in texts]


def test_punct_or_symbol_table_flags_categories_p_and_s() -> None:
    table = punct_or_symbol_table()
    for ch in ",.!?-«»()[]&$€+=<>|~^`'\"、。，：！⁄™😀":
        assert table[ord(ch)], ch
    for ch in "aZ09éß中あ한 \n_":
        assert table[ord(ch)] == (ch == "_"), ch  # "_" is Pc (connector punctuation)


def test_the_table_is_cached_on_disk_and_equals_pythons_categories(tmp_path, monkeypatch) -> None:
    """Start-up loads the table from a bit file instead of asking unicodedata 1.1M times; a file
    that is missing or damaged is rebuilt, and every way gives Python's own categories."""
    reference = np.fromiter(
        (unicodedata.category(chr(cp))[0] in "PS" for cp in range(sys.maxunicode + 1)),
        dtype=np.bool_,
        count=sys.maxunicode + 1,
    )
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    path = code_point_tables.cache_file("punct_or_symbol")
    assert path.parent == tmp_path and not path.exists()
    for state in ("missing", "written", "damaged"):
        if state == "damaged":
            path.write_bytes(b"not a table")
        normalize.punct_or_symbol_table.cache_clear()
        try:
            table = normalize.punct_or_symbol_table()
        finally:
            normalize.punct_or_symbol_table.cache_clear()
        np.testing.assert_array_equal(table, reference, err_msg=state)
        assert not table.flags.writeable
        assert path.stat().st_size == (sys.maxunicode + 8) // 8, state


def test_punctuation_and_symbols_are_deleted_not_split_on() -> None:
    a, b, c = _doc_hashes(["foo-bar baz ½ qux!", "foobar baz 12 qux", "foo bar baz 12 qux"], ngram=2)
    np.testing.assert_array_equal(a, b)
    assert len(c) == len(a) + 1


def test_case_punctuation_and_whitespace_do_not_change_shingles() -> None:
    a, b = _doc_hashes(["Hello, world! This is   a test of shingles.", "hello world this is a\u3000test of SHINGLES"])
    np.testing.assert_array_equal(a, b)


def test_word_ngrams_count_and_short_document_yields_one_shingle() -> None:
    seven, short, empty = _doc_hashes(["a b c d e f g", "only three words", "   "], ngram=5, script="latin")
    assert len(seven) == 3
    assert len(short) == 1
    assert len(empty) == 1
    assert short[0] != empty[0]


def test_word_order_matters() -> None:
    a, b = _doc_hashes(["one two three", "three two one"], ngram=3)
    assert a[0] != b[0]


def test_cjk_character_ngrams_ignore_whitespace() -> None:
    # the character half of a script="mixed" signature, and script="cjk"
    (hashes,), (spaced,) = (
        _doc_hashes(["我们今天去公园散步"], script="cjk"),
        _doc_hashes(["我们 今天\n去公园 散步"], script="cjk"),
    )
    assert len(hashes) == 9 - 5 + 1
    np.testing.assert_array_equal(hashes, spaced)


def test_script_detection_per_document_and_forced() -> None:
    texts = pa.array(
        [
            "这是一个中文句子，里面有 Debian 这个词",
            "An English sentence with 一个 word",
            "日本語のテキストです",
            "한국어 문장입니다",
            "Plain English, café, naïve ½",
        ]
    )
    _, _, cjk = shingle_hashes(texts, MinHashParams())
    assert cjk.tolist() == [True, True, True, True, False]  # script="mixed": has a CJK character
    _, _, cjk = shingle_hashes(texts, MinHashParams(script="auto"))
    assert cjk.tolist() == [True, True, True, True, False]  # any CJK character is enough
    _, _, by_ratio = shingle_hashes(texts, MinHashParams(script="auto", cjk_ratio=0.3))
    assert by_ratio.tolist() == [True, False, True, True, False]
    _, _, forced = shingle_hashes(texts, MinHashParams(script="latin"))
    assert not forced.any()
    _, _, forced = shingle_hashes(texts, MinHashParams(script="cjk"))
    assert forced.all()


@pytest.mark.parametrize(
    ("left", "right", "cjk"),
    [
        (
            "the cat sat on the mat and then the dog sat on the log",
            "the cat sat on the mat and then a dog sat on a log",
            False,
        ),
        (
            "Debian package: libfoo-dev (development files) for foo",
            "Debian package libfoo1 runtime files for foo",
            False,
        ),
        ("中文文本去重测试，这是一个很长的句子。", "中文文本去重测试：这是一个很短的句子！", True),
    ],
)
def test_hash_set_jaccard_equals_string_set_jaccard(left: str, right: str, cjk: bool) -> None:
    a, b = (set(h.tolist()) for h in _doc_hashes([left, right], ngram=3, script="cjk" if cjk else "latin"))
    sa, sb = _py_shingles(left, 3, cjk), _py_shingles(right, 3, cjk)
    assert (len(a), len(b)) == (len(sa), len(sb))
    assert len(a & b) / len(a | b) == pytest.approx(len(sa & sb) / len(sa | sb))


def test_is_space_is_str_isspace() -> None:
    mismatches = [cp for cp in range(sys.maxunicode + 1) if is_space(cp) != chr(cp).isspace()]
    assert mismatches == []


def test_sliced_and_large_string_inputs() -> None:
    texts = ["alpha beta gamma delta epsilon zeta", "eta theta iota kappa lambda mu", "nu xi omicron pi rho"]
    whole = _doc_hashes(texts)
    sliced_h, sliced_o, _ = shingle_hashes(pa.array(texts).slice(1, 2), MinHashParams())
    np.testing.assert_array_equal(sliced_h[sliced_o[0] : sliced_o[1]], whole[1])
    large_h, _, _ = shingle_hashes(pa.array(texts, pa.large_string()), MinHashParams())
    np.testing.assert_array_equal(large_h, np.concatenate(whole))


# A man page section in two translation states: the second has two more sentences translated.
_OPTIONS = (
    "-a, --all  do not ignore entries starting with . "
    "-A, --almost-all  do not list implied . and .. "
    "--author  with -l, print the author of each file "
    "-b, --escape  print C-style escapes for nongraphic characters "
    "--block-size=SIZE  with -l, scale sizes by SIZE when printing them; e.g., '--block-size=M' "
    "-B, --ignore-backups  do not list implied entries ending with ~ "
    "-c  with -lt: sort by, and show, ctime (time of last modification of file status information) "
    "-C  list entries by columns "
    "--color[=WHEN]  color the output WHEN; more info below "
    "-d, --directory  list directories themselves, not their contents "
)
_LESS_TRANSLATED = "列出目录内容。默认列出当前目录中的文件，按字母顺序排序。" + _OPTIONS
_MORE_TRANSLATED = (
    _LESS_TRANSLATED + "长选项必须使用的参数对于短选项也是必须使用的。" + "如果没有指定排序选项，则按字母排序。"
)


def _han_share(text: str) -> float:
    chars = "".join(normalise(text).split())
    return sum("\u4e00" <= ch <= "\u9fff" for ch in chars) / len(chars)


def test_near_twins_on_either_side_of_a_han_ratio_share_one_shingle_space() -> None:
    assert _han_share(_LESS_TRANSLATED) < 0.1 < _han_share(_MORE_TRANSLATED)
    ref_a, ref_b = char_shingles(_LESS_TRANSLATED), char_shingles(_MORE_TRANSLATED)
    reference = len(ref_a & ref_b) / len(ref_a | ref_b)
    assert reference >= 0.8
    a, b = (set(h.tolist()) for h in _doc_hashes([_LESS_TRANSLATED, _MORE_TRANSLATED], script="auto"))
    assert len(a & b) / len(a | b) == pytest.approx(reference)  # auto: the reference's own shingles
    a, b = (set(h.tolist()) for h in _doc_hashes([_LESS_TRANSLATED, _MORE_TRANSLATED], script="auto", cjk_ratio=0.1))
    assert not a & b  # a ratio the twins straddle puts them in spaces that share nothing


def test_mixed_text_shingles_are_the_character_reference() -> None:
    texts = [_LESS_TRANSLATED, "使用 git clone 下载仓库: git clone https://example.org/repo.git --depth 1"]
    for script in ("auto", "cjk"):  # and the character half of a script="mixed" signature
        for text, hashes in zip(texts, _doc_hashes(texts, script=script), strict=True):
            assert len(set(hashes.tolist())) == len(char_shingles(text))


def test_latin_and_cjk_scripts_keep_their_shingles() -> None:
    """Forced ``latin`` / ``cjk`` shingling is format 1 as stored before: pinned hashes."""
    text = "Debian 软件包 libfoo-dev: development files for foo 开发文件"
    (latin,) = _doc_hashes([text], script="latin", ngram=3)
    (cjk,) = _doc_hashes([text], script="cjk", ngram=3)
    assert latin[:3].tolist() == [1857208430, 1860336564, 2312756732]
    assert cjk[:3].tolist() == [2414277173, 393163169, 3281028819]


def test_concat_releasing_joins_as_concat_arrays_and_frees_each_piece_before_the_next() -> None:
    """One large string array of the pieces (sliced, empty, either offset width), the list emptied, and each
    piece released before the next is copied when the list held the only references: ``concat_arrays``
    holds them all and the result at once (twice the bytes)."""
    texts = [f"{i:06d} " + "漢字 text " * (i % 50) for i in range(4000)]
    owners = [np.frombuffer("".join(texts[lo : lo + 500]).encode(), np.uint8).copy() for lo in range(0, 4000, 500)]
    ends = [
        np.cumsum([0] + [len(t.encode()) for t in texts[lo : lo + 500]]).astype(np.int32) for lo in range(0, 4000, 500)
    ]
    alive = [weakref.ref(owner) for owner in owners]

    class Watched(list):  # asserts, as each piece is taken, that every piece taken before it is gone
        def pop(self, *args: int) -> pa.Array:
            taken = len(alive) - len(self)
            assert [ref() for ref in alive[:taken]] == [None] * taken
            return super().pop(*args)

    pieces = Watched(
        pa.Array.from_buffers(pa.string(), 500, [None, pa.py_buffer(e), pa.py_buffer(o)])
        for e, o in zip(ends, owners, strict=True)
    )
    del owners
    want = pa.array(texts, pa.large_string())
    assert concat_releasing(pieces).equals(want) and pieces == []
    assert [ref() for ref in alive] == [None] * len(alive)

    mixed = [pa.array(texts[:10], pa.large_string()).slice(3, 5), pa.array([], pa.string()), pa.array(["z"])]
    assert concat_releasing(mixed).to_pylist() == [*texts[3:8], "z"]
    assert concat_releasing([pa.array([b"\x00\x01", b""], pa.large_binary())]).to_pylist() == [b"\x00\x01", b""]
    assert concat_releasing([]).to_pylist() == []
    with pytest.raises(ValueError, match="without nulls"):
        concat_releasing([pa.array(["a", None])])
