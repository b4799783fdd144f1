import dataclasses

import pyarrow as pa
import pytest

from operators.quality import OPERATORS, DefaultParams, DefaultQuality, quality_operator
from operators.schema import SAMPLE_SCHEMA
from tests.support.quality_samples import make_batch, rules_of, run


def sentence_words(n: int) -> str:
    """``n`` distinct words of length 5 on one line."""
    return " ".join(f"w{i:04d}" for i in range(n))


def test_word_bounds_at_and_around_threshold():
    op = DefaultQuality({"min_words": 50, "max_words": 60})
    out, recs = run(op, [sentence_words(49), sentence_words(50), sentence_words(60), sentence_words(61)])
    assert [r["verdict"] for r in recs] == ["dropped", "kept", "kept", "dropped"]
    assert recs[0]["reason"] == "quality:min_words"
    assert recs[3]["reason"] == "quality:max_words"
    assert recs[1]["reason"] is None
    assert out.samples.column("sample_id").to_pylist() == ["s1", "s2"]
    assert out.samples.schema == SAMPLE_SCHEMA


def test_every_rule_recorded_with_value_threshold_and_verdict():
    _, recs = run(DefaultQuality(), [sentence_words(49)])
    rules = rules_of(recs[0])
    assert list(rules) == [
        "min_words",
        "max_words",
        "min_cjk_chars",
        "max_cjk_chars",
        "min_mean_word_length",
        "max_mean_word_length",
        "hash_ratio",
        "ellipsis_ratio",
        "duplicate_line_fraction",
    ]
    assert rules["min_words"] == {
        "rule_set": "quality",
        "rule": "min_words",
        "value": 49.0,
        "threshold": 50.0,
        "comparison": ">=",
        "passed": False,
    }
    assert rules["max_words"]["passed"] is True
    assert rules["min_cjk_chars"]["value"] is None  # not applicable to English text
    assert rules["min_mean_word_length"]["value"] == pytest.approx(5.0)


def test_mean_word_length_bounds():
    short = " ".join(["ab"] * 60)
    long = " ".join([f"abcdefghij{i}" for i in range(60)])
    ok = " ".join([f"abc{i:02d}" for i in range(60)])
    _, recs = run(DefaultQuality(), [short, long, ok])
    assert [r["reason"] for r in recs] == [
        "quality:min_mean_word_length",
        "quality:max_mean_word_length",
        None,
    ]


def test_symbol_ratios_at_threshold():
    base = [f"w{i:04d}" for i in range(100)]
    at = " ".join(base[:90] + ["#"] * 10)  # 10 / 100 words = 0.1, allowed
    above = " ".join(base[:89] + ["#"] * 11)
    ellipsis = " ".join(base[:88] + ["…"] * 6 + ["..."] * 6)
    _, recs = run(DefaultQuality({"min_mean_word_length": None}), [at, above, ellipsis])
    assert [r["reason"] for r in recs] == [None, "quality:hash_ratio", "quality:ellipsis_ratio"]
    assert rules_of(recs[0])["hash_ratio"]["value"] == pytest.approx(0.1)


def test_duplicate_line_fraction():
    unique = [sentence_words(10) + f" line{i}" for i in range(10)]
    three_dups = unique[:7] + [unique[0]] * 3  # 3 of 10 lines repeat an earlier one: 0.3
    four_dups = unique[:6] + [unique[0]] * 4
    _, recs = run(DefaultQuality(), ["\n".join(three_dups), "\n".join(four_dups)])
    assert rules_of(recs[0])["duplicate_line_fraction"]["value"] == pytest.approx(0.3)
    assert [r["reason"] for r in recs] == [None, "quality:duplicate_line_fraction"]


def test_chinese_length_counted_in_characters():
    zh = "这是一个用于测试的中文句子，内容没有重复。"  # 21 characters, 1 whitespace word
    long_zh = "\n".join(f"第{i}行：{zh}" for i in range(6))
    _, recs = run(DefaultQuality(), [zh, long_zh])
    assert recs[0]["reason"] == "quality:min_cjk_chars"
    assert rules_of(recs[0])["min_cjk_chars"]["value"] == 21.0
    assert rules_of(recs[0])["min_words"]["value"] is None
    assert recs[1]["verdict"] == "kept"
    assert rules_of(recs[1])["min_mean_word_length"]["value"] is None


def test_cjk_ratio_rule_only_in_cjk_mode():
    english = sentence_words(120)
    op = DefaultQuality({"language": "cjk", "min_cjk_chars": 10})
    _, recs = run(op, [english, "中文内容" * 10])
    assert recs[0]["reason"] == "quality:min_cjk_ratio"
    assert rules_of(recs[1])["min_cjk_ratio"]["value"] == pytest.approx(1.0)
    assert "min_cjk_ratio" not in rules_of(run(DefaultQuality(), [english])[1][0])


def test_params_configurable_and_unknown_refused():
    op = quality_operator("quality", {"min_words": 10})
    assert op.params.min_words == 10
    assert op.describe()["params"]["min_words"] == 10
    assert OPERATORS["quality"] is DefaultQuality
    assert DefaultQuality.name == "quality"
    with pytest.raises(ValueError, match="unknown parameter"):
        DefaultQuality({"min_wordz": 10})
    with pytest.raises(ValueError, match="language"):
        DefaultParams(language="klingon")
    with pytest.raises(dataclasses.FrozenInstanceError):
        op.params.min_words = 3  # type: ignore[misc]


def test_disabled_rule_is_not_evaluated():
    _, recs = run(DefaultQuality({"min_words": None}), [sentence_words(5)])
    assert recs[0]["verdict"] == "kept"
    assert "min_words" not in rules_of(recs[0])


def test_sliced_batch_and_empty_batch():
    batch = make_batch([sentence_words(10), sentence_words(60), sentence_words(70)]).slice(1)
    out = DefaultQuality().apply(batch)
    assert out.lineage.column("sample_id").to_pylist() == ["s1", "s2"]
    assert out.lineage.column("verdict").to_pylist() == ["kept", "kept"]
    empty = DefaultQuality().apply(make_batch([]))
    assert empty.lineage.num_rows == 0 and empty.samples.num_rows == 0
    assert isinstance(empty.samples, pa.RecordBatch)


def test_blank_text_dropped_for_length_and_other_rules_not_applicable():
    _, recs = run(DefaultQuality(), ["", "  \n\t "])
    for rec in recs:
        assert rec["reason"] == "quality:min_words"
        rules = rules_of(rec)
        assert rules["min_words"]["value"] == 0.0
        assert rules["hash_ratio"]["value"] is None and rules["hash_ratio"]["passed"] is True


def test_language_space_measures_chinese_in_words():
    zh = "这是一个用于测试的中文句子，内容没有重复。"
    _, recs = run(DefaultQuality({"language": "space"}), [zh])
    rules = rules_of(recs[0])
    assert recs[0]["reason"] == "quality:min_words"
    assert rules["min_words"]["value"] == 1.0
    assert rules["min_cjk_chars"]["value"] is None
