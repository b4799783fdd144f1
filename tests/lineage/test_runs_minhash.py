"""MinHash near-dedupe inside pipelines: lineage of dropped samples, and dedupe against releases."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select

from lineage.catalog import Catalog, DatasetVersion
from lineage.releases import get_release, publish
from lineage.runs import Runner
from lineage.settings import Settings
from operators.schema import sample_id
from pipelines.spec import PipelineSpec
from storage.delta import version_dataset
from storage.tier import get_tier
from tests.support.helpers import lineage_of, write_jsonl
from tests.support.minhash_texts import BASE, CHINESE, NEAR, OTHER


def spec(path: Path, dataset: str, output: str, against: list[str] | None = None) -> PipelineSpec:
    params = {"against": against} if against else {}
    return PipelineSpec.model_validate(
        {
            "name": "mh",
            "inputs": [{"dataset": dataset, "path": str(path), "id_field": "id"}],
            "operators": [{"name": "exact_dedupe"}, {"name": "minhash_dedupe", "params": params}],
            "output": {"dataset": output},
        }
    )


def test_near_duplicates_dropped_with_cluster_kept_id_and_jaccard(
    tmp_path: Path, settings: Settings, catalog: Catalog
) -> None:
    write_jsonl(
        tmp_path / "a.jsonl",
        [
            {"id": "short", "text": BASE},
            {"id": "long", "text": NEAR + " Extra words make it longer."},
            {"id": "curl", "text": OTHER},
            {"id": "zh-1", "text": CHINESE},
            {"id": "zh-2", "text": CHINESE + "另外"},
        ],
    )
    outcome = Runner(settings, catalog).run(spec(tmp_path / "a.jsonl", "raw", "clean"))
    step = outcome.counts["steps"][2]
    assert step["operator"] == "minhash_dedupe" and step["dropped"] == 2
    assert outcome.row_count == 3

    dropped = lineage_of(settings, sample_id("raw", "id:short"))
    rec = dropped.versions[0].records[-1]
    assert rec.operator == "minhash_dedupe" and rec.verdict == "dropped"
    dup = rec.detail["duplicate"]
    assert dup["method"] == "minhash" and dup["kept_id"] == sample_id("raw", "id:long")  # longest survives
    assert 0.8 <= dup["jaccard"] < 1.0 and dup["cluster_size"] == 2
    assert rec.related_ids == [dup["kept_id"]]

    with catalog.session() as s:
        dv = s.scalars(select(DatasetVersion)).one()
        assert dv.signatures_path is not None
        sigs = version_dataset(get_tier(dv.tier, settings), dv.signatures_path, dv.signatures_delta_version)
        assert sorted(sigs.to_table().column("sample_id").to_pylist()) == sorted(
            version_dataset(get_tier(dv.tier, settings), dv.data_path, dv.data_delta_version)
            .to_table()
            .column("sample_id")
            .to_pylist()
        ), "signatures are stored for exactly the released samples"


def test_dedupe_against_a_published_release_keeps_the_published_sample(
    tmp_path: Path, settings: Settings, catalog: Catalog
) -> None:
    write_jsonl(tmp_path / "old.jsonl", [{"id": "gcc", "text": BASE}, {"id": "curl", "text": OTHER}])
    runner = Runner(settings, catalog)
    runner.run(spec(tmp_path / "old.jsonl", "old", "old-clean"))
    publish(catalog, settings, "old-clean@v1")

    # the newcomer is *longer* than the published sample, but published samples always survive
    write_jsonl(
        tmp_path / "new.jsonl",
        [{"id": "gcc-copy", "text": NEAR + " And a longer tail."}, {"id": "fresh", "text": CHINESE}],
    )
    outcome = runner.run(spec(tmp_path / "new.jsonl", "new", "new-clean", against=["old-clean@v1"]))
    assert outcome.counts["steps"][2]["dropped"] == 1 and outcome.row_count == 1
    rec = lineage_of(settings, sample_id("new", "id:gcc-copy")).versions[-1].records[-1]
    assert rec.verdict == "dropped"
    assert rec.detail["duplicate"]["kept_id"] == sample_id("old", "id:gcc")
    with catalog.session() as s:
        assert get_release(s, "old-clean@v1").manifest["signatures"]["table"].endswith("/signatures")


def test_against_a_release_without_signatures_is_a_clear_error(
    tmp_path: Path, settings: Settings, catalog: Catalog
) -> None:
    write_jsonl(tmp_path / "d.jsonl", [{"id": "x", "text": OTHER}])
    runner = Runner(settings, catalog)
    runner.run(
        PipelineSpec.model_validate(
            {
                "name": "p",
                "inputs": [{"dataset": "d", "path": str(tmp_path / "d.jsonl")}],
                "output": {"dataset": "plain"},
            }
        )
    )
    publish(catalog, settings, "plain@v1")
    import pytest

    with pytest.raises(ValueError, match="no stored signatures"):
        runner.run(spec(tmp_path / "d.jsonl", "d2", "out", against=["plain@v1"]))
