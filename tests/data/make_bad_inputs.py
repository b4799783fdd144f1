"""Builds the bad-input corpus that tests/operators/convert/test_bad_inputs.py converts.

The corpus is built at test time in a temporary folder (one case is a 20 MB line: nothing big is
committed). Every case is a folder of files in which good records surround the bad ones, and the
generator records what each record it wrote must become: a sample with its text, a quarantine row
with its reason, or a skipped blank line. For a damaged file (truncated or corrupt compression, a
corrupt Parquet footer) it records where the damage starts, worked out from the bytes it wrote.
So the test checks the convert operator against what was written, never against what it outputs.

Run by hand to look at the files: ``python tests/data/make_bad_inputs.py DIR``.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import zstandard

GOOD_BEFORE = "a good record before the bad one"
GOOD_AFTER = "a good record after the bad one"
HUGE = 20 * 1024 * 1024  # the "20 MB line": above the default 8 MiB max_record_bytes


@dataclass(frozen=True)
class Expect:
    """What convert must make of one record (row ``i`` of its file is ``records[i]``)."""

    text: str | None = None  # a sample with exactly this text
    reason: str | None = None  # a quarantine row with this reason
    blank: bool = False  # skipped and counted as a blank line

    @property
    def kind(self) -> str:
        return "sample" if self.text is not None else "blank" if self.blank else "quarantine"


def sample(text: str) -> Expect:
    return Expect(text=text)


def bad(reason: str) -> Expect:
    return Expect(reason=reason)


BLANK = Expect(blank=True)


@dataclass
class BadFile:
    name: str  # path inside the case folder
    records: list[Expect]
    damaged_at: int | None = None  # records from this row on are lost; one corrupt_file row at this row
    refused: bool = False  # a name the tier refuses: one invalid_file_name row, the file is not read


@dataclass
class Case:
    name: str  # the case's folder
    files: list[BadFile]
    params: dict[str, Any] = field(default_factory=dict)  # ConvertParams for the case


class _Corpus:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.cases: list[Case] = []

    def case(self, name: str, params: dict[str, Any] | None = None) -> Case:
        case = Case(name, [], params or {})
        self.cases.append(case)
        (self.root / name).mkdir(parents=True, exist_ok=True)
        return case

    def write(self, case: Case, name: str, data: bytes, records: list[Expect], **kw: Any) -> None:
        (self.root / case.name / name).write_bytes(data)
        case.files.append(BadFile(name, records, **kw))


def _line(record: dict[str, Any]) -> bytes:
    return json.dumps(record, ensure_ascii=False).encode()


def _around(lines: list[tuple[bytes, Expect]], newline: bytes = b"\n") -> tuple[bytes, list[Expect]]:
    """A JSONL file: a good record, the given lines, a good record."""
    first, last = (_line({"text": GOOD_BEFORE}), sample(GOOD_BEFORE)), (_line({"text": GOOD_AFTER}), sample(GOOD_AFTER))
    lines = [first, *lines, last]
    return b"".join(data + newline for data, _ in lines), [expect for _, expect in lines]


def _good_lines(n: int) -> tuple[bytes, list[Expect]]:
    texts = [f"record {i} of a longer file, padded so that it compresses into several blocks" for i in range(n)]
    return b"".join(_line({"text": t}) + b"\n" for t in texts), [sample(t) for t in texts]


def _jsonl_cases(c: _Corpus) -> None:
    case = c.case("jsonl")
    surrogates = [
        (b'{"text": "lone \\ud800 high surrogate"}', bad("invalid_unicode")),
        (b'{"text": "fine", "meta": "lone \\udc00 low surrogate"}', bad("invalid_unicode")),
        (b'{"text": "fine", "\\ud800key": 1}', bad("invalid_unicode")),
        (b'{"text": "reversed pair \\ude00\\ud83d"}', bad("invalid_unicode")),
        (b'{"text": "a real pair \\ud83d\\ude00"}', sample("a real pair \U0001f600")),
        (b'{"text": "an escaped backslash \\\\ud800 is text"}', sample("an escaped backslash \\ud800 is text")),
    ]
    c.write(case, "surrogates.jsonl", *_around(surrogates))
    deep = [
        (b'{"text": "x", "m": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", bad("nesting_too_deep")),
        (b'{"text": "x", "m": ' + b'{"a": ' * 100_000 + b"1" + b"}" * 100_000 + b"}", bad("nesting_too_deep")),
        (b'{"text": "nested but fine", "m": ' + b"[" * 50 + b"]" * 50 + b"}", sample("nested but fine")),
    ]
    c.write(case, "deep.jsonl", *_around(deep))
    broken = [
        (b'{"text": "unterminated', bad("invalid_json")),
        (b'{"text": "ok"} trailing', bad("invalid_json")),
        (b"{'text': 'single quotes'}", bad("invalid_json")),
        (b'{"text": "x", "n": 1' + b"0" * 5000 + b"}", bad("invalid_json")),  # above Python's int digit limit
        (b"}{", bad("invalid_json")),
    ]
    c.write(case, "broken.jsonl", *_around(broken))
    utf8 = [
        (b'{"text": "caf\xe9"}', bad("invalid_utf8")),
        (b'{"text": "overlong \xc0\xaf"}', bad("invalid_utf8")),
        (b'{"text": "encoded surrogate \xed\xa0\x80"}', bad("invalid_utf8")),
        (b'{"text": "cut \xe6\x97"}', bad("invalid_utf8")),
    ]
    c.write(case, "utf8.jsonl", *_around(utf8))
    nul = [
        (b'{"text": "raw \x00 NUL"}', bad("invalid_json")),
        (b"\x00\x00\x00", bad("invalid_json")),
        (b'{"text": "escaped \\u0000 NUL"}', sample("escaped \x00 NUL")),
    ]
    c.write(case, "nul.jsonl", *_around(nul))
    types = [
        (b'{"text": 42}', bad("text_not_string")),
        (b'{"text": 1.5}', bad("text_not_string")),
        (b'{"text": ["a", "b"]}', bad("text_not_string")),
        (b'{"text": {"nested": "x"}}', bad("text_not_string")),
        (b'{"text": null}', bad("text_not_string")),
        (b'{"text": true}', bad("text_not_string")),
        (b'{"text": ""}', bad("empty_text")),
        (b'{"text": " \\n\\t\\u3000 "}', bad("empty_text")),
        (b'{"title": "no text field"}', bad("missing_text_field")),
        (b"[1, 2]", bad("not_an_object")),
        (b'"a string"', bad("not_an_object")),
        (b"3", bad("not_an_object")),
        (b"null", bad("not_an_object")),
        (b"", BLANK),
        (b"   \t ", BLANK),
    ]
    c.write(case, "types.jsonl", *_around(types))
    data, records = _around([(_line({"text": "line ends are CRLF"}), sample("line ends are CRLF"))], newline=b"\r\n")
    c.write(case, "crlf.jsonl", data, records)
    data, records = _around([])
    c.write(case, "bom.jsonl", b"\xef\xbb\xbf" + data, records)
    huge = [(b'{"text": "' + b"x" * HUGE + b'"}', bad("record_too_large"))]
    c.write(case, "huge_line.jsonl", *_around(huge))
    c.write(case, "empty.jsonl", b"", [])

    ids = c.case("jsonl_ids", {"id_field": "id"})
    rows = [
        (_line({"id": "a", "text": "string id"}), sample("string id")),
        (_line({"id": 7, "text": "int id"}), sample("int id")),
        (_line({"text": "no id"}), bad("missing_id_field")),
        (_line({"id": "", "text": "empty id"}), bad("missing_id_field")),
        (_line({"id": [1], "text": "list id"}), bad("invalid_id")),
        (_line({"id": 1.5, "text": "float id"}), bad("invalid_id")),
        (_line({"id": True, "text": "bool id"}), bad("invalid_id")),
    ]
    data = b"".join(line + b"\n" for line, _ in rows)
    c.write(ids, "ids.jsonl", data, [expect for _, expect in rows])


def _text_cases(c: _Corpus) -> None:
    lines = c.case("text_lines", {"text_mode": "line"})
    data = b"\xef\xbb\xbffirst line\n\nbad \xff byte\n  \nlast line\n"
    c.write(lines, "lines.txt", data, [sample("first line"), BLANK, bad("invalid_utf8"), BLANK, sample("last line")])
    files = c.case("text_files")
    c.write(files, "bom.txt", b"\xef\xbb\xbfone document\n", [sample("one document\n")])
    c.write(files, "bad.txt", b"bad \xff bytes", [bad("invalid_utf8")])
    c.write(files, "empty.txt", b"", [bad("empty_text")])
    c.write(files, "huge.txt", b"y" * HUGE, [bad("record_too_large")])


def _csv(rows: list[list[str]], newline: str = "\n") -> bytes:
    out = io.StringIO()
    csv.writer(out, lineterminator=newline).writerows(rows)
    return out.getvalue().encode()


def _csv_cases(c: _Corpus) -> None:
    header = b"id,text,lang\n"
    before, after = b"1,%s,en\n" % GOOD_BEFORE.encode(), b"9,%s,en\n" % GOOD_AFTER.encode()

    def around(lines: list[tuple[bytes, Expect]]) -> tuple[bytes, list[Expect]]:
        rows = [(before, sample(GOOD_BEFORE)), *lines, (after, sample(GOOD_AFTER))]
        return header + b"".join(data for data, _ in rows), [expect for _, expect in rows]

    case = c.case("csv")
    big = "z" * 200_000
    c.write(case, "big_field.csv", *around([(b"2,%s,en\n" % big.encode(), sample(big))]))
    quotes = [
        (b'2,"never closed,en\n', bad("malformed_row")),
        (b"3,a row the open quote would swallow,en\n", sample("a row the open quote would swallow")),
        (b'4,"closed" then text,en\n', bad("malformed_row")),
        (b'5,"a ""quoted"" word",en\n', sample('a "quoted" word')),
        (b'6,"multi\nline",en\n', sample("multi\nline")),
        (b'7,mid"field quote,en\n', sample('mid"field quote')),  # lenient in every CSV dialect
    ]
    c.write(case, "quotes.csv", *around(quotes))
    c.write(case, "unclosed_at_end.csv", header + before + b'2,"never closed,en\n3,x,en\n', [
        sample(GOOD_BEFORE), bad("malformed_row"), sample("x")
    ])  # fmt: skip
    shapes = [
        (b"2,too,many,fields\n", bad("malformed_row")),
        (b"3,too few\n", bad("malformed_row")),
        (b"4,,en\n", bad("empty_text")),
        (b"\n", BLANK),
        (b"5,caf\xe9,fr\n", bad("invalid_utf8")),
        (b"6,nul \x00 inside,en\n", sample("nul \x00 inside")),
    ]
    c.write(case, "shapes.csv", *around(shapes))
    crlf = _csv([["id", "text", "lang"], ["1", "crlf row", "en"], ["2", "quoted\r\nnewline", "en"]], newline="\r\n")
    c.write(case, "crlf.csv", crlf, [sample("crlf row"), sample("quoted\r\nnewline")])
    c.write(case, "bom.csv", b"\xef\xbb\xbf" + header + before, [sample(GOOD_BEFORE)])
    c.write(case, "huge_line.csv", *around([(b"2," + b"h" * HUGE + b",en\n", bad("record_too_large"))]))
    c.write(case, "header_only.csv", header, [])
    c.write(case, "dup_header.csv", b"text,text\na,b\n", [sample("a or b?")], damaged_at=0)

    small = c.case("csv_small_limit", {"max_record_bytes": 100_000})
    c.write(small, "big_field.csv", *around([(b"2,%s,en\n" % big.encode(), bad("record_too_large"))]))
    quoted = _csv([["2", "multi\nline " * 20_000, "en"]])  # 240 KB over 20,000 lines, one record
    c.write(small, "big_quoted.csv", *around([(quoted, bad("record_too_large"))]))
    # an open quote that swallows more than the limit before the file ends: the rows after it are read again
    rows = [(b"%d,row after the open quote,en\n" % i, sample("row after the open quote")) for i in range(3, 8000)]
    c.write(small, "open_quote_past_limit.csv", *around([(b'2,"never closed,en\n', bad("malformed_row")), *rows]))


def _compressed_cases(c: _Corpus) -> None:
    case = c.case("compressed")
    data, records = _good_lines(2000)
    blob = gzip.compress(data)
    cut = blob[: len(blob) // 2]
    readable = zlib.decompressobj(wbits=31).decompress(cut)  # what any gzip reader can get back
    c.write(case, "truncated.jsonl.gz", cut, records, damaged_at=readable.count(b"\n"))
    c.write(case, "trailing_garbage.jsonl.gz", blob + b"not gzip", records, damaged_at=len(records))
    c.write(case, "plain_text.jsonl.gz", data, records, damaged_at=0)
    # three zstd frames; the third is overwritten with garbage, as a damaged disk block would be
    parts = [b"".join(data.splitlines(keepends=True)[i * 700 : (i + 1) * 700]) for i in range(3)]
    frames = [zstandard.ZstdCompressor(write_checksum=True).compress(p) for p in parts]
    corrupt = frames[0] + frames[1] + bytes(0xA5 for _ in frames[2])
    c.write(case, "corrupt.jsonl.zst", corrupt, records, damaged_at=parts[0].count(b"\n") + parts[1].count(b"\n"))
    c.write(case, "plain_text.jsonl.zst", data, records, damaged_at=0)
    data, records = _good_lines(20_000)  # several zstd blocks, so half the file holds whole ones
    zst = zstandard.ZstdCompressor().compress(data)
    readable = zstandard.ZstdDecompressor().decompressobj().decompress(zst[: len(zst) // 2])
    c.write(case, "truncated.jsonl.zst", zst[: len(zst) // 2], records, damaged_at=readable.count(b"\n"))


def _parquet_bytes(table: pa.Table, **kw: Any) -> bytes:
    out = io.BytesIO()
    pq.write_table(table, out, **kw)
    return out.getvalue()


def _parquet_cases(c: _Corpus) -> None:
    case = c.case("parquet")
    ints = pa.table({"text": pa.array([1, 2, None], pa.int64()), "score": [0.1, 0.2, 0.3]})
    c.write(case, "text_is_int.parquet", _parquet_bytes(ints), [bad("text_not_string")] * 3)
    texts = [f"parquet row {i}" for i in range(300)]
    good = _parquet_bytes(pa.table({"text": texts}), row_group_size=100)
    footer = len(good) - 8 - int.from_bytes(good[-8:-4], "little")  # where the footer (file metadata) starts
    damaged = good[:footer] + bytes(0xFF for _ in good[footer:-8]) + good[-8:]
    c.write(case, "corrupt_footer.parquet", damaged, [sample(t) for t in texts], damaged_at=0)
    c.write(case, "truncated.parquet", good[: len(good) // 2], [sample(t) for t in texts], damaged_at=0)
    meta = pq.ParquetFile(io.BytesIO(good)).metadata
    start = meta.row_group(2).column(0).data_page_offset  # the last row group's first page header
    damaged = good[:start] + bytes(0xFF for _ in range(16)) + good[start + 16 :]
    c.write(case, "corrupt_row_group.parquet", damaged, [sample(t) for t in texts], damaged_at=200)
    stamps = pa.table(
        {
            "text": ["before", "year 10000", "after"],
            "at": pa.array([0, 253_402_300_800, 1], pa.int64()).cast(pa.timestamp("s")),
        }
    )
    c.write(case, "timestamp_out_of_range.parquet", _parquet_bytes(stamps), [
        sample("before"), bad("invalid_value"), sample("after")
    ])  # fmt: skip


# Names: readable ones (URI-special characters are only escaped where a URI needs it) and names
# the tier refuses by design (control characters, a backslash), which must not stop the others.
READABLE_NAMES = ["50%.jsonl", "a#b.jsonl", "q?x=1.jsonl", "sp ace.jsonl", "日本語.jsonl", "%2e%2e.jsonl"]
REFUSED_NAMES = ["back\\slash.jsonl", "new\nline.jsonl", "tab\t.jsonl", "del\x7f.jsonl"]


def _name_cases(c: _Corpus) -> None:
    case = c.case("names")
    for name in READABLE_NAMES + ["plain.jsonl"]:
        rows = [f"{name} record 0", f"{name} record 1"]
        c.write(case, name, b"".join(_line({"text": t}) + b"\n" for t in rows), [sample(t) for t in rows])
    for name in REFUSED_NAMES:
        c.write(case, name, _line({"text": "never read"}) + b"\n", [bad("invalid_file_name")], refused=True)


def build(root: Path) -> list[Case]:
    """Write the corpus under ``root``; returns its cases with what every record must become."""
    corpus = _Corpus(root)
    for add in (_jsonl_cases, _text_cases, _csv_cases, _compressed_cases, _parquet_cases, _name_cases):
        add(corpus)
    return corpus.cases


if __name__ == "__main__":
    for built in build(Path(sys.argv[1])):
        for f in built.files:
            print(f"{built.name}/{f.name!r}: {len(f.records)} records, damaged at {f.damaged_at}")  # noqa: T201
