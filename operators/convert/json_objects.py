"""JSON lines parsed in one pass, and the samples a parser worker makes of them: orjson and the standard library.

``lineage dedupe`` parses JSONL blocks in worker processes (:func:`operators.convert.operator._parsed`),
which import this module to run :func:`fast_samples`. It imports nothing but :mod:`json` and orjson (one
extension module): a worker's first answer (3,616 documents) came 0.10-0.12 s after it was spawned, against
0.31-0.35 s when it imported the convert operator's module (pyarrow, NumPy, pydantic).

* :func:`parse_line` gives a line's value exactly as ``json.loads`` does. orjson parses it first, in less
  than half the standard library's time (0.27 s against 0.62 s for 100,000 lines of the 254,724-document
  benchmark file). It refuses everything the standard library refuses (invalid UTF-8, raw control
  characters, trailing commas) and some things it accepts (``NaN`` and ``Infinity``, a lone surrogate, a
  float past the largest double); and it reads an integer past 64 bits as a float, where ``json.loads``
  keeps the int. So a line orjson refuses, or that holds a run of 19 digits anywhere, is parsed by the
  standard library's own JSON scanner instead, as every line was before. A line either takes starts with
  ``{``, ends with ``}``, is one object, nests too little to come near the recursion limit, and holds no
  lone surrogate. Every other line, good or bad, goes back to the per-record reader
  (:mod:`operators.convert.jsonl_blocks`).
* :func:`parse_objects` is :func:`parse_line` of every line of a block.
* :func:`fast_sample` is a taken line's (text, id value, ``meta``), exactly as the per-record path makes
  them; ``meta`` is :data:`META_ENCODER`'s serialisation, the one the per-record path uses, or None for a
  caller that keeps no ``meta`` (``meta=False``: serialising it was a third of a worker's parse).
* :func:`fast_columns` is what a worker makes of a block: the same values as columns of UTF-8 bytes and
  offsets (:class:`SampleColumns`), which reach the parent as a few buffers
  (:mod:`operators.convert.shared_blocks`) that it hands to Arrow without a copy, instead of two Python
  strings per sample that it then converted (its GIL is the sketcher's too).
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Callable
from itertools import accumulate
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any, NamedTuple

import orjson

from operators.sample_ids import sample_id, sample_key_from_id, sample_key_from_position

# a line with at least this many "{" and "[" goes to the per-record reader: the standard library's
# parser and encoder fail near the recursion limit (about 1000 levels), at a depth that depends on
# the caller's stack, so only the per-record reader may decide such a line
_MAX_BRACKETS = 200
# orjson reads an integer past 64 bits as a float, json.loads as an int: a line with a run of 19 digits
# anywhere (in a string too: a cheap test that never takes a line it should not) is not orjson's. Found
# as "0" * 19 in the line with every digit made "0" and every other byte a space: 0.09 s per 100,000
# lines of the benchmark file, where a regular expression took 0.64 s, more than orjson saves.
_DIGITS_AS_ZERO = bytes(ord("0") if chr(b).isdigit() and b < 128 else ord(" ") for b in range(256))
_LONG_NUMBER = b"0" * 19
# json.loads's own scanner: ``scan(s, 0)`` is (value, end) for the JSON value at the start of s
_SCAN = json.JSONDecoder().scan_once
# the encoder behind ``json.dumps(value, ensure_ascii=False)``, the reader's lone-surrogate check
_CHECK = json.JSONEncoder(ensure_ascii=False)


def parse_line(line: bytes) -> dict[str, Any] | None:
    """The line's object as ``json.loads`` gives it, when this pass takes the line (see the module
    docstring); None for a line the per-record reader must read."""
    if line[:1] != b"{" or line.count(b"{") + line.count(b"[") >= _MAX_BRACKETS:
        return None
    if line[-1:] == b"}" and _LONG_NUMBER not in line.translate(_DIGITS_AS_ZERO):
        try:
            return orjson.loads(line)  # one JSON value that starts with "{": an object
        except orjson.JSONDecodeError:
            pass  # refused, or accepted by json.loads only: the standard library decides
    try:
        s = line.decode("utf-8")
        value, end = _SCAN(s, 0)
    except Exception:  # noqa: BLE001 — any line the scanner refuses: the per-record reader says why
        return None
    if end != len(s) or ("\\u" in s and not _no_lone_surrogate(value)):
        return None
    return value


def parse_objects(lines: list[bytes]) -> tuple[list[int], list[dict[str, Any]]]:
    """(indices, objects): the lines :func:`parse_line` takes, in order, and their objects."""
    parsed = [parse_line(line) for line in lines]
    indices = [i for i, value in enumerate(parsed) if value is not None]
    return indices, [parsed[i] for i in indices]  # type: ignore[misc]


def _no_lone_surrogate(value: dict[str, Any]) -> bool:
    try:
        _CHECK.encode(value).encode("utf-8")
    except (UnicodeEncodeError, RecursionError):
        return False
    return True


# ``json.dumps(rest, ensure_ascii=False, default=str)``, the serialisation of ``meta``, with its encoder
# made once instead of per record (the same class and options, so the same bytes)
META_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)


def _meta_encoder() -> Callable[[dict], str]:
    """``META_ENCODER.encode`` for the block path: the same C encoder with the same options, made once
    (``encode`` makes it anew on every call, a third of the time for a small record), and without
    the circular-reference check, which values parsed from JSON never need."""
    if c_make_encoder is None:  # an interpreter without the C accelerator
        return META_ENCODER.encode
    m = META_ENCODER
    options = (m.indent, m.key_separator, m.item_separator, m.sort_keys, m.skipkeys, m.allow_nan)
    make = c_make_encoder(None, m.default, encode_basestring, *options)
    return lambda value: "".join(make(value, 0))


encode_meta = _meta_encoder()


def fast_sample(
    line: bytes, text_field: str, id_field: str | None, meta: bool = True
) -> tuple[str, object, str | None] | None:
    """(text, id value, meta) of a JSONL line that is a good sample, as the per-record path
    (:func:`operators.convert.readers.jsonl_record`, then the convert operator's ``_sample_fields``)
    makes it; None for every other line, which that path then reads. One call per line does it all,
    so each parsed record is freed at once: a block of live dicts kept the garbage collector busy (up
    to a tenth of the time)."""
    value = parse_line(line)
    if value is None:
        return None
    text = value.pop(text_field, None)
    if type(text) is not str or not text or text.isspace():  # ``not text.strip()``, without a copy
        return None
    key = None
    if id_field is not None:
        key = value.get(id_field)
        if key is None or key == "" or type(key) not in (str, int):
            return None
    try:
        return text, key, encode_meta(value) if value and meta else None
    except RecursionError:  # parse_line keeps deep nesting out; the per-record path says why
        return None


def fast_samples(
    lines: list[bytes], text_field: str, id_field: str | None, meta: bool = True
) -> list[tuple[str, object, str | None] | None]:
    """:func:`fast_sample` of every line of a block: the part of convert a parser process does."""
    return [fast_sample(line, text_field, id_field, meta) for line in lines]


class SampleColumns(NamedTuple):
    """:func:`fast_samples` of a block as columns. ``taken[i]`` is 1 when line ``i`` made a sample; the
    taken lines' texts and ``meta`` are UTF-8 ``text``/``meta`` cut at the int64 ``*_offsets`` (a missing
    ``meta``: empty, 0 in ``meta_valid``), their id values ``ids`` (None without an id field), and their
    sample ids."""

    taken: bytes
    ids: list[object] | None
    sample_ids: bytes  # the taken lines' sample ids, SAMPLE_ID_CHARS ASCII characters each
    text: bytes
    text_offsets: bytes
    meta: bytes
    meta_offsets: bytes
    meta_valid: bytes

    def samples(self) -> list[tuple[str, object, str | None] | None]:
        """The same values as :func:`fast_samples` gives them."""
        text_at, meta_at = array("q", self.text_offsets), array("q", self.meta_offsets)
        out: list[tuple[str, object, str | None] | None] = []
        k = 0
        for flag in self.taken:
            if not flag:
                out.append(None)
                continue
            text = self.text[text_at[k] : text_at[k + 1]].decode("utf-8")
            meta = self.meta[meta_at[k] : meta_at[k + 1]].decode("utf-8") if self.meta_valid[k] else None
            out.append((text, self.ids[k] if self.ids is not None else None, meta))
            k += 1
        return out


class BlockFields(NamedTuple):
    """What a parser makes of a file's blocks: the fields it reads, where the samples come from (for their
    ids), and whether ``meta`` is kept."""

    text_field: str
    id_field: str | None
    dataset: str
    path: str  # the file, relative to the dataset's root
    meta: bool = True


def fast_columns(lines: list[bytes], fields: BlockFields, first_row: int) -> SampleColumns:
    """:func:`fast_samples` of a block whose first line is row ``first_row`` of the file, as
    :class:`SampleColumns`: what a parser worker returns."""
    text_field, id_field, dataset, path, meta = fields
    taken = bytearray(len(lines))
    ids: list[object] | None = [] if id_field is not None else None
    sample_ids: list[str] = []
    texts: list[bytes] = []
    metas: list[bytes] = []
    valid = bytearray()
    for i, line in enumerate(lines):
        made = fast_sample(line, text_field, id_field, meta)
        if made is None:
            continue
        text, key, rest = made
        taken[i] = 1
        texts.append(text.encode("utf-8"))  # no lone surrogate: parse_line took the line
        metas.append(rest.encode("utf-8") if rest is not None else b"")
        valid.append(rest is not None)
        if ids is not None:
            ids.append(key)
            sample_ids.append(sample_id(dataset, sample_key_from_id(key)))
        else:
            sample_ids.append(sample_id(dataset, sample_key_from_position(path, first_row + i)))
    return SampleColumns(
        bytes(taken),
        ids,
        "".join(sample_ids).encode("ascii"),
        b"".join(texts),
        array("q", accumulate(map(len, texts), initial=0)).tobytes(),
        b"".join(metas),
        array("q", accumulate(map(len, metas), initial=0)).tobytes(),
        bytes(valid),
    )
