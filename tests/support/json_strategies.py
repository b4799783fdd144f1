"""Hypothesis strategies for JSON values that stress convert: lone surrogates, characters JSON
escapes, brackets, integers past 64 bits, every float (NaN and infinities included)."""

from __future__ import annotations

from hypothesis import strategies as st

# any character, lone surrogates often, and the ones JSON escapes. (Lists, not st.text: a union of
# character strategies is merged into one code point range, where surrogates are rare.)
any_char = st.one_of(st.characters(codec="utf-8"), st.characters(categories=["Cs"]), st.sampled_from('"\\\n\r\x00 {['))
strings = st.lists(any_char, max_size=12).map("".join)
scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | strings
json_values = st.recursive(
    scalars, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(strings, kids, max_size=3), max_leaves=8
)
