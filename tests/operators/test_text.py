import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from operators.schema import content_hash
from operators.text import normalize_for_hash


def test_normalisation_is_nfkc_and_whitespace_collapse() -> None:
    texts = pa.array(["\u3000Ｆｕｌｌ\u00a0width\t\n text \u2028 end  ", "ﬁle", "a\u200bb"])
    assert normalize_for_hash(texts).to_pylist() == ["Full width text end", "file", "a\u200bb"]


def test_whitespace_set_matches_python_isspace() -> None:
    spaces = "".join(chr(c) for c in range(0x3001) if chr(c).isspace())
    assert normalize_for_hash(pa.array([f"a{spaces}b"])).to_pylist() == ["a b"]
    assert content_hash(f"a{spaces}b") == content_hash("a b")
    assert content_hash("a b") != content_hash("ab")


SPACES = [chr(c) for c in range(0x3001) if chr(c).isspace()]


@settings(max_examples=300, database=None)
@given(st.lists(st.sampled_from(SPACES) | st.sampled_from(["a", "é", "漢", " ", "  "]), max_size=30).map("".join))
def test_collapsing_only_the_runs_that_change_gives_every_run_collapsed(text: str) -> None:
    """normalize_for_hash replaces only runs of two or more or of one non-space character: the same
    text as collapsing every run of Python whitespace to one space and stripping the ends."""
    expected = " ".join(text.split())  # str.split(): runs of str.isspace() characters
    assert normalize_for_hash(pa.array([text])).to_pylist() == [expected]
