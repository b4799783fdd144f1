"""The convert operator on a generated corpus of bad inputs (tests/data/make_bad_inputs.py).

For every file: no exception escapes; every record it holds is a sample with the text written,
a quarantine row with the reason the generator expects, or a counted blank line (records in =
samples + quarantined + blank); the good records around a bad one are kept. A damaged file keeps
the records before the damage and adds one ``corrupt_file`` row that names it. A name the tier
refuses is one ``invalid_file_name`` row, and the files beside it are read.
"""

from __future__ import annotations

import json
import os
import urllib.parse
from collections import Counter
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from lineage.catalog import Catalog
from lineage.settings import Settings
from operators.convert import ConvertOperator, SourceSpec, plan_chunks
from storage.tier import Tier, local_tier
from tests.data.make_bad_inputs import READABLE_NAMES, REFUSED_NAMES, BadFile, Case, build
from tests.support.convert_harness import convert


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Case]]:
    root = tmp_path_factory.mktemp("bad-inputs")
    return root, build(root)


def check_file(f: BadFile, samples: list[dict], quarantine: list[dict]) -> int:
    """Assert the invariants for one file's output rows; returns the blank lines it must have had."""
    where = f"{f.name!r}"
    if f.refused:
        assert samples == [], where
        (row,) = quarantine
        assert row["reason"] == "invalid_file_name" and row["source_path"] == f.name, where
        assert repr(f.name)[1:-1] in row["message"], where  # the message names the file
        return 0
    end = len(f.records) if f.damaged_at is None else f.damaged_at
    expected = dict(enumerate(f.records[:end]))
    by_row_samples = {s["source_row"]: s for s in samples}
    by_row_quarantine = {q["source_row"]: q for q in quarantine if q["reason"] != "corrupt_file"}
    assert len(by_row_samples) == len(samples) and len(by_row_quarantine) + (f.damaged_at is not None) == len(
        quarantine
    ), f"{where}: a row was output twice"
    for row, expect in expected.items():
        got_sample, got_bad = by_row_samples.get(row), by_row_quarantine.get(row)
        if expect.kind == "sample":
            assert got_bad is None, f"{where} row {row}: quarantined as {got_bad and got_bad['reason']}"
            assert got_sample is not None and got_sample["text"] == expect.text, f"{where} row {row}"
        elif expect.kind == "quarantine":
            assert got_sample is None, f"{where} row {row}: expected {expect.reason}, got a sample"
            assert got_bad is not None, f"{where} row {row}: expected {expect.reason}, silently dropped"
            assert got_bad["reason"] == expect.reason, f"{where} row {row}: {got_bad['reason']}: {got_bad['message']}"
            assert got_bad["message"], where
        else:
            assert got_sample is None and got_bad is None, f"{where} row {row} is blank"
    assert set(by_row_samples) | set(by_row_quarantine) <= set(expected), f"{where}: rows that were never written"
    if f.damaged_at is not None:
        (corrupt,) = [q for q in quarantine if q["reason"] == "corrupt_file"]
        assert corrupt["source_row"] == f.damaged_at and corrupt["message"], where
    blanks = sum(e.blank for e in expected.values())
    assert len(samples) + len(by_row_quarantine) + blanks == end, f"{where}: records in != out"
    return blanks


def test_every_bad_input_is_quarantined_with_a_reason_or_read(corpus: tuple[Path, list[Case]]) -> None:
    root, cases = corpus
    checked = Counter[str]()
    for case in cases:
        samples, _, quarantine, stats = convert(root / case.name, "", **case.params)
        for row in quarantine.to_pylist():  # every quarantine row says what and where
            assert row["reason"] and row["source_path"] and row["source_uri"] and row["run_id"] == "run-1"
        blanks = 0
        for f in case.files:
            blanks += check_file(
                f,
                [s for s in samples.to_pylist() if s["source_path"] == f.name],
                [q for q in quarantine.to_pylist() if q["source_path"] == f.name],
            )
            checked[f.name.rsplit(".", 1)[-1]] += 1
        assert stats.get("blank_lines", 0) == blanks, case.name
        names = {f.name for f in case.files}
        assert set(samples.column("source_path").to_pylist()) <= names
    assert sum(checked.values()) >= 50  # the whole corpus was checked, not an empty folder


def test_the_corpus_damages_files_after_good_records(corpus: tuple[Path, list[Case]]) -> None:
    """Guards the generator: these damaged files have records before the damage and lose some after it."""
    _, cases = corpus
    damaged = {f.name: f for case in cases for f in case.files if f.damaged_at is not None}
    for name in ("truncated.jsonl.gz", "truncated.jsonl.zst", "corrupt.jsonl.zst", "corrupt_row_group.parquet"):
        assert 0 < damaged[name].damaged_at < len(damaged[name].records), name  # type: ignore[operator]


def test_file_names_with_uri_characters_are_read_and_refused_names_quarantined(tmp_path: Path) -> None:
    for name in [*READABLE_NAMES, *REFUSED_NAMES, "ok.jsonl"]:
        (tmp_path / name).write_text('{"text": "x"}\n')
    samples, lineage, quarantine, _ = convert(tmp_path, "")
    assert sorted(samples.column("source_path").to_pylist()) == sorted([*READABLE_NAMES, "ok.jsonl"])
    for s in samples.to_pylist():  # a posix tier's URI is the literal local path
        assert s["source_uri"] == str(tmp_path.resolve() / s["source_path"])
    assert [d["source"]["path"] for d in lineage.column("detail").to_pylist()] == samples.column(
        "source_path"
    ).to_pylist()
    assert sorted(quarantine.column("source_path").to_pylist()) == sorted(REFUSED_NAMES)
    assert set(quarantine.column("reason").to_pylist()) == {"invalid_file_name"}
    assert set(quarantine.column("source_uri").to_pylist()) == {str(tmp_path.resolve())}


def test_glob_patterns_match_refused_names_too(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    for name in ("a.jsonl", "b\nc.jsonl", "50%.jsonl"):
        (tmp_path / "d" / name).write_text('{"text": "x"}\n')
    samples, _, quarantine, _ = convert(tmp_path, "d/*.jsonl")
    assert sorted(samples.column("source_path").to_pylist()) == ["50%.jsonl", "a.jsonl"]
    assert quarantine.column("source_path").to_pylist() == ["b\nc.jsonl"]


def test_a_file_name_that_is_not_utf8_is_one_quarantine_row(tmp_path: Path) -> None:
    """No object key, URI or Arrow string holds such a name: it is refused, named with its bytes
    escaped, and the file beside it is read."""
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "ok.jsonl").write_text('{"text": "x"}\n')
    with open(os.path.join(os.fsencode(tmp_path / "d"), b"caf\xe9.jsonl"), "wb") as out:
        out.write(b'{"text": "y"}\n')
    samples, _, quarantine, _ = convert(tmp_path, "d")
    assert samples.column("text").to_pylist() == ["x"]
    assert quarantine.column("reason").to_pylist() == ["invalid_file_name"]
    assert quarantine.column("source_path").to_pylist() == ["caf\\xe9.jsonl"]
    assert "not valid UTF-8" in quarantine.column("message")[0].as_py()


def test_names_on_s3_are_read_with_percent_encoded_uris(ceph_tier: Tier) -> None:
    """On an S3 tier the same names: source_uri is percent-encoded and decodes back to the object."""
    fs = ceph_tier.filesystem
    for name in [*READABLE_NAMES, "new\nline.jsonl", "ok.jsonl"]:
        with fs.open_output_stream(f"{ceph_tier.path('raw')}/{name}") as out:  # as another client would
            out.write(b'{"text": "x"}\n')
    chunks = plan_chunks(SourceSpec("ds", ceph_tier, "raw"), 1)
    outs = list(ConvertOperator(run_id="r").read(chunks.to_batches()[0]))
    samples = [s for out in outs for s in out.samples.to_pylist()]
    quarantine = [q for out in outs for q in out.quarantine.to_pylist()]
    assert sorted(s["source_path"] for s in samples) == sorted([*READABLE_NAMES, "ok.jsonl"])
    for s in samples:
        uri = urllib.parse.urlsplit(s["source_uri"])
        assert (uri.scheme, uri.query, uri.fragment, " " in uri.path) == ("s3", "", "", False)
        assert urllib.parse.unquote(uri.path).endswith("/raw/" + s["source_path"])
        assert ceph_tier.relative(s["source_uri"]) == f"raw/{s['source_path']}"
        assert fs.get_file_info(ceph_tier.path(ceph_tier.relative(s["source_uri"]))).type == pafs.FileType.File
    assert [(q["reason"], q["source_path"]) for q in quarantine] == [("invalid_file_name", "new\nline.jsonl")]


def test_file_names_survive_a_pipeline_run_into_delta_and_lineage(
    tmp_path: Path, settings: Settings, catalog: Catalog
) -> None:
    """End to end with the local engine: names land in source_uri/source_path of the data table,
    in the lineage records and in the quarantine table of the committed Delta version."""
    from sqlalchemy import select

    from lineage.catalog import DatasetVersion
    from lineage.runs import Runner
    from pipelines.spec import PipelineSpec
    from storage.delta import version_dataset
    from storage.tier import get_tier

    src = tmp_path / "src"
    src.mkdir()
    for i, name in enumerate([*READABLE_NAMES, *REFUSED_NAMES]):
        (src / name).write_text(json.dumps({"text": f"document number {i} from {name}"}) + "\n")
    spec = PipelineSpec.model_validate(
        {"name": "names", "inputs": [{"dataset": "names", "path": str(src)}], "output": {"dataset": "names-out"}}
    )
    outcome = Runner(settings, catalog).run(spec, engine="local")
    assert outcome.row_count == len(READABLE_NAMES)
    assert outcome.counts["quarantine"] == {"invalid_file_name": len(REFUSED_NAMES)}
    with catalog.session() as s:
        dv = s.scalars(select(DatasetVersion).where(DatasetVersion.run_id == outcome.run_id)).one()
        tier = get_tier(dv.tier, settings)
        data = version_dataset(tier, dv.data_path, dv.data_delta_version).to_table().to_pylist()
        lineage = version_dataset(tier, dv.lineage_path, dv.lineage_delta_version).to_table().to_pylist()
        quarantine = version_dataset(tier, dv.quarantine_path, dv.quarantine_delta_version).to_table().to_pylist()
    root = local_tier(src)
    assert sorted(r["source_path"] for r in data) == sorted(READABLE_NAMES)
    assert all(r["source_uri"] == root.uri(r["source_path"]) for r in data)
    sources = {r["detail"]["source"]["path"]: r["detail"]["source"]["uri"] for r in lineage if r["step"] == 0}
    assert sources == {name: root.uri(name) for name in READABLE_NAMES}
    assert sorted((q["reason"], q["source_path"]) for q in quarantine) == sorted(
        ("invalid_file_name", n) for n in REFUSED_NAMES
    )
