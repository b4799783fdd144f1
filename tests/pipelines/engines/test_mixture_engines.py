"""The same mixture gives the same release on the in-process, Spark and Ray engines, and for any
partitioning of the input (issue #20, item 6)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable
from sqlalchemy import select

from lineage.catalog import Catalog, DatasetVersion
from lineage.releases import publish
from lineage.runs import Runner, RunOutcome
from lineage.settings import Settings
from pipelines.spec import PipelineSpec
from storage.delta import version_dataset
from storage.tier import get_tier
from tests.support.fixtures_engines import ray_runtime, spark  # noqa: F401  (session fixtures)
from tests.support.helpers import write_jsonl

ENGINES = ("local", "spark", "ray")
EN = [f"english document {i} " + "word " * (i % 17) for i in range(150)]
ZH = [f"中文文档{i}" + "字" * (i % 11) for i in range(50)]


def _corpus(root: Path, files: int) -> dict[str, Path]:
    out = {}
    for name, texts in (("en", EN), ("zh", ZH + [EN[3]])):  # one cross-source duplicate
        records = [{"id": f"{name}{i}", "text": t} for i, t in enumerate(texts)]
        for k in range(files):
            write_jsonl(root / name / f"part-{k}.jsonl", records[k::files])
        out[name] = root / name
    return out


def _spec(root: Path, output: str, files: int = 3) -> PipelineSpec:
    paths = _corpus(root, files)
    return PipelineSpec.model_validate(
        {
            "name": "mix",
            "inputs": [
                {"dataset": "en", "path": str(paths["en"]), "id_field": "id", "weight": 0.5},
                {"dataset": "zh", "path": str(paths["zh"]), "id_field": "id", "weight": 0.5, "priority": 1},
            ],
            "operators": [{"name": "exact_dedupe"}],
            "mixture": {"unit": "words", "total": 2000, "seed": 11},
            "output": {"dataset": output},
        }
    )


def _tables(catalog: Catalog, settings: Settings, outcome: RunOutcome) -> dict[str, pa.Table]:
    with catalog.session() as s:
        dv = s.scalars(select(DatasetVersion).where(DatasetVersion.run_id == outcome.run_id)).one()
        tier = get_tier(dv.tier, settings)
        files = DeltaTable(tier.uri(dv.data_path), version=dv.data_delta_version).file_uris()
        data = version_dataset(tier, dv.data_path, dv.data_delta_version).to_table()
        lineage = version_dataset(tier, dv.lineage_path, dv.lineage_delta_version).to_table()
    return {"data": data.drop_columns([]), "lineage": lineage.drop_columns(["run_id"]), "files": files}


def _rows(table: pa.Table, keys: list[str]) -> list[dict]:
    return table.sort_by([(k, "ascending") for k in keys]).to_pylist()


@pytest.mark.usefixtures("spark", "ray_runtime")
def test_the_same_mixture_gives_the_same_release_on_every_engine(
    tmp_path: Path, settings: Settings, catalog: Catalog
) -> None:
    # small partitions and files: shuffles and several output files really happen
    settings.group_partition_rows, settings.parquet_file_rows, settings.parquet_row_group_rows = 40, 50, 20
    runner = Runner(settings, catalog)
    outcomes = {e: runner.run(_spec(tmp_path / "raw", f"mix-{e}"), engine=e) for e in ENGINES}  # one input
    tables = {e: _tables(catalog, settings, o) for e, o in outcomes.items()}
    local = outcomes["local"]
    mix = local.counts["mixture"]
    assert mix["sources"]["en"]["achieved"]["selected"]["samples"] < 149, "en is downsampled"
    assert mix["sources"]["zh"]["rule"]["passes"] >= 1, "zh is upsampled"
    assert len(tables["local"]["files"]) > 1
    digests = {}
    for engine in ENGINES:
        assert outcomes[engine].counts == local.counts, engine
        assert _rows(tables[engine]["data"], ["sample_id"]) == _rows(tables["local"]["data"], ["sample_id"]), engine
        assert _rows(tables[engine]["lineage"], ["sample_id", "step"]) == _rows(
            tables["local"]["lineage"], ["sample_id", "step"]
        ), engine
        release, _ = publish(catalog, settings, f"mix-{engine}@v1")
        digests[engine] = release.manifest["mixture"]
    assert digests["spark"] == digests["local"] == digests["ray"]


def test_the_decision_does_not_depend_on_how_the_input_is_split(
    tmp_path: Path, settings: Settings, catalog: Catalog
) -> None:
    runner = Runner(settings, catalog)
    settings.group_partition_rows = 7  # many partitions for the other group steps; the mixture sees all at once
    one = runner.run(_spec(tmp_path / "one", "split-1", files=1))
    many = runner.run(_spec(tmp_path / "many", "split-5", files=5))
    assert one.counts["mixture"] == many.counts["mixture"]
    a, b = _tables(catalog, settings, one), _tables(catalog, settings, many)
    cols = ["sample_id", "text", "source_dataset"]
    assert _rows(a["data"].select(cols), ["sample_id"]) == _rows(b["data"].select(cols), ["sample_id"])
