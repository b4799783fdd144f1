"""``lineage dedupe`` on the local engine runs convert and ``minhash_dedupe`` in process (no catalog,
staging or Delta commit). Its outputs must be the throw-away pipeline's, file for file: the kept bytes,
the report, the quarantine rows (but their run id) and the counts, on the bundled corpora with edited
copies and on the bad-input corpus; and a repeated id fails it with the runner's own error."""

from __future__ import annotations

import gzip
import itertools
import json
import random
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from benchmarks.common import CORPUS_EN, CORPUS_ZH, edited_copies, read_corpus
from lineage import dedupe_files as module
from lineage.dedupe_files import dedupe_files
from lineage.settings import Settings
from operators.convert.readers import open_decompressed
from operators.minhash.params import MinHashParams
from storage.errors import LineageError, RunFailed
from tests.data.make_bad_inputs import build

_READ = (".jsonl", ".jsonl.gz", ".json", ".ndjson", ".parquet")


def _both(tmp_path: Path, settings: Settings, inputs: list[Path], name: str, **kw: object) -> list[object]:
    """The summary and every output file of the in-process path and of the runner's, side by side."""
    results = []
    for how in ("local", "runner"):
        out = tmp_path / how / name
        out.parent.mkdir(parents=True, exist_ok=True)
        if how == "runner":
            original = module._decide_local
            module._decide_local = lambda spec, settings: module._decide_with_runner(spec, settings, "local")
        try:
            summary = dedupe_files(inputs, out if len(inputs) == 1 else out / "", settings=settings, **kw)
        finally:
            if how == "runner":
                module._decide_local = original
        files = {}
        for path in sorted(p for p in (tmp_path / how).rglob("*") if p.is_file()):
            key = str(path.relative_to(tmp_path / how))
            if "quarantine" in path.name:
                files[key] = pq.read_table(path).drop_columns(["run_id"]).to_pylist()
            elif path.name.endswith("duplicates.parquet"):
                files[key] = pq.read_table(path).to_pylist()
            elif path.suffix == ".parquet":
                files[key] = pq.read_table(path)
            elif path.suffix == ".gz":  # the gzip header holds the time it was written
                files[key] = gzip.decompress(path.read_bytes())
            else:
                files[key] = path.read_bytes()
        counts = (summary.inputs, summary.records, summary.kept, summary.dropped, summary.quarantined)
        results.append((counts, files))
    return results


def _write_jsonl_gz(path: Path, docs: list[dict]) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as out:
        out.writelines(json.dumps(d, ensure_ascii=False) + "\n" for d in docs)
    return path


def test_in_process_dedupe_matches_the_pipeline_on_the_bundled_corpora(tmp_path: Path, settings: Settings) -> None:
    en = read_corpus(CORPUS_EN)[:1500]
    zh = read_corpus(CORPUS_ZH)[:800]
    docs = list(itertools.islice(edited_copies(en + zh, 2, seed=3), 2 * len(en + zh)))
    random.Random(1).shuffle(docs)
    jsonl = _write_jsonl_gz(tmp_path / "mixed.jsonl.gz", docs)
    parquet = tmp_path / "mixed.parquet"
    pq.write_table(pa.Table.from_pylist(docs[: len(docs) // 2]), parquet, row_group_size=700)
    local, runner = _both(tmp_path, settings, [jsonl], "one.jsonl.gz", id_field="id")
    assert local == runner
    counts, _ = local
    assert counts[3] > 1000  # the edited copies were found
    local, runner = _both(tmp_path, settings, [jsonl, parquet], "two", params=MinHashParams(verify="estimate"))
    assert local == runner


def test_in_process_dedupe_matches_the_pipeline_on_bad_inputs(tmp_path: Path, settings: Settings) -> None:
    root = tmp_path / "bad"
    build(root)
    folders: dict[Path, list[Path]] = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.name.lower().endswith(_READ):
            folders.setdefault(path.parent, []).append(path)
    assert len(folders) >= 4
    refused = 0
    for folder, files in folders.items():
        for group in [files] if folder.name != "names" else [[f] for f in files]:  # a refused name fails its call
            name = f"{folder.name}-{group[0].name}"
            try:
                local, runner = _both(tmp_path / name, settings, group, "out")
            except LineageError as exc:  # the runner refusing must mean the in-process path refuses alike
                refused += 1
                with pytest.raises(type(exc)) as again:
                    module._decide_with_runner(module._spec(group, MinHashParams(), "text", None), settings, "local")
                assert str(again.value) == str(exc)
                continue
            assert local == runner, name
    assert 0 < refused < 5


def test_a_repeated_id_fails_with_the_runners_error(tmp_path: Path, settings: Settings) -> None:
    src = tmp_path / "ids.jsonl"
    src.write_text("".join(json.dumps({"id": i % 3, "text": f"text number {i}"}) + "\n" for i in range(5)))
    errors = []
    for decide in (module._decide_local, lambda spec, s: module._decide_with_runner(spec, s, "local")):
        with pytest.raises(RunFailed, match="duplicate sample_id values after convert") as caught:
            decide(module._spec([src], MinHashParams(), "text", "id"), settings)
        errors.append(str(caught.value))
    assert errors[0] == errors[1]


def test_an_output_file_in_a_folder_that_does_not_exist_yet_is_written_there(
    tmp_path: Path, settings: Settings
) -> None:
    """It failed after all the work, on the kept file's ``.partial`` (FileNotFoundError)."""
    src = _write_jsonl_gz(tmp_path / "in.jsonl.gz", [{"text": f"document {i} about tea and rain"} for i in range(3)])
    out = tmp_path / "new" / "deeper" / "out.jsonl.gz"
    summary = dedupe_files([src], out, settings=settings)
    assert summary.kept == 3 and out.is_file() and Path(f"{out}.duplicates.parquet").is_file()
    assert gzip.decompress(out.read_bytes()) == gzip.decompress(src.read_bytes())


def test_no_output_may_be_an_input_and_the_inputs_stay_as_they_were(tmp_path: Path, settings: Settings) -> None:
    """``--output`` naming the input replaced it with its deduplicated copy (the dropped records were gone,
    and the run said it succeeded). Every way of naming an input is refused before any work: the path itself,
    a symbolic link, a hard link, a folder output holding it, and the report's or quarantine's file."""
    folder = tmp_path / "in"
    folder.mkdir()
    docs = [{"text": "the same words about tea and rain, again and again"}] * 3
    src = _write_jsonl_gz(folder / "a.jsonl.gz", docs)
    other = _write_jsonl_gz(folder / "b.jsonl.gz", docs[:1])
    (tmp_path / "link.jsonl.gz").symlink_to(src)
    (tmp_path / "hard.jsonl.gz").hardlink_to(src)
    report = folder / "o.jsonl.gz.duplicates.parquet"  # what --output o.jsonl.gz writes its report to
    quarantine = folder / "o.jsonl.gz.quarantine.parquet"  # and its quarantined records to
    for path in (report, quarantine):
        pq.write_table(pa.table({"text": ["a document about tea"]}), path)
    files = {p.name: p.read_bytes() for p in folder.iterdir()}
    cases = [
        ([src], src),
        ([src], tmp_path / "link.jsonl.gz"),
        ([src], tmp_path / "hard.jsonl.gz"),
        ([tmp_path / "link.jsonl.gz"], src),
        ([src, other], folder),  # the folder output's a.jsonl.gz is the input
        ([report], folder / "o.jsonl.gz"),
        ([quarantine], folder / "o.jsonl.gz"),
    ]
    for inputs, out in cases:
        with pytest.raises(LineageError, match="is the input"):
            dedupe_files(inputs, out, settings=settings)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == files
    summary = dedupe_files([src], tmp_path / "elsewhere.jsonl.gz", settings=settings)  # elsewhere, it runs
    assert (summary.records, summary.kept) == (3, 1)


def test_a_kept_gz_file_of_several_members_is_one_stream_to_every_reader(tmp_path: Path) -> None:
    """Kept records of a .gz input are compressed block by block on two threads, one gzip member per block:
    gzip, zcat, Python's gzip and our own reader all read the blocks back as one stream, in order, and the
    same blocks give the same bytes."""
    rng = random.Random(3)
    blocks = [
        "".join(
            json.dumps({"i": n, "text": f"{k} " * rng.randrange(1, 40)}) + "\n" for n in range(k * 500, k * 500 + 500)
        )
        for k in range(7)
    ]
    wanted = "".join(blocks).encode()

    def write(path: Path) -> Path:
        with module.GzipMembers(path, level=1) as out:
            for block in blocks:
                out.write(block.encode())
        return path

    first, second = write(tmp_path / "a.jsonl.gz"), write(tmp_path / "b.jsonl.gz")
    assert first.read_bytes() == second.read_bytes()
    assert first.read_bytes().count(b"\x1f\x8b\x08") >= len(blocks)  # a member per block
    assert gzip.decompress(first.read_bytes()) == wanted
    assert subprocess.run(["gzip", "-t", str(first)], check=False).returncode == 0
    zcat = subprocess.run(["zcat", str(first)], capture_output=True, check=True)
    assert zcat.stdout == wanted
    with open_decompressed(pafs.LocalFileSystem(), str(first)) as stream:
        assert stream.read() == wanted

    empty = tmp_path / "none.jsonl.gz"
    with module.GzipMembers(empty, level=1):
        pass
    assert gzip.decompress(empty.read_bytes()) == b""
    assert subprocess.run(["gzip", "-t", str(empty)], check=False).returncode == 0
