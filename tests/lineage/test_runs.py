"""Raw files → pipeline run → Delta tables → catalog → release → lineage query → export."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from sqlalchemy import select

from lineage.catalog import Catalog, DatasetVersion, Run
from lineage.releases import ReleaseError, get_release, publish
from lineage.releases.export import export_release
from lineage.runs import Runner
from lineage.settings import Settings
from operators.schema import sample_id
from pipelines.integrity import RunError
from pipelines.spec import PipelineSpec
from storage.delta import version_dataset
from storage.errors import Invalid
from storage.tier import get_tier
from tests.support.helpers import lineage_of, write_jsonl


def spec_for(corpus: Path, output: str = "clean", operators: list[dict] | None = None) -> PipelineSpec:
    return PipelineSpec.model_validate(
        {
            "name": "test-pipeline",
            "inputs": [{"dataset": "raw", "path": str(corpus), "id_field": "id"}],
            "operators": operators if operators is not None else [{"name": "exact_dedupe"}],
            "output": {"dataset": output, "owner": "tests", "tags": ["t"]},
        }
    )


def test_run_publish_query_export(corpus: Path, settings: Settings, catalog: Catalog, tmp_path: Path) -> None:
    outcome = Runner(settings, catalog).run(spec_for(corpus))
    assert outcome.version == 1
    steps = {s["operator"]: s for s in outcome.counts["steps"]}
    assert steps["convert"]["in"] == 6 and steps["convert"]["kept"] == 6
    assert steps["exact_dedupe"]["dropped"] == 2 and steps["exact_dedupe"]["reasons"] == {"exact_duplicate": 2}
    assert outcome.counts["quarantine"] == {"invalid_json": 1}
    assert outcome.row_count == 4

    with catalog.session() as s:
        dv = s.scalars(select(DatasetVersion)).one()
        run = s.get(Run, outcome.run_id)
        assert run.status == "succeeded" and run.counts == outcome.counts and run.engine == "local"
        assert [op["name"] for op in run.operators] == ["convert", "exact_dedupe"]
        tier = get_tier(dv.tier, settings)
        data = version_dataset(tier, dv.data_path, dv.data_delta_version).to_table()
        ids = data.column("sample_id").to_pylist()
        assert ids == sorted(ids), "data is sorted by sample_id for point lookups"
        quarantine = version_dataset(tier, dv.quarantine_path, dv.quarantine_delta_version).to_table()
        assert quarantine.column("reason").to_pylist() == ["invalid_json"]
        assert quarantine.column("source_path").to_pylist() == ["a.jsonl"]

    release, created = publish(catalog, settings, "clean@v1")
    assert created and release.manifest["row_count"] == 4
    (f,) = release.manifest["files"]
    assert f["rows"] == 4 and len(f["xxh3_128"]) == 32 and f["size"] > 0
    again, created_again = publish(catalog, settings, "clean@v1")
    assert not created_again and again.id == release.id

    # "libc6" survives; "libc6-copy" (same text after normalisation) and "libc6-again" point at it
    kept_id, dup_id = sample_id("raw", "id:libc6"), sample_id("raw", "id:libc6-again")
    dup = lineage_of(settings, dup_id)
    (version,) = dup.versions
    assert not version.in_output
    assert [(r.operator, r.verdict) for r in version.records] == [("convert", "kept"), ("exact_dedupe", "dropped")]
    assert version.records[1].related_ids == [kept_id]
    assert dup.source.path == "sub/b.jsonl.gz" and dup.source.row == 0
    assert dup.duplicate.kept_id == kept_id and dup.duplicate.method == "exact"
    kept = lineage_of(settings, kept_id)
    assert kept.versions[0].in_output and kept.versions[0].releases == ["clean@v1"]
    assert kept.sample["text"].startswith("GNU C library")

    done = export_release(catalog, settings, "clean@v1", tmp_path / "export", "jsonl")
    exported = [json.loads(line) for line in Path(done.path).read_text().splitlines()]
    assert done.rows == 4 and {r["sample_id"] for r in exported} == set(ids)
    assert next(r for r in exported if r["sample_id"] == kept_id)["meta"] == {"id": "libc6", "lang": "en"}
    assert (
        pq.read_table(export_release(catalog, settings, "clean@v1", tmp_path / "export", "parquet").path).num_rows == 4
    )
    # an output folder that cannot be one is refused in a line (it was an OSError's traceback)
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "busy" / "clean-v1.jsonl").mkdir(parents=True)
    for out, why in [
        (tmp_path / "a-file", "is a file: the output must be a folder"),
        (tmp_path / "a-file" / "sub", "cannot make the output folder"),
        (tmp_path / "busy", "clean-v1.jsonl is a folder: name the output file"),
    ]:
        with pytest.raises(Invalid, match=why):
            export_release(catalog, settings, "clean@v1", out, "jsonl")


def test_release_is_immutable_and_stays_readable_after_later_commits(
    corpus: Path, settings: Settings, catalog: Catalog
) -> None:
    runner = Runner(settings, catalog)
    runner.run(spec_for(corpus))
    publish(catalog, settings, "clean@stable")
    write_jsonl(corpus / "c.jsonl", [{"id": "new", "text": "a brand new document about compilers"}])
    second = runner.run(spec_for(corpus))
    assert second.version == 2 and second.row_count == 5
    with pytest.raises(ReleaseError, match="already published with different content"):
        publish(catalog, settings, "clean@stable")
    with catalog.session() as s:
        release = get_release(s, "clean@stable")
        dv = release.dataset_version
        assert dv.version == 1
        table = version_dataset(get_tier(dv.tier, settings), dv.data_path, dv.data_delta_version).to_table()
        assert table.num_rows == 4
        assert DeltaTable(get_tier(dv.tier, settings).uri(dv.data_path)).version() > dv.data_delta_version


def test_identical_rerun_publishes_as_noop(corpus: Path, settings: Settings, catalog: Catalog) -> None:
    runner = Runner(settings, catalog)
    runner.run(spec_for(corpus))
    publish(catalog, settings, "clean@a")
    runner.run(spec_for(corpus))
    release, created = publish(catalog, settings, "clean@a")  # latest version, same bytes
    assert not created and release.manifest["dataset_version"] == 1


def test_dataset_inputs_chain_runs(corpus: Path, settings: Settings, catalog: Catalog) -> None:
    runner = Runner(settings, catalog)
    runner.run(spec_for(corpus, output="raw", operators=[]))  # ingest: convert only
    chained = PipelineSpec.model_validate(
        {
            "name": "chain",
            "inputs": [{"dataset": "raw"}],
            "operators": [{"name": "exact_dedupe"}],
            "output": {"dataset": "clean"},
        }
    )
    outcome = runner.run(chained)
    assert outcome.row_count == 4
    lineage = lineage_of(settings, sample_id("raw", "id:libc6-copy"))
    assert [(v.dataset, v.in_output) for v in lineage.versions] == [("raw", True), ("clean", False)]
    with catalog.session() as s:
        run = s.get(Run, outcome.run_id)
        assert run.inputs == [{"kind": "dataset", "dataset": "raw", "version": 1}]


def test_merge_of_two_sources_dedupes_across_them(tmp_path: Path, settings: Settings, catalog: Catalog) -> None:
    write_jsonl(tmp_path / "en.jsonl", [{"text": "shared text"}, {"text": "only en"}])
    write_jsonl(tmp_path / "zh.jsonl", [{"text": "shared text"}, {"text": "只有中文"}])
    spec = PipelineSpec.model_validate(
        {
            "name": "merge",
            "inputs": [
                {"dataset": "en", "path": str(tmp_path / "en.jsonl")},
                {"dataset": "zh", "path": str(tmp_path / "zh.jsonl")},
            ],
            "operators": [{"name": "exact_dedupe"}],
            "output": {"dataset": "merged"},
        }
    )
    outcome = Runner(settings, catalog).run(spec)
    assert outcome.row_count == 3


def test_duplicate_ids_fail_the_run_and_leave_no_version(tmp_path: Path, settings: Settings, catalog: Catalog) -> None:
    write_jsonl(tmp_path / "d.jsonl", [{"id": "x", "text": "one"}, {"id": "x", "text": "two"}])
    spec = PipelineSpec.model_validate(
        {
            "name": "dup",
            "inputs": [{"dataset": "d", "path": str(tmp_path / "d.jsonl"), "id_field": "id"}],
            "output": {"dataset": "d"},
        }
    )
    with pytest.raises(RunError, match="duplicate sample_id"):
        Runner(settings, catalog).run(spec)
    with catalog.session() as s:
        assert s.scalars(select(DatasetVersion)).all() == []
        (run,) = s.scalars(select(Run)).all()
        assert run.status == "failed" and "duplicate sample_id" in run.error


def test_duplicate_ids_fail_even_when_a_filter_would_drop_one_copy(
    tmp_path: Path, settings: Settings, catalog: Catalog
) -> None:
    """Ids are checked as convert made them: a quality drop must not hide a repeated id value."""
    long = " ".join(f"word{i}" for i in range(60))
    write_jsonl(tmp_path / "d.jsonl", [{"id": "x", "text": long}, {"id": "x", "text": "too short"}])
    spec = PipelineSpec.model_validate(
        {
            "name": "dup",
            "inputs": [{"dataset": "d", "path": str(tmp_path / "d.jsonl"), "id_field": "id"}],
            "operators": [{"name": "quality"}],
            "output": {"dataset": "d"},
        }
    )
    with pytest.raises(
        RunError, match=r"after convert: 1 id.*\(input 1: d/d\.jsonl row 0; input 1: d/d\.jsonl row 1\)"
    ):
        Runner(settings, catalog).run(spec)
    with catalog.session() as s:
        assert s.scalars(select(DatasetVersion)).all() == []


def test_the_same_dataset_version_as_two_inputs_fails(corpus: Path, settings: Settings, catalog: Catalog) -> None:
    runner = Runner(settings, catalog)
    runner.run(spec_for(corpus, output="raw", operators=[]))
    spec = PipelineSpec.model_validate(
        {
            "name": "twice",
            "inputs": [{"dataset": "raw"}, {"dataset": "raw", "version": 1}],
            "operators": [{"name": "exact_dedupe"}],
            "output": {"dataset": "clean"},
        }
    )
    with pytest.raises(RunError, match=r"duplicate sample_id values after convert: 6 id.*input 1: .*; input 2: "):
        runner.run(spec)
    with catalog.session() as s:
        assert [dv.dataset.name for dv in s.scalars(select(DatasetVersion))] == ["raw"]


def test_bad_pipeline_files_are_clear_errors(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text(
        'name = "x"\n[[inputs]]\ndataset = "d"\npath = "f"\n[[operators]]\nname = "convert"\n[output]\ndataset = "o"\n'
    )
    with pytest.raises(ValueError, match="implicitly"):
        PipelineSpec.load(path)
    path.write_text('name = "x"\nbogus = 1\n[[inputs]]\ndataset = "d"\n[output]\ndataset = "o"\n')
    with pytest.raises(ValueError, match="bogus"):
        PipelineSpec.load(path)


def test_group_steps_partition_by_key_when_keys_exceed_memory_budget(
    corpus: Path, settings: Settings, catalog: Catalog
) -> None:
    """With a tiny budget the key columns are hash-partitioned; decisions must not change."""
    whole = Runner(settings, catalog).run(spec_for(corpus, output="whole"))
    settings.group_partition_rows = 2
    settings.sort_bucket_bytes = 1000  # also sort the output bucket by bucket
    parted = Runner(settings, catalog).run(spec_for(corpus, output="parted"))
    assert parted.counts["steps"] == whole.counts["steps"]
    with catalog.session() as s:
        tables = {}
        for dv in s.scalars(select(DatasetVersion)):
            tier = get_tier(dv.tier, settings)
            tables[dv.dataset.name] = version_dataset(tier, dv.data_path, dv.data_delta_version).to_table()
    assert tables["whole"].equals(tables["parted"])
