"""The spaCy-like tokenizer. Expected tokens are what spacy.blank("en") produces (checked with
benchmarks/tokenizer_parity.py), so a change in our rules shows up here."""

import pyarrow as pa
import pytest

from operators.quality.tokenize import code_points, tokenize

CASES = {
    "Hello, world! It's a test.": ["Hello", ",", "world", "!", "It", "'s", "a", "test", "."],
    "state-of-the-art libfoo-dev (e.g. 1.2.3) don't": [
        "state", "-", "of", "-", "the", "-", "art", "libfoo", "-", "dev",
        "(", "e.g.", "1.2.3", ")", "do", "n't",
    ],
    "See http://www.debian.org/foo-bar and /usr/bin/foo.": [
        "See", "http://www.debian.org/foo-bar", "and", "/usr", "/", "bin", "/", "foo", ".",
    ],
    "100% of 5MB... USA. ok?!": ["100", "%", "of", "5", "MB", "...", "USA", ".", "ok", "?", "!"],
    '"quoted" [1] x86_64 C++ e-mail: foo@bar.com': [
        '"', "quoted", '"', "[", "1", "]", "x86_64", "C++", "e", "-", "mail", ":", "foo@bar.com",
    ],
    "cannot U.S. A.B.": ["can", "not", "U.S.", "A.B."],
    "i.MX6 boards (see foo):": ["i.", "MX6", "boards", "(", "see", "foo", "):"],
    "from 9am to 5pm, havin' fun 12p.m.": [
        "from", "9", "am", "to", "5", "pm", ",", "havin'", "fun", "12", "p.m.",
    ],
    "URL:http://dev.example-site.org/wiki/Page": [
        "URL", ":", "http://dev.example", "-", "site.org", "/", "wiki", "/", "Page",
    ],
}  # fmt: skip


@pytest.mark.parametrize("text", list(CASES))
def test_matches_spacy_english_tokens(text):
    assert tokenize(pa.array([text])).texts(0) == CASES[text]


def test_batch_offsets_whitespace_and_unicode():
    texts = pa.array(["", "  \n\t ", "naïve café — 東京\nline", "x"])
    tokens = tokenize(texts)
    assert tokens.counts().tolist() == [0, 0, 5, 1]
    assert tokens.texts(2) == ["naïve", "café", "—", "東京", "line"]
    assert tokens.lengths[tokens.offsets[2] : tokens.offsets[3]].tolist() == [5, 4, 1, 2, 4]


def test_sliced_and_large_string_arrays():
    base = pa.array(["skip me", "keep this one", "and this"])
    assert tokenize(base.slice(1)).texts(0) == ["keep", "this", "one"]
    cps, offsets = code_points(base.cast(pa.large_string()).slice(2))
    assert "".join(map(chr, cps)) == "and this" and offsets.tolist() == [0, 8]
