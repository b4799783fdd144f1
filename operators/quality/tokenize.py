"""Word tokens for a whole batch at once: an approximation of spaCy's blank English tokenizer.

datatrove splits English words with ``spacy.blank("en")``. Running spaCy is most of datatrove's
cost, so we re-implement its rules in one numba kernel over the batch's code points:

1. split on whitespace;
2. strip prefixes and suffixes in spaCy's alternating loop (punctuation, quotes, icons, currency;
   ``'s``; ellipses; a final ``.`` after a lowercase letter, digit, quote or punctuation, or after
   two capitals; units and currency after digits), stopping at special cases;
3. keep URL-like chunks whole, else split infixes (ellipses, icons, hyphens and ``:<>=/``
   between letters, ``,`` between letters, ``.`` between a lowercase and an uppercase letter,
   ``+-*^`` between digits);
4. merge adjacent pieces that spell a special case again (spaCy's special-case matcher).

spaCy's ~1,300 special cases are reduced to the ones that occur in ordinary English: common
abbreviations with periods, English contractions (``n't``, ``'re``, ``'ve``, ``'ll``; ``'d`` and
``'m`` after pronouns), clock times (``9am``), a few spellings (``cannot``, ``id``, ``and/or``,
``havin'``) and emoticons. operators/quality/README.md
reports how closely this matches spaCy and how often a keep/drop decision differs.

Tokens are (start, end) code-point positions into the batch's concatenated code points.

A pipeline's consecutive rule sets (Gopher repetition, then Gopher quality) tokenize the same texts,
the second only the first's survivors: those are selected from the first's tokens
(:mod:`operators.quality.token_reuse`, :meth:`Tokens.select`), not tokenized again.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numba
import numpy as np
import pyarrow as pa

from operators.quality import charclass as cc
from operators.quality import token_reuse
from operators.quality.text import utf8_buffers


def _words(text: str) -> list[str]:
    return text.split()


ABBREVIATIONS = _words(
    "e.g. i.e. E.g. I.e. E.G. I.E. a.m. p.m. vs. v.s. co. Co. Corp. Inc. Ltd. Bros. Dr. Mr. Mrs. Ms. "
    "Prof. Rev. Gen. Gov. Sen. Rep. St. Mt. Jr. Ph.D. D.C. N.Y. "
    "Jan. Feb. Mar. Apr. Jun. Jul. Aug. Sep. Sept. Oct. Nov. Dec."
) + [f"{c}." for c in "abcdefghijklmnopqrstuvwxyzäöü"]
EMOTICONS = _words(":) :-) :( :-( ;) ;-) :D :-D :P :p :-P :o :O :* :> 8) (= =) (: ): :/ <3 ^_^ o.O O.o")
# "'d" and "'m" are split off pronouns only ("GPL'd" stays one token, as in spaCy).
_PRONOUNS = _words("i you he she it we they who what where why how that there")
_PRONOUN_CONTRACTIONS = {
    f"{stem}{apostrophe}{suffix}": len(stem)
    for word in _PRONOUNS
    for stem in {word, word.capitalize()}
    for apostrophe in "'’"
    for suffix in (("d", "m") if word == "i" else ("d",))
}
# clock times split into number and "am"/"pm" (9am -> 9 am); dropped-g spellings stay whole
_CLOCK_TIMES = {f"{h}{m}": len(str(h)) for h in range(1, 13) for m in ("am", "pm", "a.m.", "p.m.")}
_DROPPED_G = [f"{w}{a}" for w in _words("doin goin havin nothin nuthin somethin lovin") for a in "'’"]
# special case -> length of its first token (0: the special case is one token)
SPECIAL_CASES: dict[str, int] = {
    **{w: 0 for w in ABBREVIATIONS + EMOTICONS + _DROPPED_G + ["and/or", "w/o", "ol'", "''", "'em", "'Em"]},
    **_CLOCK_TIMES,
    **{"cannot": 3, "Cannot": 3, "id": 1, "Id": 1, "im": 1, "Im": 1, "whats": 4, "Whats": 4},
    **_PRONOUN_CONTRACTIONS,
}

UNITS = _words(
    "km m dm cm mm ha nm yd in ft kg g mg t lb oz m/s km/h kmh mph hPa Pa mbar mb MB kb KB gb GB tb TB T G M K %"
)

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


@numba.njit(cache=True, nogil=True)
def span_hash(cps: np.ndarray, start: int, end: int) -> np.uint64:
    """FNV-1a over code points: equal strings, equal hashes (within and across batches)."""
    h = _FNV_OFFSET
    for i in range(start, end):
        h = (h ^ np.uint64(cps[i])) * _FNV_PRIME
    return h


def string_hash(text: str) -> np.uint64:
    return span_hash(np.array([ord(c) for c in text], dtype=np.uint32), 0, len(text))


_MAX_SPECIAL = 10  # longest special case, in characters


@cache
def _special_table() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Special cases as (sorted hashes, first-token lengths, a [length, first char] pre-filter)."""
    hashes = np.array([string_hash(w) for w in SPECIAL_CASES], dtype=np.uint64)
    order = np.argsort(hashes)
    starts = np.zeros((_MAX_SPECIAL + 1, 0x100), dtype=np.bool_)
    for w in SPECIAL_CASES:
        assert 2 <= len(w) <= _MAX_SPECIAL and ord(w[0]) < 0x100, w
        starts[len(w), ord(w[0])] = True
    return hashes[order], np.array(list(SPECIAL_CASES.values()), dtype=np.int64)[order], starts


@cache
def _units_table() -> tuple[np.ndarray, np.ndarray]:
    """Unit strings as a padded code-point matrix, longest first (a suffix regex alternation
    matches the leftmost, i.e. the longest, unit)."""
    units = sorted(UNITS, key=len, reverse=True)
    width = max(map(len, units))
    table = np.zeros((len(units), width), dtype=np.uint32)
    for i, u in enumerate(units):
        table[i, : len(u)] = [ord(c) for c in u]
    return table, np.array([len(u) for u in units], dtype=np.int64)


# ---------------------------------------------------------------------------------------------
# UTF-8 -> code points


@numba.njit(cache=True, nogil=True)
def _decode_utf8(data: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = len(offsets) - 1
    out = np.empty(max(offsets[n] - offsets[0], 0), dtype=np.uint32)
    doc_off = np.empty(n + 1, dtype=np.int64)
    k = 0
    for d in range(n):
        doc_off[d] = k
        i = offsets[d]
        end = offsets[d + 1]
        while i < end:
            b = data[i]
            if b < 0x80:
                cp = np.uint32(b)
                i += 1
            elif b < 0xE0:
                cp = (np.uint32(b & 0x1F) << 6) | np.uint32(data[i + 1] & 0x3F)
                i += 2
            elif b < 0xF0:
                cp = (np.uint32(b & 0x0F) << 12) | (np.uint32(data[i + 1] & 0x3F) << 6) | np.uint32(data[i + 2] & 0x3F)
                i += 3
            else:
                cp = (
                    (np.uint32(b & 0x07) << 18)
                    | (np.uint32(data[i + 1] & 0x3F) << 12)
                    | (np.uint32(data[i + 2] & 0x3F) << 6)
                    | np.uint32(data[i + 3] & 0x3F)
                )
                i += 4
            out[k] = cp
            k += 1
    doc_off[n] = k
    return out[:k], doc_off


def code_points(texts: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(code points of all texts concatenated, per-text offsets into them)."""
    offsets, data = utf8_buffers(texts.combine_chunks() if isinstance(texts, pa.ChunkedArray) else texts)
    if len(offsets) == 1:
        return np.zeros(0, np.uint32), offsets
    return _decode_utf8(data, offsets)


# ---------------------------------------------------------------------------------------------
# The tokenizer kernel


@numba.njit(cache=True, nogil=True)
def _has(flags: np.ndarray, cp: np.uint32, flag: int) -> bool:
    return (flags[cp] & flag) != 0


@numba.njit(cache=True, nogil=True)
def _special_split(cps, s, e, specials, splits, starts) -> int:
    """-1 if cps[s:e] is no special case, else the length of its first token (0: one token)."""
    if e - s < 2 or e - s > _MAX_SPECIAL or cps[s] >= 0x100 or not starts[e - s, cps[s]]:
        return -1
    h = span_hash(cps, s, e)
    i = np.searchsorted(specials, h)
    if i < len(specials) and specials[i] == h:
        return splits[i]
    return -1


@numba.njit(cache=True, nogil=True)
def _is_special(cps, s, e, specials, splits, starts) -> bool:
    return _special_split(cps, s, e, specials, splits, starts) >= 0


@numba.njit(cache=True, nogil=True)
def _contraction_split(cps, flags, s, e) -> int:
    """Length of a contraction suffix (n't, 're, 've, 'll) after letters, else 0. ('d and 'm
    are special cases of pronouns only.)"""
    n = e - s
    if n < 3:
        return 0
    last = cps[e - 1] | 32  # ASCII lowercase
    prev = cps[e - 2] | 32
    apostrophe2 = cps[e - 2] == 39 or cps[e - 2] == 0x2019
    if n >= 4 and last == 116 and apostrophe2 and (cps[e - 3] | 32) == 110:
        k = 3  # n't
    elif (cps[e - 3] == 39 or cps[e - 3] == 0x2019) and (
        (prev == 114 and last == 101) or (prev == 118 and last == 101) or (prev == 108 and last == 108)
    ):
        k = 3  # 're 've 'll
    else:
        return 0
    for i in range(s, e - k):
        if not _has(flags, cps[i], cc.ALPHA):
            return 0
    return k


@numba.njit(cache=True, nogil=True)
def _prefix_len(cps, flags, s, e) -> int:
    c = cps[s]
    if c == 46:  # "..+" ellipsis
        j = s
        while j < e and cps[j] == 46:
            j += 1
        return j - s if j - s >= 2 else 0
    if c == 43:  # "+" unless a digit follows
        return 1 if s + 1 >= e or not _has(flags, cps[s + 1], cc.DIGIT) else 0
    if _has(flags, c, cc.PREFIX):
        return 1
    return 0


@numba.njit(cache=True, nogil=True)
def _suffix_len(cps, flags, s, e, units, unit_lens) -> int:
    """Length of the leftmost-starting suffix match that ends at ``e`` (spaCy's suffix search)."""
    n = e - s
    if n == 0:
        return 0
    c = cps[e - 1]
    # Candidates that start further left win; check them from longest to shortest.
    if c == 46:
        j = e
        while j > s and cps[j - 1] == 46:
            j -= 1
        if e - j >= 2:
            return e - j
    if n >= 2 and (c == 115 or c == 83) and (cps[e - 2] == 39 or cps[e - 2] == 0x2019):
        return 2  # 's 'S ’s ’S
    # units / currency after a digit: the leftmost (longest) unit wins
    near_digit = False
    for i in range(max(s, e - unit_lens[0] - 1), e - 1):
        if _has(flags, cps[i], cc.DIGIT):
            near_digit = True
    for u in range(len(units) if near_digit else 0):
        k = unit_lens[u]
        if k < n and _has(flags, cps[e - k - 1], cc.DIGIT):
            match = True
            for t in range(k):
                if cps[e - k + t] != units[u, t]:
                    match = False
                    break
            if match:
                return k
    if _has(flags, c, cc.SUFFIX):
        return 1
    if n >= 2 and c == 43 and _has(flags, cps[e - 2], cc.DIGIT):
        return 1
    if n >= 2 and _has(flags, c, cc.CURRENCY) and _has(flags, cps[e - 2], cc.DIGIT):
        return 1
    if c == 46 and n >= 2:
        p = cps[e - 2]
        if _has(flags, p, cc.DIGIT | cc.LOWER | cc.QUOTE | cc.PUNCT) or p == 37 or p == 0xB2 or p == 45 or p == 43:
            return 1
        if n >= 3 and _has(flags, p, cc.UPPER) and _has(flags, cps[e - 3], cc.UPPER):
            return 1
    return 0


@numba.njit(cache=True, nogil=True)
def _is_url(cps, flags, s, e) -> bool:
    """A simplified version of spaCy's URL_MATCH: [scheme://][user@]label.(label.)*tld[:port][/...]."""
    i = s
    # scheme: [\w+\-.]{2,}://
    for j in range(s, e - 2):
        if cps[j] == 58 and cps[j + 1] == 47 and cps[j + 2] == 47:
            if j - s >= 2:
                i = j + 3
            break
        if not (
            _has(flags, cps[j], cc.ALPHA | cc.DIGIT) or cps[j] == 95 or cps[j] == 43 or cps[j] == 45 or cps[j] == 46
        ):
            break
    # user@
    for j in range(i, e):
        if cps[j] == 47:
            break
        if cps[j] == 64:
            i = j + 1
            break
    labels = 0
    label_len = 0
    tld_ok = True
    j = i
    while j < e:
        c = cps[j]
        if c == 46:
            if label_len == 0:
                return False
            labels += 1
            label_len = 0
            tld_ok = True
        elif _has(flags, c, cc.ALPHA | cc.DIGIT) or c == 95 or c == 45 or c >= 0xA1:
            label_len += 1
            if not _has(flags, c, cc.LOWER) or label_len > 63:
                tld_ok = False
        else:
            break
        j += 1
    if labels == 0 or label_len < 2 or not tld_ok:
        return False
    if j == e:
        return True
    if cps[j] == 58:
        k = j + 1
        while k < e and _has(flags, cps[k], cc.DIGIT):
            k += 1
        if k - j - 1 < 2 or k - j - 1 > 5:
            return False
        j = k
        if j == e:
            return True
    return cps[j] == 47 or cps[j] == 63 or cps[j] == 35


@numba.njit(cache=True, nogil=True)
def _all_letters(cps, flags, s, e) -> bool:
    for i in range(s, e):  # noqa: SIM110 (numba cannot compile a generator)
        if not _has(flags, cps[i], cc.ALPHA):
            return False
    return True


@numba.njit(cache=True, nogil=True)
def _any_infix_char(cps, flags, s, e) -> bool:
    for i in range(s, e):  # noqa: SIM110 (numba cannot compile a generator)
        if _has(flags, cps[i], cc.INFIX):
            return True
    return False


@numba.njit(cache=True, nogil=True)
def _infix_end(cps, flags, s, e, i) -> int:
    """End of an infix match starting at ``i`` (``i`` if none), in spaCy's alternation order."""
    c = cps[i]
    if c == 46 and i + 1 < e and cps[i + 1] == 46:
        j = i
        while j < e and cps[j] == 46:
            j += 1
        return j
    if c == 0x2026 or _has(flags, c, cc.ICON):
        return i + 1
    if i == s or i + 1 >= e:
        return i
    p = cps[i - 1]
    nx = cps[i + 1]
    digit_op = (c == 43 or c == 45 or c == 42 or c == 94) and _has(flags, p, cc.DIGIT)
    if digit_op and (_has(flags, nx, cc.DIGIT) or nx == 45):
        return i + 1
    if c == 46 and _has(flags, p, cc.LOWER | cc.QUOTE) and _has(flags, nx, cc.UPPER | cc.QUOTE):
        return i + 1
    if c == 44 and _has(flags, p, cc.ALPHA) and _has(flags, nx, cc.ALPHA):
        return i + 1
    if _has(flags, p, cc.ALPHA | cc.DIGIT):
        if c == 45:
            j = i
            while j < e and j - i < 3 and cps[j] == 45:
                j += 1
                if j < e and _has(flags, cps[j], cc.ALPHA):
                    return j
            return i
        if c == 0x2013 or c == 0x2014 or c == 126:
            if _has(flags, nx, cc.ALPHA):
                return i + 1
            if c == 0x2014 and nx == 0x2014 and i + 2 < e and _has(flags, cps[i + 2], cc.ALPHA):
                return i + 2
            return i
        if (c == 58 or c == 60 or c == 62 or c == 61 or c == 47) and _has(flags, nx, cc.ALPHA):
            return i + 1
    return i


@numba.njit(cache=True, nogil=True)
def _emit(starts, ends, k, a, b) -> int:
    starts[k] = a
    ends[k] = b
    return k + 1


@numba.njit(cache=True, nogil=True)
def _tokenize_chunk(
    cps, flags, specials, splits, sp_starts, units, unit_lens, s, e, starts, ends, k, suf_s, suf_e
) -> int:
    """spaCy's _split_affixes + _attach_tokens for one whitespace-delimited chunk."""
    if _all_letters(cps, flags, s, e) and not _is_special(cps, s, e, specials, splits, sp_starts):
        return _emit(starts, ends, k, s, e)  # fast path: most chunks are plain words
    n_suf = 0
    special = _is_special(cps, s, e, specials, splits, sp_starts)
    while s < e and not special:
        size = e - s
        pre = _prefix_len(cps, flags, s, e)
        if pre and s + pre < e and _is_special(cps, s + pre, e, specials, splits, sp_starts):
            k = _emit(starts, ends, k, s, s + pre)
            s += pre
            special = True
            break
        suf = _suffix_len(cps, flags, s + pre, e, units, unit_lens)
        if suf and e - suf > s and _is_special(cps, s, e - suf, specials, splits, sp_starts):
            suf_s[n_suf] = e - suf
            suf_e[n_suf] = e
            n_suf += 1
            e -= suf
            special = True
            break
        if pre and suf and pre + suf <= size:
            k = _emit(starts, ends, k, s, s + pre)
            suf_s[n_suf] = e - suf
            suf_e[n_suf] = e
            n_suf += 1
            s += pre
            e -= suf
        elif pre:
            k = _emit(starts, ends, k, s, s + pre)
            s += pre
        elif suf:
            suf_s[n_suf] = e - suf
            suf_e[n_suf] = e
            n_suf += 1
            e -= suf
        if s < e and _is_special(cps, s, e, specials, splits, sp_starts):
            special = True
            break
        if e - s == size:
            break
    if s < e:
        contraction = 0 if special else _contraction_split(cps, flags, s, e)
        if special:
            first = _special_split(cps, s, e, specials, splits, sp_starts)
            if first > 0:
                k = _emit(starts, ends, k, s, s + first)
                k = _emit(starts, ends, k, s + first, e)
            else:
                k = _emit(starts, ends, k, s, e)
        elif contraction:
            k = _emit(starts, ends, k, s, e - contraction)
            k = _emit(starts, ends, k, e - contraction, e)
        elif not _any_infix_char(cps, flags, s, e) or _is_url(cps, flags, s, e):
            # a plain word (no "." for a URL, nothing to split) or a URL: one token
            k = _emit(starts, ends, k, s, e)
        else:
            start = s
            i = s
            while i < e:
                if not _has(flags, cps[i], cc.INFIX):
                    i += 1
                    continue
                j = _infix_end(cps, flags, s, e, i)
                if j == i:
                    i += 1
                    continue
                if i != start:
                    k = _emit(starts, ends, k, start, i)
                    k = _emit(starts, ends, k, i, j)
                    start = j
                i = j
            if start < e:
                k = _emit(starts, ends, k, start, e)
    for t in range(n_suf - 1, -1, -1):
        k = _emit(starts, ends, k, suf_s[t], suf_e[t])
    return k


@numba.njit(cache=True, nogil=True)
def _merge_specials(cps, specials, splits, sp_starts, starts, ends, first, k) -> int:
    """spaCy's special-case matcher: adjacent tokens of one chunk that spell a special case
    (``i`` + ``.``, ``)`` + ``:``) become one token again. Returns the new token count."""
    w = first
    t = first
    while t < k:
        span = 0
        for size in (3, 2):
            if t + size <= k and _special_split(cps, starts[t], ends[t + size - 1], specials, splits, sp_starts) == 0:
                span = size
                break
        if span:
            starts[w] = starts[t]
            ends[w] = ends[t + span - 1]
            t += span
        else:
            starts[w] = starts[t]
            ends[w] = ends[t]
            t += 1
        w += 1
    return w


@numba.njit(cache=True, nogil=True)
def _tokenize(cps, doc_off, flags, specials, splits, sp_starts, units, unit_lens):
    n_docs = len(doc_off) - 1
    starts = np.empty(len(cps) + 1, dtype=np.int64)
    ends = np.empty(len(cps) + 1, dtype=np.int64)
    tok_off = np.empty(n_docs + 1, dtype=np.int64)
    suf_s = np.empty(len(cps) + 1, dtype=np.int64)
    suf_e = np.empty(len(cps) + 1, dtype=np.int64)
    k = 0
    for d in range(n_docs):
        tok_off[d] = k
        i = doc_off[d]
        end = doc_off[d + 1]
        while i < end:
            while i < end and _has(flags, cps[i], cc.SPACE):
                i += 1
            j = i
            while j < end and not _has(flags, cps[j], cc.SPACE):
                j += 1
            if j > i:
                first = k
                k = _tokenize_chunk(
                    cps,
                    flags,
                    specials,
                    splits,
                    sp_starts,
                    units,
                    unit_lens,
                    i,
                    j,
                    starts,
                    ends,
                    k,
                    suf_s,
                    suf_e,
                )
                if k - first > 1:
                    k = _merge_specials(cps, specials, splits, sp_starts, starts, ends, first, k)
            i = j
    tok_off[n_docs] = k
    return starts[:k], ends[:k], tok_off


@dataclass(frozen=True)
class Tokens:
    """Words of a batch: ``starts``/``ends`` index ``cps``; sample ``d`` owns tokens
    ``offsets[d]:offsets[d+1]`` and code points ``cp_offsets[d]:cp_offsets[d+1]``."""

    cps: np.ndarray
    cp_offsets: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    offsets: np.ndarray

    @property
    def lengths(self) -> np.ndarray:
        return self.ends - self.starts

    @property
    def doc_index(self) -> np.ndarray:
        """Sample index of every token."""
        n = len(self.offsets) - 1
        return np.repeat(np.arange(n), np.diff(self.offsets))

    def counts(self, mask: np.ndarray | None = None) -> np.ndarray:
        """Tokens per sample (only those where ``mask`` is true, if given)."""
        n = len(self.offsets) - 1
        if mask is None:
            return np.diff(self.offsets)
        return np.bincount(self.doc_index, weights=mask, minlength=n).astype(np.int64)

    def any_char(self, flag: int) -> np.ndarray:
        """Per token: does any of its characters have ``flag`` (a charclass bit)?"""
        return flag_counts(self.cps, self.starts, self.ends, cc.flag_table(), flag) > 0

    def all_chars(self, flag: int) -> np.ndarray:
        """Per token: do all of its characters have ``flag``?"""
        return flag_counts(self.cps, self.starts, self.ends, cc.flag_table(), flag) == self.lengths

    def hashes(self) -> np.ndarray:
        return _token_hashes(self.cps, self.starts, self.ends)

    def select(self, rows: np.ndarray) -> Tokens:
        """The tokens of samples ``rows`` (ascending), as tokenizing those samples' texts alone gives them."""
        per_doc_cps, per_doc_tokens = np.diff(self.cp_offsets), np.diff(self.offsets)
        keep = np.zeros(len(per_doc_cps), dtype=bool)
        keep[rows] = True
        # each kept sample's code points move down by those of the dropped samples before it
        shift = np.cumsum(np.where(keep, 0, per_doc_cps)) - np.where(keep, 0, per_doc_cps)
        token_keep = np.repeat(keep, per_doc_tokens)
        token_shift = np.repeat(shift, per_doc_tokens)[token_keep]
        return Tokens(
            cps=self.cps[np.repeat(keep, per_doc_cps)],
            cp_offsets=np.concatenate([[0], np.cumsum(per_doc_cps[rows])]).astype(self.cp_offsets.dtype),
            starts=self.starts[token_keep] - token_shift,
            ends=self.ends[token_keep] - token_shift,
            offsets=np.concatenate([[0], np.cumsum(per_doc_tokens[rows])]).astype(self.offsets.dtype),
        )

    def texts(self, doc: int) -> list[str]:
        """The tokens of one sample as strings (for tests and debugging)."""
        a, b = self.offsets[doc], self.offsets[doc + 1]
        return ["".join(map(chr, self.cps[s:e])) for s, e in zip(self.starts[a:b], self.ends[a:b], strict=True)]


@numba.njit(cache=True, nogil=True)
def flag_counts(cps, starts, ends, flags, flag):
    """Per span ``[starts[t], ends[t])`` of ``cps``: how many code points have ``flag`` in the table ``flags``."""
    out = np.zeros(len(starts), dtype=np.int64)
    for t in range(len(starts)):
        c = 0
        for i in range(starts[t], ends[t]):
            if flags[cps[i]] & flag:
                c += 1
        out[t] = c
    return out


@numba.njit(cache=True, nogil=True)
def _token_hashes(cps, starts, ends):
    out = np.empty(len(starts), dtype=np.uint64)
    for t in range(len(starts)):
        out[t] = span_hash(cps, starts[t], ends[t])
    return out


def tokenize(texts: pa.Array) -> Tokens:
    """spaCy-like English word tokens of every text in the batch."""
    known = token_reuse.known(texts)
    if isinstance(known, Tokens):
        return known
    tokens = _tokenized(texts)
    token_reuse.remember(texts, tokens)
    return tokens


def _tokenized(texts: pa.Array) -> Tokens:
    cps, cp_offsets = code_points(texts)
    units, unit_lens = _units_table()
    specials, splits, special_starts = _special_table()
    starts, ends, offsets = _tokenize(
        cps, cp_offsets, cc.flag_table(), specials, splits, special_starts, units, unit_lens
    )
    return Tokens(cps, cp_offsets, starts, ends, offsets)
