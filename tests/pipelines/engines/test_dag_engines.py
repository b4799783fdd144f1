"""The same pipeline of stages gives the same release on the in-process, Spark and Ray engines (issue #20,
item 6): every stage's version holds the same rows and lineage in the same part files (names, rows, and
for data the bytes), and the published releases of the merge have one ``content_digest``: the same files,
the same mixture and repeat rules.

On Spark and Ray the two stages that read nothing of each other run at once; in process, in turn."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import xxhash
from sqlalchemy import select

from lineage.catalog import Catalog, DatasetVersion, Run
from lineage.pipeline_runs import CONCURRENT_ENGINES, PipelineRunner
from lineage.releases import publish
from lineage.settings import Settings
from pipelines.dag import parse_dag
from storage.delta import version_dataset
from storage.tier import get_tier
from tests.support.dag_pipelines import dag_dict, write_corpus
from tests.support.fixtures_engines import ray_runtime, spark  # noqa: F401  (session fixtures)
from tests.support.part_files import part_files

ENGINES = ("local", "spark", "ray")


def _tables(catalog: Catalog, settings: Settings, run_id: str) -> dict[str, Any]:
    with catalog.session() as s:
        dv = s.scalars(select(DatasetVersion).where(DatasetVersion.run_id == run_id)).one()
        tier = get_tier(dv.tier, settings)
        data = version_dataset(tier, dv.data_path, dv.data_delta_version).to_table()
        lineage = version_dataset(tier, dv.lineage_path, dv.lineage_delta_version).to_table().drop_columns(["run_id"])
        files = {  # cut by content alone (pipelines.engines.sorted_files); lineage bytes differ by the run id
            "data": part_files(tier, dv.data_path, dv.data_delta_version),
            "lineage": part_files(tier, dv.lineage_path, dv.lineage_delta_version, checksums=False),
        }
    return {"data": _rows(data, ["sample_id"]), "lineage": _rows(lineage, ["sample_id", "step"]), "files": files}


def _rows(table: pa.Table, keys: list[str]) -> list[dict]:
    return table.sort_by([(k, "ascending") for k in keys]).to_pylist()


@pytest.mark.usefixtures("spark", "ray_runtime")
def test_the_same_dag_gives_the_same_release_on_every_engine(
    tmp_path: Path, settings: Settings, catalog: Catalog
) -> None:
    settings.group_partition_rows, settings.parquet_file_rows = 20, 30  # several partitions and output files
    paths = write_corpus(tmp_path / "raw", files=3)
    runner = PipelineRunner(settings, catalog)
    outcomes = {e: runner.run(parse_dag(dag_dict(paths, f"dag-{e}", f"mixed-{e}"), None), engine=e) for e in ENGINES}
    tables = {e: [_tables(catalog, settings, st.run_id or "") for st in o.stages] for e, o in outcomes.items()}
    assert [st.action for st in outcomes["local"].stages] == ["run"] * 3
    merged = tables["local"][2]["data"]
    assert {r["source_dataset"] for r in merged} == {"en", "zh"}
    dropped = [r for r in tables["local"][2]["lineage"] if r["verdict"] == "dropped"]
    assert {r["operator"] for r in dropped} == {"exact_dedupe", "mixture"}, "the merge dedupes across sources and mixes"
    for engine, outcome in outcomes.items():  # the two clean stages read nothing of each other
        clean = [_interval(catalog, st.run_id or "") for st in outcome.stages[:2]]
        overlap = clean[0][0] < clean[1][1] and clean[1][0] < clean[0][1]
        assert overlap == (engine in CONCURRENT_ENGINES), (engine, clean)  # at once on a cluster, in turn in process
    assert len(tables["local"][2]["files"]["data"]) > 1, "several part files"
    served = {}
    for engine in ENGINES:
        assert tables[engine] == tables["local"], engine
        release, _ = publish(catalog, settings, f"mixed-{engine}@v1")
        m = release.manifest
        mixture = json.dumps(m["mixture"], sort_keys=True).replace(f"mixed-{engine}-", "mixed-")  # the inputs' names
        served[engine] = (_digest(tables[engine][2]["data"]), m["row_count"], m["schema"], mixture)
        served[engine] += (release.content_digest,)
    assert served["spark"] == served["local"] == served["ray"]


def _interval(catalog: Catalog, run_id: str) -> tuple[datetime, datetime]:
    with catalog.session() as s:
        run = s.get(Run, run_id)
        assert run is not None and run.ended_at is not None
        return run.started_at, run.ended_at


def _digest(rows: list[dict]) -> str:
    return xxhash.xxh3_128_hexdigest(json.dumps(rows, sort_keys=True, default=str).encode())
