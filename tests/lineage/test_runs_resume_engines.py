"""Spark and Ray runs are not resumed: a rerun of a run SIGKILLed on either starts a new run (with a warning
saying so) and commits the same release as an uninterrupted run."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from sqlalchemy import select

from lineage.catalog import Catalog, Run
from lineage.releases import publish
from lineage.runs import Runner
from lineage.settings import Settings, get_settings
from pipelines.spec import PipelineSpec
from tests.support.cli import lineage_killed_at
from tests.support.fixtures_engines import ray_runtime, spark  # noqa: F401  (session fixtures)
from tests.support.helpers import write_jsonl

PIPELINE = """
name = "engines"
engine = "{engine}"
[[inputs]]
dataset = "raw"
path = "{corpus}"
id_field = "id"
[[operators]]
name = "exact_dedupe"
[output]
dataset = "clean"
"""
ENGINE_TOML = """
[engine]
spark_master = "local[1]"
spark_conf = {{ "spark.sql.shuffle.partitions" = "2", "spark.driver.memory" = "1g" }}
ray_num_cpus = 1
ray_temp_dir = "{ray_tmp}"
"""


@pytest.mark.usefixtures("spark", "ray_runtime")
@pytest.mark.parametrize("engine", ["spark", "ray"])
def test_a_killed_spark_or_ray_run_is_rerun_from_the_start(
    engine: str, home: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "lineage.toml").write_text(ENGINE_TOML.format(ray_tmp=f"/tmp/lineage-ray-resume-{tmp_path.name[-8:]}"))
    get_settings.cache_clear()
    settings: Settings = get_settings()
    for f in range(3):
        write_jsonl(
            tmp_path / "raw" / f"part-{f}.jsonl", [{"id": f"{f}-{i}", "text": f"text {i % 4}"} for i in range(6)]
        )
    pipeline = tmp_path / "p.toml"
    pipeline.write_text(PIPELINE.format(engine=engine, corpus=tmp_path / "raw"))
    catalog = Catalog(settings.catalog_url or "")
    try:
        lineage_killed_at(home, "after_engine", "run", str(pipeline))
        with catalog.session() as s:
            killed = s.scalars(select(Run.id)).one()
        with caplog.at_level(logging.WARNING, logger="lineage.resume"):
            rerun = Runner(settings, catalog).run(PipelineSpec.load(pipeline))
        assert rerun.run_id != killed
        assert f"run {killed} was interrupted on {engine}, which does not resume runs: starting over" in caplog.text
        assert rerun.row_count == 4 and "resumed" not in rerun.counts
        first = publish(catalog, settings, "clean@v1")[0].content_digest
        again = Runner(settings, catalog).run(PipelineSpec.load(pipeline))  # uninterrupted
        assert publish(catalog, settings, "clean@v2", version=again.version)[0].content_digest == first
    finally:
        catalog.dispose()
