import pyarrow as pa
import pytest

from operators.lineage_records import LINEAGE_SCHEMA
from operators.quality import C4Quality
from operators.quality.c4 import sentence_counts
from operators.quality.tokenize import tokenize
from operators.schema import content_hash
from tests.support.quality_samples import make_batch, rules_of, run

GOOD = [
    "This is the first good sentence.",
    "Here is another line that ends well!",
    "Is this the third proper line?",
    'The fourth line is quoted "properly."',
    "A fifth line closes the set.",
]


def test_clean_text_is_kept_unmodified():
    out, recs = run(C4Quality(), ["\n".join(GOOD)])
    assert recs[0]["verdict"] == "kept"
    assert recs[0]["detail"]["modification"] is None
    assert out.samples.column("text").to_pylist() == ["\n".join(GOOD)]


def test_line_removals_are_modifications_with_removed_lines():
    noisy = [
        "Navigation menu",  # no terminal punctuation
        GOOD[0],
        "Too short.",  # fewer than 3 words
        GOOD[1],
        "Please enable JavaScript to view this page.",
        GOOD[2],
        "This site uses cookies to improve things.",
        GOOD[3],
        "And it trails off into nothing...",
        "",
        "  " + GOOD[4] + "  ",
    ]
    original = "\n".join(noisy)
    out, recs = run(C4Quality(), [original])
    rec = recs[0]
    assert rec["verdict"] == "modified"
    assert rec["reason"] == "quality_c4:lines_removed"
    mod = rec["detail"]["modification"]
    assert mod["removed"] == [noisy[0], noisy[2], noisy[4], noisy[6], noisy[8]]
    assert mod["removed_count"] == 5
    new_text = "\n".join(GOOD)
    assert out.samples.column("text").to_pylist() == [new_text]
    assert mod["old_content_hash"] == content_hash(original)
    assert mod["new_content_hash"] == content_hash(new_text)
    assert out.samples.column("content_hash").to_pylist() == [content_hash(new_text)]
    assert out.lineage.schema == LINEAGE_SCHEMA


def test_citations_removed_and_long_words_drop_lines():
    lines = GOOD[:4] + ["A fifth line cites something.[1]", "This has " + "x" * 1001 + " in it."]
    out, recs = run(C4Quality(), ["\n".join(lines)])
    assert recs[0]["verdict"] == "modified"
    assert out.samples.column("text").to_pylist() == ["\n".join(GOOD[:4] + ["A fifth line cites something."])]
    assert recs[0]["detail"]["modification"]["removed"] == [lines[5]]


def test_max_word_length_at_threshold():
    at = "A line with a " + "x" * 1000 + " word."
    above = "A line with a " + "x" * 1001 + " word."
    out, recs = run(C4Quality(), ["\n".join(GOOD + [at]), "\n".join(GOOD + [above])])
    assert recs[0]["verdict"] == "kept"
    assert recs[1]["verdict"] == "modified"
    assert recs[1]["detail"]["modification"]["removed"] == [above]


def test_min_sentences_at_threshold():
    four = "\n".join(GOOD[:4])
    five_on_two_lines = "One sentence here. Two sentences here! Three now?\nFour is here. And five ends it."
    _, recs = run(C4Quality(), [four, "\n".join(GOOD), five_on_two_lines])
    assert [r["reason"] for r in recs] == ["quality_c4:min_num_sentences", None, None]
    assert rules_of(recs[0])["min_num_sentences"]["value"] == 4.0
    assert rules_of(recs[2])["min_num_sentences"]["value"] == 5.0


def test_lorem_ipsum_and_curly_bracket_drop_the_sample():
    lorem = "\n".join(GOOD + ["Lorem ipsum dolor sit amet."])
    curly = "\n".join(GOOD + ["Call it with { braces } please."])
    curly_in_removed_line = "\n".join(GOOD + ["code { here"])  # removed before the bracket check
    _, recs = run(C4Quality(), [lorem, curly, curly_in_removed_line])
    assert [r["reason"] for r in recs] == [
        "quality_c4:lorem_ipsum",
        "quality_c4:curly_bracket",
        "quality_c4:lines_removed",
    ]
    assert [r["verdict"] for r in recs] == ["dropped", "dropped", "modified"]


def test_switches_disable_rules():
    op = C4Quality({"filter_no_terminal_punct": False, "min_num_sentences": None, "filter_curly_bracket": False})
    out, recs = run(op, ["no punctuation at the end\nshort { line here"])
    assert recs[0]["verdict"] == "kept"
    assert set(rules_of(recs[0])) == {"lorem_ipsum"}
    with pytest.raises(ValueError, match="unknown parameter"):
        C4Quality({"split_paragraph": False})


def test_batch_mixes_verdicts_one_record_each():
    texts = ["\n".join(GOOD), "\n".join(GOOD + ["bad line"]), "nothing"]
    out = C4Quality().apply(make_batch(texts))
    assert out.lineage.column("verdict").to_pylist() == ["kept", "modified", "dropped"]
    assert out.samples.column("sample_id").to_pylist() == ["s0", "s1"]


@pytest.mark.parametrize(
    ("line", "sentences"),  # spaCy sentencizer counts
    [
        ("type, and a set of alerts.  .", 2),
        ("One. Two!  Three? (four) five", 4),
        ("Version 1.2. e.g. this.", 2),
    ],
)
def test_sentence_counts_match_spacy_sentencizer(line, sentences):
    assert sentence_counts(tokenize(pa.array([line]))).tolist() == [sentences]
