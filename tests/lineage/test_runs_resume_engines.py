"""Spark and Ray runs resume inside ingest: a run of a multi-file input SIGKILLed in a task part-way through
(after partition 1's record), or after the engine returned, is taken back by ``lineage run`` again, keeping
its id; it redoes only the items without a trusted record (a torn one is redone) and commits the bytes an
uninterrupted run on the same engine commits (data files, Delta contents, lineage rows, release digest).
gc keeps its staging meanwhile."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from sqlalchemy import select

from lineage.catalog import Catalog, Run
from lineage.gc import collect_garbage
from lineage.releases import publish
from lineage.runs import Runner
from lineage.settings import Settings, get_settings
from pipelines.partitions import FOLDER
from pipelines.spec import PipelineSpec
from storage.layout import staging_prefix
from storage.tier import get_tier
from tests.support.cli import lineage_killed_at
from tests.support.fixtures_engines import ray_runtime, spark  # noqa: F401  (session fixtures)
from tests.support.helpers import write_jsonl
from tests.support.run_outputs import version_output

FILES = 4  # raw files, so four partitions
PIPELINE = """
name = "engines"
engine = "{engine}"
[[inputs]]
dataset = "raw"
path = "{corpus}"
id_field = "id"
[[operators]]
name = "quality"
params = {{ min_words = 2 }}
[[operators]]
name = "exact_dedupe"
[output]
dataset = "clean"
"""
# the killed CLI process starts its own Spark and Ray with one core, so tasks run one after another
ENGINE_TOML = """
parquet_file_rows = 4
parquet_row_group_rows = 2
[engine]
spark_master = "local[1]"
spark_conf = {{ "spark.sql.shuffle.partitions" = "2", "spark.driver.memory" = "1g" }}
ray_num_cpus = 1
ray_temp_dir = "{ray_tmp}"
"""


def _world(home: Path, tmp_path: Path, engine: str) -> tuple[Settings, Catalog, Path]:
    home.mkdir(parents=True, exist_ok=True)
    (home / "lineage.toml").write_text(ENGINE_TOML.format(ray_tmp=f"/tmp/lineage-ray-resume-{tmp_path.name[-8:]}"))
    get_settings.cache_clear()
    settings = get_settings()
    for f in range(FILES):  # duplicates across files, texts quality drops, a broken record to quarantine
        records = [{"id": f"{f}-{i}", "text": f"text number {i % 4}" if i % 3 else "short"} for i in range(7)]
        write_jsonl(tmp_path / "raw" / f"part-{f}.jsonl", records)
    with (tmp_path / "raw" / "part-2.jsonl").open("a") as fh:
        fh.write('{"id": "broken", "text": \n')
    pipeline = tmp_path / "p.toml"
    pipeline.write_text(PIPELINE.format(engine=engine, corpus=tmp_path / "raw"))
    return settings, Catalog(settings.catalog_url or ""), pipeline


def _digest(catalog: Catalog, settings: Settings, version: int) -> str:
    return publish(catalog, settings, f"clean@r{version}", version=version)[0].content_digest


@pytest.mark.usefixtures("spark", "ray_runtime")
@pytest.mark.parametrize(
    ("engine", "point"),
    [
        ("spark", "partition.1.recorded"),  # in a task: partition 1 recorded (and 0 before it, on one core)
        ("ray", "partition.1.recorded"),
        ("spark", "after_engine"),  # the output files written, nothing committed: every partition recorded
    ],
)
def test_a_spark_or_ray_run_killed_in_ingest_resumes_byte_identical(
    engine: str, point: str, home: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings, catalog, pipeline = _world(home, tmp_path, engine)
    try:
        full = Runner(settings, catalog).run(PipelineSpec.load(pipeline))  # uninterrupted: clean v1
        expected, expected_digest = version_output(settings, catalog, 1), _digest(catalog, settings, 1)

        lineage_killed_at(home, point, "run", str(pipeline))
        with catalog.session() as s:
            killed = s.scalars(select(Run.id).where(Run.id != full.run_id)).one()
        tier = get_tier(None, settings)
        records = Path(tier.path(staging_prefix(killed), FOLDER))
        recorded = sorted(int(p.stem) for p in records.glob("*.json"))
        if point == "after_engine":
            assert recorded == list(range(FILES)), recorded
        else:
            assert 1 in recorded and len(recorded) < FILES, recorded
        torn = next(i for i in recorded if i != 1) if len(recorded) > 1 else None
        if torn is not None:  # a torn record is not trusted: that partition is redone
            record = records / f"{torn}.json"
            record.write_bytes(record.read_bytes()[:-7])

        report = collect_garbage(catalog, settings)  # the killed run is abandoned, its staging kept: resumable
        assert killed in report.abandoned_runs
        assert not any(staging_prefix(killed) in f for f in report.deleted_files)

        with caplog.at_level(logging.WARNING, logger="lineage.resume"):
            rerun = Runner(settings, catalog).run(PipelineSpec.load(pipeline))
        assert "starting over" not in caplog.text
        reused = [i for i in recorded if i != torn]
        assert rerun.run_id == killed and rerun.version == 2
        assert rerun.counts["resumed"]["partitions"] == FILES
        assert rerun.counts["resumed"]["reused_partitions"] == len(reused) >= 1
        assert not Path(tier.path(staging_prefix(killed))).exists(), "a committed run's staging is deleted"

        again = version_output(settings, catalog, 2)
        assert again.keys() == expected.keys()
        for kind in expected:
            assert again[kind] == expected[kind], kind
        assert _digest(catalog, settings, 2) == expected_digest
        assert {k: v for k, v in rerun.counts.items() if k != "resumed"} == full.counts
    finally:
        catalog.dispose()
