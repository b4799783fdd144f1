import pytest

from operators.quality import GopherQuality, GopherRepetition, quality_operator
from tests.support.quality_samples import rules_of, run


def words(n: int, start: int = 0) -> list[str]:
    """``n`` distinct 6-letter words; the first two are the stop words "the" and "and"."""
    return (["the", "and"] + [f"wd{i:04d}" for i in range(start, start + n)])[:n]


def text(n: int, **extra: str) -> str:
    return " ".join(words(n))


def verdicts(op, texts):
    return [(r["verdict"], r["reason"]) for r in run(op, texts)[1]]


def test_word_count_bounds_count_non_symbol_words():
    op = GopherQuality({"max_doc_words": 60})
    symbols = " - - ( ) ,"  # symbol words do not count
    results = verdicts(op, [text(49) + symbols, text(50), text(60), text(61)])
    assert results == [
        ("dropped", "quality_gopher:min_doc_words"),
        ("kept", None),
        ("kept", None),
        ("dropped", "quality_gopher:max_doc_words"),
    ]
    rules = rules_of(run(op, [text(49) + symbols])[1][0])
    assert rules["min_doc_words"]["value"] == 49.0


def test_mean_word_length():
    short = " ".join(["the", "and"] + ["ab"] * 80)  # mean (3+3+160)/82 ~ 2.02
    long = " ".join(["the", "and"] + [f"abcdefghijk{i}" for i in range(80)])
    _, recs = run(GopherQuality(), [short, long, text(80)])
    assert [r["reason"] for r in recs] == [
        "quality_gopher:min_avg_word_length",
        "quality_gopher:max_avg_word_length",
        None,
    ]
    assert rules_of(recs[2])["min_avg_word_length"]["value"] == pytest.approx((6 + 78 * 6) / 80)


def test_hash_and_ellipsis_ratios_at_threshold():
    at = " ".join(words(90) + ["#"] * 10)  # 10 of 100 words
    above = " ".join(words(89) + ["#"] * 11)
    ellipsis = " ".join(words(88) + ["…"] * 12)
    _, recs = run(GopherQuality({"min_alpha_words_ratio": None}), [at, above, ellipsis])
    assert [r["reason"] for r in recs] == [None, "quality_gopher:hash_ratio", "quality_gopher:ellipsis_ratio"]
    assert rules_of(recs[0])["hash_ratio"]["value"] == pytest.approx(0.1)


def test_bullet_and_ellipsis_lines():
    def lines(bullets: int, ellipses: int) -> str:
        out = []
        for i in range(10):
            line = " ".join(words(10, start=10 * i))
            if i < bullets:
                line = "  - " + line if i % 2 else "• " + line
            if i >= 10 - ellipses:
                line += " ..."
            out.append(line)
        return "\n".join(out)

    _, recs = run(GopherQuality({"max_symbol_word_ratio": None}), [lines(9, 0), lines(10, 0), lines(0, 3), lines(0, 4)])
    assert [r["reason"] for r in recs] == [
        None,
        "quality_gopher:bullet_lines_ratio",
        None,
        "quality_gopher:ellipsis_lines_ratio",
    ]
    assert rules_of(recs[1])["bullet_lines_ratio"]["value"] == 1.0


def test_alpha_words_ratio():
    ok = " ".join(words(80) + ["123"] * 20)  # 80 of 100 words have a letter
    bad = " ".join(words(79) + ["123"] * 21)
    _, recs = run(GopherQuality(), [ok, bad])
    assert [r["reason"] for r in recs] == [None, "quality_gopher:alpha_words_ratio"]


def test_stop_words_distinct_and_case_sensitive():
    one = " ".join(["the", "the", "The", "AND"] + words(60)[2:])
    two = " ".join(["the", "with"] + words(60)[2:])
    _, recs = run(GopherQuality(), [one, two])
    assert recs[0]["reason"] == "quality_gopher:min_stop_words"
    assert rules_of(recs[0])["min_stop_words"]["value"] == 1.0
    assert recs[1]["verdict"] == "kept"
    custom = GopherQuality({"stop_words": ["wd0002", "wd0003"], "min_stop_words": 2})
    assert run(custom, [text(60)])[1][0]["verdict"] == "kept"


def test_repetition_lines_and_paragraphs():
    para = [" ".join(words(12, start=12 * i)) for i in range(10)]
    dup_lines = "\n".join(para[:7] + para[:3])  # 3 of 10 lines repeat: 0.3 by count
    dup_paras = "\n\n".join(para[:6] + para[:4])  # 4 of 10 paragraphs repeat
    op = GopherRepetition(
        {"dup_line_char_frac": None, "dup_para_char_frac": None, "top_n_grams": (), "dup_n_grams": ()}
    )
    _, recs = run(op, [dup_lines, dup_paras])
    assert rules_of(recs[0])["dup_line_frac"]["value"] == pytest.approx(0.3)
    assert recs[0]["verdict"] == "kept"
    assert recs[1]["reason"] == "quality_gopher_repetition:dup_para_frac"
    assert rules_of(recs[1])["dup_para_frac"]["value"] == pytest.approx(0.4)


def test_repetition_duplicate_line_chars():
    unique = [" ".join(words(12, start=12 * i)) for i in range(10)]
    text_ = "\n".join(unique + [unique[0]] * 3)  # 3 repeated lines of 12 words
    _, recs = run(GopherRepetition({"dup_line_frac": None, "top_n_grams": (), "dup_n_grams": ()}), [text_])
    value = rules_of(recs[0])["dup_line_char_frac"]["value"]
    assert value == pytest.approx(3 * len(unique[0]) / len(text_))
    assert recs[0]["reason"] == "quality_gopher_repetition:dup_line_char_frac"


def test_top_ngram_share_at_and_around_threshold():
    filler = " ".join(f"w{i:03d}" for i in range(47))
    text_ = " ".join(["ab cd"] * 12) + " " + filler  # "ab cd" x 12: 60 characters
    share = 60 / len(text_)

    def verdict(threshold: float) -> str:
        op = GopherRepetition({"top_n_grams": ((2, threshold),), "dup_n_grams": ()})
        record = run(op, [text_])[1][0]
        assert rules_of(record)["top_2_gram"]["value"] == pytest.approx(share)
        return record["verdict"]

    assert verdict(share) == "kept"
    assert verdict(share - 1e-6) == "dropped"


def test_duplicated_ngrams_scan_at_and_around_threshold():
    block = " ".join(f"w{i}" for i in range(5))  # 5 words, 10 characters without spaces
    text_ = block + " " + block + " tail words here"
    share = 10 / len(text_)  # the second copy repeats; the scan then jumps past it

    def verdict(threshold: float) -> str:
        op = GopherRepetition({"top_n_grams": (), "dup_n_grams": ((5, threshold),)})
        record = run(op, [text_])[1][0]
        assert rules_of(record)["duplicated_5_n_grams"]["value"] == pytest.approx(share)
        return record["verdict"]

    assert verdict(share) == "kept"
    assert verdict(share - 1e-6) == "dropped"


def test_too_few_words_for_ngrams_is_not_applicable():
    rules = rules_of(run(GopherRepetition(), ["one"])[1][0])
    assert rules["top_2_gram"]["value"] is None and rules["top_2_gram"]["passed"] is True
    assert rules["duplicated_5_n_grams"]["value"] == 0.0


def test_params_refused_and_pairs_normalised():
    with pytest.raises(ValueError, match="unknown parameter"):
        quality_operator("quality_gopher_repetition", {"dup_line_fraction": 0.1})
    op = quality_operator("quality_gopher_repetition", {"top_n_grams": [[2, 0.3]]})
    assert op.params.top_n_grams == ((2, 0.3),)
