"""JSON lines parsed in one pass, and the samples a parser worker makes of them: the standard library alone.

``lineage dedupe`` parses JSONL blocks in worker processes (:func:`operators.convert.operator._parsed`),
which import this module to run :func:`fast_samples`. It imports nothing but :mod:`json`: a worker's first
answer (3,616 documents) came 0.10-0.12 s after it was spawned, against 0.31-0.35 s when it imported the
convert operator's module (pyarrow, NumPy, pydantic).

* :func:`parse_objects` parses a block's lines with the standard library's own JSON scanner (so a value
  is exactly what ``json.loads`` gives), one list comprehension per block. A line it takes starts with
  ``{``, decodes as UTF-8, is one object with nothing after it, nests too little to come near the
  recursion limit, and (only checked when it holds a ``\\u`` escape) holds no lone surrogate. Every
  other line, good or bad, goes back to the per-record reader (:mod:`operators.convert.jsonl_blocks`).
* :func:`fast_sample` is a taken line's (text, id value, ``meta``), exactly as the per-record path makes
  them; ``meta`` is :data:`META_ENCODER`'s serialisation, the one the per-record path uses.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any

# a line with at least this many "{" and "[" goes to the per-record reader: the standard library's
# parser and encoder fail near the recursion limit (about 1000 levels), at a depth that depends on
# the caller's stack, so only the per-record reader may decide such a line
_MAX_BRACKETS = 200
# json.loads's own scanner: ``scan(s, 0)`` is (value, end) for the JSON value at the start of s
_SCAN = json.JSONDecoder().scan_once
# the encoder behind ``json.dumps(value, ensure_ascii=False)``, the reader's lone-surrogate check
_CHECK = json.JSONEncoder(ensure_ascii=False)


def parse_line(line: bytes) -> dict[str, Any] | None:
    """The line's object as ``json.loads`` gives it, when this pass takes the line (see the module
    docstring); None for a line the per-record reader must read."""
    try:
        s = line.decode("utf-8")
        if s[:1] != "{" or s.count("{") + s.count("[") >= _MAX_BRACKETS:
            return None
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


def fast_sample(line: bytes, text_field: str, id_field: str | None) -> tuple[str, object, str | None] | None:
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
        return text, key, encode_meta(value) if value else None
    except RecursionError:  # parse_line keeps deep nesting out; the per-record path says why
        return None


def fast_samples(
    lines: list[bytes], text_field: str, id_field: str | None
) -> list[tuple[str, object, str | None] | None]:
    """:func:`fast_sample` of every line of a block: the part of convert a parser process does."""
    return [fast_sample(line, text_field, id_field) for line in lines]
