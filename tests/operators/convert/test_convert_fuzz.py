"""Fuzzing the convert operator (hypothesis): random bytes and random JSON values per field.

The invariants are the README's: no exception escapes convert; every record of a file is exactly
one of a sample, a quarantine row with a known reason, or a counted blank line; a record that
is valid comes out as a sample with the text and other fields that were written.
"""

from __future__ import annotations

import csv
import io
import json
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from operators.convert.readers import _csv_condenser
from tests.support.convert_harness import convert
from tests.support.json_strategies import any_char, json_values, strings

REASONS = {
    "invalid_json",
    "invalid_utf8",
    "invalid_unicode",
    "nesting_too_deep",
    "not_an_object",
    "missing_text_field",
    "text_not_string",
    "empty_text",
    "record_too_large",
    "malformed_row",
}
LIMIT = 300  # max_record_bytes: small, so oversized records are common
FUZZ = settings(
    max_examples=120,
    deadline=timedelta(seconds=3),  # one example converts one small file; generous for a loaded 2-core CI box
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)

fields = st.dictionaries(st.sampled_from(["lang", "meta"]) | strings, json_values, max_size=3)
records = st.one_of(
    st.builds(lambda text, rest: {"text": text, **rest}, st.lists(any_char, max_size=40).map("".join), fields),
    st.builds(lambda text, rest: {"text": text, **rest}, json_values, fields),
    fields,  # often without a text field
)
json_line = st.tuples(st.just("json"), records, st.booleans())  # (kind, record, ensure_ascii)
bytes_line = st.tuples(st.just("bytes"), st.binary(max_size=80).map(lambda b: b.replace(b"\n", b" ")), st.none())


def _convert_file(name: str, data: bytes, **params: Any) -> tuple[list[dict], list[dict], int]:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / name).write_bytes(data)
        samples, _, quarantine, stats = convert(Path(tmp), name, max_record_bytes=LIMIT, **params)
    return samples.to_pylist(), quarantine.to_pylist(), stats.get("blank_lines", 0)


def _has_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return any("\ud800" <= ch <= "\udfff" for ch in value)
    if isinstance(value, list):
        return any(_has_surrogate(v) for v in value)
    if isinstance(value, dict):
        return any(_has_surrogate(k) or _has_surrogate(v) for k, v in value.items())
    return False


def _expected(record: dict[str, Any]) -> tuple[str, Any]:
    """("sample", (text, rest)) or ("quarantine", reason) for a record that parsed."""
    if _has_surrogate(record):
        return "quarantine", "invalid_unicode"
    if "text" not in record:
        return "quarantine", "missing_text_field"
    rest = dict(record)
    text = rest.pop("text")
    if not isinstance(text, str):
        return "quarantine", "text_not_string"
    if not text.strip():
        return "quarantine", "empty_text"
    return "sample", (text, rest)


def _partition(samples: list[dict], quarantine: list[dict], blanks: int, n: int) -> tuple[dict, dict]:
    """Every row 0..n-1 is exactly one of: a sample, a quarantine row, a blank line."""
    by_sample = {s["source_row"]: s for s in samples}
    by_bad = {q["source_row"]: q for q in quarantine}
    assert len(by_sample) == len(samples) and len(by_bad) == len(quarantine), "a row was output twice"
    assert not set(by_sample) & set(by_bad), "a row is both a sample and quarantined"
    assert set(by_sample) | set(by_bad) <= set(range(n)), "rows that were never written"
    assert len(samples) + len(quarantine) + blanks == n, "records in != samples + quarantined + blank"
    for q in quarantine:
        assert q["reason"] in REASONS and q["message"], q
    return by_sample, by_bad


@FUZZ
@given(lines=st.lists(json_line | bytes_line, max_size=12), final_newline=st.booleans())
def test_jsonl_fuzz(lines: list[tuple[str, Any, bool | None]], final_newline: bool) -> None:
    encoded = []
    for kind, value, ensure_ascii in lines:
        if kind == "json":
            text = json.dumps(value, ensure_ascii=bool(ensure_ascii))
            encoded.append(text.encode("utf-8", "surrogatepass"))  # a surrogate written raw is invalid UTF-8
        else:
            encoded.append(value)
    data = b"".join(line + b"\n" for line in encoded)
    if not final_newline and encoded and encoded[-1]:
        data = data[:-1]
    samples, quarantine, blanks = _convert_file("f.jsonl", data)
    by_sample, by_bad = _partition(samples, quarantine, blanks, len(encoded))
    for row, ((kind, value, ensure_ascii), line) in enumerate(zip(lines, encoded, strict=True)):
        content = line.removeprefix(b"\xef\xbb\xbf") if row == 0 else line
        if len(line) > LIMIT:
            assert by_bad[row]["reason"] == "record_too_large"
        elif not content.rstrip(b"\r").strip():
            assert row not in by_sample and row not in by_bad, "a blank line is skipped, not output"
        elif kind == "json":
            if not ensure_ascii and _has_surrogate(value):
                expected: tuple[str, Any] = ("quarantine", "invalid_utf8")
            else:
                expected = _expected(json.loads(line))
            if expected[0] == "quarantine":
                assert row in by_bad and by_bad[row]["reason"] == expected[1], (line, by_bad.get(row))
            else:
                text, rest = expected[1]
                got = by_sample[row]
                assert got["text"] == text
                assert got["meta"] == (json.dumps(rest, ensure_ascii=False) if rest else None)
        elif row in by_sample:  # random bytes that happen to form a valid record
            assert by_sample[row]["text"] == json.loads(content)["text"]


def _csv_rows(rows: list[list[str]], newline: str, quoting: int) -> list[bytes]:
    out = []
    for row in rows:
        buf = io.StringIO()
        csv.writer(buf, lineterminator=newline, quoting=quoting).writerow(row)
        out.append(buf.getvalue().encode("utf-8", "surrogateescape"))  # '\udcff' becomes the byte 0xff
    return out


utf8_char = st.characters(codec="utf-8")  # no surrogates: csv.writer writes str, the file is UTF-8
csv_text = st.text(st.sampled_from('ab ,"\n\r\x00é漢') | utf8_char, max_size=30) | st.text(utf8_char, max_size=400)
csv_row = st.one_of(
    st.tuples(st.integers(0, 99).map(str), csv_text, st.sampled_from(["en", "", "a,b"])).map(list),
    st.lists(csv_text, min_size=2, max_size=2),  # too few fields
    st.lists(csv_text, min_size=4, max_size=5),  # too many fields
    st.tuples(st.just("1"), csv_text.map(lambda t: t + "\udcff"), st.just("en")).map(list),  # invalid UTF-8
)


@FUZZ
@given(
    rows=st.lists(csv_row, max_size=10),
    newline=st.sampled_from(["\n", "\r\n"]),
    quoting=st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL]),
)
def test_csv_fuzz(rows: list[list[str]], newline: str, quoting: int) -> None:
    if quoting == csv.QUOTE_MINIMAL and newline == "\n":
        # csv.writer then leaves a bare CR unquoted, which no reader can tell from a line end
        rows = [[field.replace("\r", "") for field in row] for row in rows]
    encoded = _csv_rows(rows, newline, quoting)
    data = b"id,text,lang" + newline.encode() + b"".join(encoded)
    samples, quarantine, blanks = _convert_file("f.csv", data, text_field="text")
    by_sample, by_bad = _partition(samples, quarantine, blanks, len(rows))
    assert blanks == 0
    for row, (fields, line) in enumerate(zip(rows, encoded, strict=True)):
        if len(line) > LIMIT:
            reason = "record_too_large"
        elif len(fields) != 3:
            reason = "malformed_row"
        elif any("\udcff" in f for f in fields):
            reason = "invalid_utf8"
        elif not fields[1].strip():
            reason = "empty_text"
        else:
            got = by_sample[row]
            assert (got["text"], json.loads(got["meta"])) == (fields[1], {"id": fields[0], "lang": fields[2]})
            continue
        assert by_bad[row]["reason"] == reason, (line, by_bad.get(row))


csv_noise = st.lists(st.sampled_from(['"', '""', ",", "\n", "\r\n", "\r", "a", "bc d", "x" * 200, "\udcff", "é"]))


@FUZZ
@given(parts=csv_noise)
def test_csv_noise_never_escapes_and_accounts_for_every_row(parts: list[str]) -> None:
    """Random CSV-shaped bytes: no exception, and the rows out are exactly rows 0..n-1 once each."""
    data = b"id,text\n" + "".join(parts).encode("utf-8", "surrogateescape")
    samples, quarantine, blanks = _convert_file("f.csv", data)
    n = len(samples) + len(quarantine) + blanks
    _partition(samples, quarantine, blanks, n)


structural = st.lists(st.sampled_from(['"', ",", "a", "bb", " ", "\r", '""', ",,"]), max_size=14).map("".join)


def _csv_events(lines: list[str]) -> list[tuple[str, int]]:
    """Where csv.reader (strict) ends each record or fails, as (event, lines consumed so far)."""
    source = iter(lines)
    reader = csv.reader(source, strict=True)
    events = []
    while True:
        try:
            next(reader)
            events.append(("record", reader.line_num))
        except StopIteration:
            return events
        except csv.Error:
            events.append(("error", reader.line_num))


@settings(max_examples=400, deadline=None, database=None)
@given(lines=st.lists(structural.map(lambda s: s + "\n"), max_size=6))
def test_condensed_lines_end_and_fail_where_the_real_ones_do(lines: list[str]) -> None:
    """The claim the CSV reader's bounded memory rests on (operators/convert/readers.py)."""
    condense = _csv_condenser(",")
    assert _csv_events([condense(line) for line in lines]) == _csv_events(lines)
