import pytest

from operators.quality import FineWebQuality
from tests.support.quality_samples import rules_of, run


def line(i: int, end: str = ".") -> str:
    return f"This is line number {i} with enough words in it{end}"  # > 30 characters


def test_clean_text_kept():
    _, recs = run(FineWebQuality(), ["\n".join(line(i) for i in range(5))])
    assert recs[0]["verdict"] == "kept"
    assert rules_of(recs[0])["line_punct_ratio"]["value"] == 1.0


def test_line_punct_ratio_threshold_and_exclude_zero():
    def doc(punct_lines: int, total: int = 25) -> str:
        return "\n".join(line(i, "." if i < punct_lines else "") for i in range(total))

    _, recs = run(FineWebQuality(), [doc(3), doc(2), doc(0)])  # 0.12, 0.08, 0
    assert [r["reason"] for r in recs] == [None, "quality_fineweb:line_punct_ratio", "quality_fineweb:line_punct_ratio"]
    _, recs = run(FineWebQuality({"line_punct_exclude_zero": True}), [doc(0)])
    assert recs[0]["verdict"] == "kept"


def test_short_line_ratio():
    def doc(short: int) -> str:
        return "\n".join([f"Short {i}." for i in range(short)] + [line(i) for i in range(100 - short)])

    _, recs = run(FineWebQuality({"char_duplicates_ratio": None, "new_line_ratio": None}), [doc(67), doc(68)])
    assert [r["reason"] for r in recs] == [None, "quality_fineweb:short_line_ratio"]


def test_char_duplicates_ratio():
    lines = [line(i) for i in range(200)]
    text = "\n".join(lines + [lines[0]])
    _, recs = run(FineWebQuality(), [text, "\n".join(lines + lines[:3])])
    value = rules_of(recs[0])["char_dup_ratio"]["value"]
    assert value == pytest.approx(len(lines[0]) / len(text.replace("\n", "")))
    assert recs[0]["verdict"] == "kept"  # ~0.005
    assert recs[1]["reason"] == "quality_fineweb:char_dup_ratio"


def test_list_ratio_and_empty():
    listy = "\n".join(f"Item {i} here." for i in range(40))  # 40 lines, 4 words each: 39/160 newlines per word
    very_listy = "\n".join(f"Item{i}." for i in range(40))
    _, recs = run(FineWebQuality({"short_line_thr": None}), [listy, very_listy, "  \n \n"])
    assert recs[0]["verdict"] == "kept"
    assert rules_of(recs[0])["list_ratio"]["value"] == pytest.approx(39 / 160)
    assert recs[1]["reason"] == "quality_fineweb:list_ratio"
    assert recs[2]["reason"] == "quality_fineweb:empty"
