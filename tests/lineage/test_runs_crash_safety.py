"""SIGKILL a run at its riskiest points: no partial version is visible, and a rerun is clean."""

from __future__ import annotations

from pathlib import Path

import pytest
from deltalake import DeltaTable
from sqlalchemy import select

from lineage.catalog import Catalog, DatasetVersion, Run
from lineage.gc import collect_garbage
from lineage.releases import publish
from lineage.runs import Runner
from lineage.settings import Settings
from pipelines.spec import PipelineSpec
from storage.delta import version_dataset
from storage.tier import get_tier
from tests.support.cli import lineage_killed_at

PIPELINE = """
name = "crashy"
[[inputs]]
dataset = "raw"
path = "{corpus}"
id_field = "id"
[[operators]]
name = "exact_dedupe"
[output]
dataset = "clean"
"""


def run_and_kill(pipeline: Path, home: Path, point: str) -> None:
    lineage_killed_at(home, point, "run", str(pipeline))


@pytest.mark.parametrize("point", ["local.data_written", "after_engine", "after_delta_commit"])
def test_killed_run_leaves_no_version_and_rerun_is_clean(
    point: str, corpus: Path, home: Path, settings: Settings, catalog: Catalog, tmp_path: Path
) -> None:
    pipeline = tmp_path / "p.toml"
    pipeline.write_text(PIPELINE.format(corpus=corpus))
    runner = Runner(settings, catalog)
    first = runner.run(PipelineSpec.load(pipeline))
    publish(catalog, settings, "clean@v1")

    run_and_kill(pipeline, home, point)

    with catalog.session() as s:
        assert [v.version for v in s.scalars(select(DatasetVersion))] == [1], "no partial version is visible"
        killed = s.scalars(select(Run).where(Run.id != first.run_id)).one()
        assert killed.status == "running"
        dv = s.scalars(select(DatasetVersion)).one()
        tier = get_tier(dv.tier, settings)
        table_uri = tier.uri(dv.data_path)
        released = version_dataset(tier, dv.data_path, dv.data_delta_version).to_table()
    if point == "after_delta_commit":  # the orphan Delta commit exists but nobody reads it
        assert DeltaTable(table_uri).version() > dv.data_delta_version
    orphan_dir = Path(table_uri) / f"run-{killed.id}"
    assert orphan_dir.exists()

    report = collect_garbage(catalog, settings)
    assert killed.id in report.abandoned_runs
    assert not any(orphan_dir.glob("*.parquet")), "gc removed the dead run's files"
    assert report.kept_files >= 3
    with catalog.session() as s:
        assert s.get(Run, killed.id).status == "failed"
        dv = s.scalars(select(DatasetVersion)).one()
        again = version_dataset(get_tier(dv.tier, settings), dv.data_path, dv.data_delta_version).to_table()
    assert again.equals(released), "the published release is intact after gc"

    rerun = runner.run(PipelineSpec.load(pipeline))
    assert rerun.version == 2 and rerun.row_count == first.row_count
    release, created = publish(catalog, settings, "clean@v1")
    assert not created, "the rerun produced byte-identical content"
