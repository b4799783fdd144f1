"""The block path for JSONL (operators/convert/jsonl_blocks.py) against the per-record reader.

The per-record path is the reference: on the bundled corpora, the bad-input corpus and random
files, both paths give the same samples (every column, byte for byte: ids, texts, ``meta``,
offsets), the same lineage, the same quarantine rows (reason, message, raw bytes, row, offset)
and the same stats. Small pieces and blocks put every line end, oversized line and damage on a
piece or block boundary somewhere.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from operators.convert import json_objects, jsonl_blocks
from operators.convert.json_objects import BlockFields
from operators.convert.operator import _INLINE_BLOCKS, _parsed
from operators.convert.readers import ReadOptions
from operators.schema import sample_id, sample_key_from_id, sample_key_from_position
from storage.tier import local_tier
from tests.data.make_bad_inputs import build
from tests.support.convert_harness import convert
from tests.support.json_strategies import json_values, strings

DATA = Path(__file__).resolve().parents[3] / "examples" / "data"


def assert_same(root: Path, pattern: str, processes: int = 0, here: bool = True, **params: Any) -> pa.Table:
    """Convert with both paths and compare everything; returns the samples."""
    old = convert(root, pattern, blocks=False, **params)
    new = convert(root, pattern, blocks=True, processes=processes, here=here, **params)
    for name, a, b in zip(("samples", "lineage", "quarantine"), old[:3], new[:3], strict=True):
        assert a.schema == b.schema, name
        for column in a.column_names:
            assert a.column(column).combine_chunks().equals(b.column(column).combine_chunks()), (pattern, name, column)
    assert old[3] == new[3], "stats"
    return new[0]


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("debian_en.jsonl.gz", {}),
        ("debian_en.jsonl.gz", {"id_field": "id", "batch_rows": 1000}),
        ("debian_zh.jsonl.gz", {"text_fields": ["text", "source"], "join": " / "}),
        ("debian_zh.jsonl.gz", {"id_field": "id"}),
    ],
)
def test_bundled_corpora_give_the_same_rows_on_both_paths(name: str, params: dict[str, Any]) -> None:
    samples = assert_same(DATA, name, **params)
    assert samples.num_rows > 2000 and samples.column("meta").null_count == 0


def test_bad_input_corpus_gives_the_same_rows_on_both_paths(tmp_path: Path) -> None:
    cases = build(tmp_path)
    for case in cases:
        assert_same(tmp_path / case.name, "", **case.params)
    jsonl = [f for case in cases for f in case.files if ".jsonl" in f.name]
    assert len(jsonl) >= 10 and any(f.damaged_at for f in jsonl)  # the corpus's JSONL files were compared


def test_without_meta_only_meta_is_left_out(tmp_path: Path) -> None:
    """``lineage dedupe`` keeps no ``meta``: its convert leaves the column null and changes nothing else, in
    this process and in parser workers, on the bad-input corpus and a bundled corpus."""
    cases = build(tmp_path)
    runs = [(tmp_path / case.name, "", {**case.params, "batch_rows": 64}) for case in cases]
    runs.append((DATA, "debian_zh.jsonl.gz", {"batch_rows": 1000}))
    for root, pattern, params in runs:
        reference = convert(root, pattern, blocks=False, **params)
        for processes, here in ((0, True), (1, False)):
            bare = convert(root, pattern, processes=processes, here=here, meta=False, **params)
            samples = bare[0]
            assert samples.column("meta").null_count == samples.num_rows, (root.name, processes)
            assert samples.drop_columns(["meta"]).equals(reference[0].drop_columns(["meta"])), (root.name, processes)
            for a, b in zip(reference[1:3], bare[1:3], strict=True):
                assert a.equals(b), (root.name, processes)
            assert reference[3] == bare[3]
    assert runs[-1][0] == DATA and bare[0].num_rows > 2000


@pytest.fixture
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Read the stream a few bytes at a time: lines and oversized lines then span pieces."""
    monkeypatch.setattr(jsonl_blocks, "_PIECE_BYTES", 7)


def test_pieces_and_blocks_smaller_than_a_line_give_the_same_rows(tmp_path: Path, small_pieces: None) -> None:
    lines = [json.dumps({"text": f"doc {i}", "n": i, "tags": ["a", {"b": None}]}) for i in range(40)]
    lines[3] = "x" * 120  # oversized
    lines[7] = ""  # blank
    lines[11] = '{"text": "cut'  # invalid
    lines[12] = "\ufeff" + lines[12]  # a BOM not at the start of the file
    data = ("\ufeff" + "\r\n".join(lines) + "\n" + "y" * 130).encode()
    (tmp_path / "f.jsonl").write_bytes(data)
    for batch_rows in (1, 3, 4096):
        assert_same(tmp_path, "f.jsonl", max_record_bytes=100, batch_rows=batch_rows)


def test_blocks_parsed_in_worker_processes_give_the_same_rows(tmp_path: Path) -> None:
    """``lineage dedupe`` parses most blocks of a large file in worker processes: every sample,
    quarantine row and stat is still the per-record path's, in file order."""
    lines = [json.dumps({"text": f"doc {i}", "n": i, "id": i % 37}) for i in range(300)]
    for bad in (5, 61, 62, 140, 299):
        lines[bad] = '{"text": "cut'
    lines[90] = json.dumps({"text": "   ", "id": 1})  # empty text
    (tmp_path / "f.jsonl").write_bytes("\n".join(lines).encode())
    for batch_rows in (7, 16):  # 43 and 19 blocks: past the blocks parsed here before workers start
        assert_same(tmp_path, "f.jsonl", processes=1, batch_rows=batch_rows)
        assert_same(tmp_path, "f.jsonl", processes=2, batch_rows=batch_rows, id_field="id")
        assert_same(tmp_path, "f.jsonl", processes=1, here=False, batch_rows=batch_rows, id_field="id")
    samples = assert_same(DATA, "debian_en.jsonl.gz", processes=1, batch_rows=1000)
    assert samples.num_rows > 2000
    # clean blocks come back as columns, handed to Arrow whole: some without meta, non-ASCII texts
    clean = [
        json.dumps({"text": f"文档 {i} é", **({"n": i} if i % 3 else {})}, ensure_ascii=i % 2 == 0) for i in range(200)
    ]
    (tmp_path / "clean.jsonl").write_text("\n".join(clean) + "\n")
    samples = assert_same(tmp_path, "clean.jsonl", processes=1, here=False, batch_rows=16)
    assert samples.column("meta").null_count == 67

    def made(here: bool) -> list[bool]:
        """Per block, whether a worker parsed it."""
        items = jsonl_blocks.read_blocks(
            local_tier(tmp_path).filesystem, str(tmp_path / "f.jsonl"), ReadOptions(1 << 20, batch_rows=7)
        )
        return [m is not None for _, m in _parsed(items, BlockFields("text", None, "d", "f.jsonl"), 1, here)]

    # the workers did parse: every other block after the first few, or every one with here=False
    shared, theirs = made(True), made(False)
    assert len(shared) == len(theirs) == 43
    assert shared == [b > _INLINE_BLOCKS and b % 2 == 1 for b in range(1, 44)]
    assert theirs == [b > _INLINE_BLOCKS for b in range(1, 44)]


FUZZ = settings(
    max_examples=150,
    deadline=timedelta(seconds=5),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
    database=None,
)
records = st.dictionaries(st.sampled_from(["text", "id", "lang"]) | strings, json_values, max_size=4)
json_line = st.builds(
    lambda record, ascii, sep: json.dumps(record, ensure_ascii=ascii, separators=sep).encode("utf-8", "surrogatepass"),
    records,
    st.booleans(),
    st.sampled_from([None, (",", ":"), (" ,", " : ")]),
)
raw_line = st.binary(max_size=60).map(lambda b: b.replace(b"\n", b" "))
deep_line = st.integers(150, 1200).map(lambda n: b'{"text": "t", "d": ' + b"[" * n + b"]" * n + b"}")


@FUZZ
@given(
    lines=st.lists(json_line | raw_line | deep_line | st.just(b"") | st.just(b"\xef\xbb\xbf{}"), max_size=14),
    newline=st.sampled_from([b"\n", b"\r\n", b"\r\r\n"]),
    final_newline=st.booleans(),
    id_field=st.sampled_from([None, "id"]),
    batch_rows=st.sampled_from([1, 2, 5, 4096]),
    limit=st.sampled_from([40, 300, 1 << 20]),
)
def test_random_files_give_the_same_rows_on_both_paths(
    small_pieces: None,
    lines: list[bytes],
    newline: bytes,
    final_newline: bool,
    id_field: str | None,
    batch_rows: int,
    limit: int,
) -> None:
    data = newline.join(lines) + (newline if final_newline else b"")
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "f.jsonl").write_bytes(data)
        assert_same(Path(tmp), "f.jsonl", id_field=id_field, batch_rows=batch_rows, max_record_bytes=limit)


def _lone_surrogate(value: object) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


@FUZZ
@given(line=json_line | raw_line | json_line.map(lambda b: b[: len(b) // 2] + b[len(b) // 2 + 1 :]))
def test_a_line_is_taken_as_json_loads_reads_it(line: bytes) -> None:
    """orjson parses first: a line taken has exactly ``json.loads``'s value (an int past 64 bits stays an
    int, NaN and a lone surrogate are the standard library's), and a good object line is always taken."""
    got = json_objects.parse_line(line)
    try:
        want = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        assert got is None
        return
    if got is not None:
        assert repr(got) == repr(want)
    plain = line[:1] == b"{" and line[-1:] == b"}" and line.count(b"{") + line.count(b"[") < 200
    assert (got is not None) == (plain and not _lone_surrogate(want))


@FUZZ
@given(lines=st.lists(json_line | raw_line, max_size=12), id_field=st.sampled_from([None, "id"]))
def test_a_workers_columns_hold_the_samples_it_made(lines: list[bytes], id_field: str | None) -> None:
    columns = json_objects.fast_columns(lines, json_objects.BlockFields("text", id_field, "d", "f.jsonl"), 7)
    made = json_objects.fast_samples(lines, "text", id_field)
    assert columns.samples() == made
    keys = [
        sample_key_from_id(m[1]) if id_field else sample_key_from_position("f.jsonl", 7 + i)
        for i, m in enumerate(made)
        if m is not None
    ]
    assert columns.sample_ids.decode() == "".join(sample_id("d", key) for key in keys)


def test_the_block_pass_takes_every_line_of_the_bundled_corpus() -> None:
    """Guards the comparisons above: on clean data the block pass, not the fallback, made the rows."""
    opts = ReadOptions(8 << 20, batch_rows=4096)
    items = list(jsonl_blocks.read_blocks(local_tier(DATA).filesystem, str(DATA / "debian_zh.jsonl.gz"), opts))
    assert all(isinstance(item, jsonl_blocks.LineBlock) for item in items)
    for block in items:
        taken, _ = json_objects.parse_objects(block.lines)
        assert taken == list(range(len(block.lines)))


_WORKER_IMPORTS = """
import concurrent.futures, multiprocessing, os
from operators.convert import operator, shared_blocks
from operators.convert.json_objects import BlockFields
if __name__ == "__main__":
    segment, lines = shared_blocks.share_lines([b'{"text": "a b c"}'] * 3)
    spawn = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(
        1, mp_context=spawn, initializer=shared_blocks.exit_with, initargs=(os.getpid(),)
    ) as pool:
        made = pool.submit(shared_blocks.parse_shared, lines, BlockFields("text", None, "d", "f"), 0).result()
        assert shared_blocks.take_columns(made).samples() == [("a b c", None, None)] * 3
        heavy = "{'pyarrow', 'numpy', 'pydantic', 'typer'}"
        print(pool.submit(eval, f"sorted({{m.split('.')[0] for m in __import__('sys').modules}} & {heavy})").result())
    segment.close()
    segment.unlink()
"""


def test_a_parser_worker_imports_the_standard_library_alone() -> None:
    """``lineage dedupe``'s JSON parser workers run :func:`shared_blocks.parse_shared`: unpickling it must not
    import pyarrow, NumPy or pydantic, which were most of a worker's half-second start-up (the command waits
    for its first block)."""
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run([sys.executable, "-c", _WORKER_IMPORTS], cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
