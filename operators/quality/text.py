"""Vectorised text measurements over Arrow string arrays (pyarrow compute + numpy).

Every function takes a whole column and returns one numpy value per sample, so rule sets never
loop over documents in Python. Regexes are RE2 (pyarrow), which knows Unicode scripts such as
``\\p{Han}``. Lengths are in Unicode code points, like Python's ``len(str)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

CJK_CHARS = r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}]"
# Python's str.isspace() set; RE2's \s alone is ASCII-only.
WHITESPACE = r"[\s\x0b\x1c-\x1f\x{85}\p{Z}]"
NON_WHITESPACE = r"[^\s\x0b\x1c-\x1f\x{85}\p{Z}]"
# Python's str.splitlines() boundaries.
LINE_BREAKS = r"\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x{85}\x{2028}\x{2029}]"


def as_array(texts: pa.Array | pa.ChunkedArray) -> pa.Array:
    return texts.combine_chunks() if isinstance(texts, pa.ChunkedArray) else texts


def utf8_buffers(texts: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(per-text byte offsets, int64, ``len + 1`` of them; the UTF-8 bytes they index) of a string array,
    without a copy of the bytes."""
    if texts.type == pa.string():
        off_type: type = np.int32
    elif texts.type == pa.large_string():
        off_type = np.int64
    else:
        raise TypeError(f"expected a string array, got {texts.type}")
    n = len(texts)
    _, off_buf, data_buf = texts.buffers()
    if n == 0:
        return np.zeros(1, np.int64), np.zeros(0, np.uint8)
    offsets = np.frombuffer(off_buf, dtype=off_type)[texts.offset : texts.offset + n + 1].astype(np.int64)
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    return offsets, data


def to_numpy(values: pa.Array | pa.ChunkedArray, dtype: type = np.int64) -> np.ndarray:
    return np.asarray(values.to_numpy(zero_copy_only=False), dtype=dtype)


def char_counts(texts: pa.Array) -> np.ndarray:
    return to_numpy(pc.utf8_length(texts))


def count_regex(texts: pa.Array, pattern: str) -> np.ndarray:
    """Non-overlapping matches of an RE2 pattern per text."""
    return to_numpy(pc.count_substring_regex(texts, pattern))


def count_literal(texts: pa.Array, literal: str) -> np.ndarray:
    """Non-overlapping occurrences of ``literal`` per text (like ``str.count``)."""
    return to_numpy(pc.count_substring(texts, literal))


def ends_with_any(values: pa.Array, suffixes: tuple[str, ...]) -> np.ndarray:
    """``str.endswith(suffixes)`` per value; one set lookup of the last character when every
    suffix is a single character (the default)."""
    if all(len(x) == 1 for x in suffixes):
        last = pc.utf8_slice_codeunits(values, start=-1)
        return to_numpy(pc.is_in(last, value_set=pa.array(suffixes, pa.string())), bool)
    hit = np.zeros(len(values), dtype=bool)
    for suffix in suffixes:
        hit |= to_numpy(pc.ends_with(values, suffix), bool)
    return hit


def non_space_chars(texts: pa.Array) -> np.ndarray:
    return char_counts(texts) - count_regex(texts, WHITESPACE)


def whitespace_word_counts(texts: pa.Array) -> np.ndarray:
    """Number of words as ``str.split()`` sees them: maximal runs of non-whitespace."""
    return count_regex(texts, NON_WHITESPACE + "+")


def splitlines(texts: pa.Array) -> pa.ListArray:
    """``str.splitlines()`` of every text: no trailing empty line after a final line break."""
    parts = pc.split_pattern_regex(texts, LINE_BREAKS)
    offsets = to_numpy(parts.offsets)
    flat = parts.values.slice(offsets[0], offsets[-1] - offsets[0])
    lengths = to_numpy(pc.utf8_length(flat))
    last = offsets[1:] - offsets[0] - 1
    nonempty = offsets[1:] > offsets[:-1]
    keep = np.ones(len(flat), dtype=bool)
    drop = last[nonempty & (lengths[np.maximum(last, 0)] == 0)] if len(flat) else last[:0]
    keep[drop] = False
    parents = np.repeat(np.arange(len(texts)), np.diff(offsets))
    return regroup(flat.filter(pa.array(keep)), parents[keep], len(texts))


def list_lengths(lists: pa.Array) -> np.ndarray:
    return to_numpy(pc.list_value_length(lists).fill_null(0))


def nonblank_lines(texts: pa.Array) -> pa.ListArray:
    """Lines split on ``\\n``, trailing whitespace removed, blank lines left out."""
    lines = pc.split_pattern(texts, "\n")
    flat = pc.utf8_rtrim_whitespace(lines.flatten())
    keep = pc.greater(pc.utf8_length(flat), 0)
    parents = pc.list_parent_indices(lines)
    return regroup(flat.filter(keep), to_numpy(parents.filter(keep)), len(texts))


def regroup(values: pa.Array, parents: np.ndarray, n: int) -> pa.ListArray:
    """Rebuild a list array from flat values and their (sorted) parent indices."""
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(parents, minlength=n), out=offsets[1:])
    return pa.LargeListArray.from_arrays(pa.array(offsets), values).cast(pa.list_(values.type))


@dataclass(frozen=True)
class DuplicateStats:
    """Per sample: how many items (lines, paragraphs, ...), how many repeat an earlier item of the
    same sample, and how many characters those repeats hold. Matches the "first occurrence is
    unique, every later copy is a duplicate" counting of Gopher (Rae et al. 2021)."""

    items: np.ndarray
    duplicates: np.ndarray
    duplicate_chars: np.ndarray


def duplicate_stats(lists: pa.ListArray) -> DuplicateStats:
    n = len(lists)
    flat = lists.flatten()
    if len(flat) == 0:
        zeros = np.zeros(n, dtype=np.int64)
        return DuplicateStats(zeros, zeros.copy(), zeros.copy())
    parents = to_numpy(pc.list_parent_indices(lists))
    codes = to_numpy(pc.dictionary_encode(flat).indices)
    lengths = to_numpy(pc.utf8_length(flat))
    key = parents * (int(codes.max()) + 1) + codes
    _, first = np.unique(key, return_index=True)  # stable: index of each item's first copy
    is_dup = np.ones(len(key), dtype=bool)
    is_dup[first] = False
    return DuplicateStats(
        items=np.bincount(parents, minlength=n),
        duplicates=np.bincount(parents, weights=is_dup, minlength=n).astype(np.int64),
        duplicate_chars=np.bincount(parents, weights=is_dup * lengths, minlength=n).astype(np.int64),
    )
