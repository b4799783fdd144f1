import pytest

from operators.quality import ChineseQuality, DefaultQuality
from tests.support.quality_samples import rules_of, run

SENTENCES = [
    "数据质量决定了模型的上限。",
    "我们从公开网页收集中文文本。",
    "每条样本都记录来源和处理步骤。",
    "重复的段落会被识别并删除。",
    "过短的文档通常没有足够的信息。",
    "标点符号和特殊字符需要统计比例。",
    "清洗规则的阈值都可以配置。",
    "发布之前要检查数据分布的变化。",
    "这个软件包提供命令行工具和图形界面。",
]


def chinese(n_sentences: int) -> str:
    return "\n".join(SENTENCES[i % len(SENTENCES)] + f"第{i}条。" for i in range(n_sentences))


def test_clean_chinese_text_kept_and_measured_in_characters():
    text = chinese(9)
    _, recs = run(ChineseQuality(), [text])
    rules = rules_of(recs[0])
    assert recs[0]["verdict"] == "kept"
    assert rules["min_chars"]["value"] == len(text.replace("\n", ""))
    assert rules["min_cjk_ratio"]["value"] > 0.8
    assert 0.1 < rules["punctuation_ratio"]["value"] < 0.2


def test_min_chars_at_threshold():
    op = ChineseQuality({"min_chars": 30})
    _, recs = run(op, ["中" * 29, "中文" * 15])
    assert recs[0]["reason"] == "quality_zh:min_chars"
    assert rules_of(recs[1])["min_chars"] | {"rule_set": None} == {
        "rule_set": None,
        "rule": "min_chars",
        "value": 30.0,
        "threshold": 30.0,
        "comparison": ">=",
        "passed": True,
    }


def test_cjk_ratio_drops_non_chinese_text():
    english = "This package provides the command line tools for managing things. " * 4
    mixed = "本软件包提供 GNU/Linux 的命令行工具 (command line tools)，支持多种格式。" * 3
    _, recs = run(ChineseQuality(), [english, mixed])
    assert recs[0]["reason"] == "quality_zh:min_cjk_ratio"
    assert recs[1]["verdict"] == "kept"


def test_duplicate_lines():
    lines = [s + f"第{i}条。" for i, s in enumerate(SENTENCES)]
    text = "\n".join(lines[:7] + lines[:3])  # 3 of 10 lines repeat
    dup = "\n".join(lines[:6] + lines[:4])
    op = ChineseQuality({"max_duplicate_line_char_fraction": None, "max_char_repetition": None})
    _, recs = run(op, [text, dup])
    assert rules_of(recs[0])["duplicate_line_fraction"]["value"] == pytest.approx(0.3)
    assert [r["reason"] for r in recs] == [None, "quality_zh:duplicate_line_fraction"]


def test_character_ngram_repetition():
    repetitive = "哈" * 150 + chinese(2)  # one 10-gram holds most of the text
    _, recs = run(ChineseQuality(), [repetitive, chinese(9)])
    assert recs[0]["reason"] == "quality_zh:char_repetition"
    assert rules_of(recs[0])["char_repetition"]["value"] > 0.5
    assert rules_of(recs[1])["char_repetition"]["value"] < 0.1


def test_punctuation_and_symbol_ratios():
    punct = "数据质量，，，！！！" * 10
    symbols = "价格￥＄€＋＝＜＞数据质量" * 12
    op = ChineseQuality({"max_char_repetition": None, "max_duplicate_line_fraction": None})
    _, recs = run(op, [punct, symbols])
    assert [r["reason"] for r in recs] == ["quality_zh:punctuation_ratio", "quality_zh:symbol_ratio"]


def test_default_rule_set_is_chinese_aware():
    _, recs = run(DefaultQuality(), [chinese(9), "中文" * 20])
    assert recs[0]["verdict"] == "kept"
    assert rules_of(recs[0])["min_words"]["value"] is None
    assert recs[1]["reason"] == "quality:min_cjk_chars"
