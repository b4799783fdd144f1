"""A run's integrity rules hold on every engine: unique ids from convert on, output == what the last step kept."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import select

from lineage.catalog import Catalog, DatasetVersion, Release, Run
from lineage.runs import Runner
from lineage.settings import Settings
from pipelines.engines import base as engines
from pipelines.integrity import RunError
from pipelines.partitions import FOLDER
from pipelines.spec import PipelineSpec
from storage.layout import staging_prefix
from storage.tier import get_tier
from tests.support import engine_corpus
from tests.support.fixtures_engines import ray_runtime, spark  # noqa: F401  (session fixtures)

ENGINES = ("local", "spark", "ray")


def _assert_nothing_committed(settings: Settings, catalog: Catalog, dataset: str, error: str) -> None:
    with catalog.session() as s:
        assert s.scalars(select(DatasetVersion)).all() == []
        assert s.scalars(select(Release)).all() == []
        (run,) = s.scalars(select(Run)).all()
        assert run.status == "failed" and error in run.error
    tier = get_tier(None, settings)
    for table in ("data", "lineage", "quarantine"):
        assert not Path(tier.path(f"datasets/{dataset}/{table}/_delta_log")).exists(), f"{table} was committed"


@pytest.mark.usefixtures("spark", "ray_runtime")
@pytest.mark.parametrize("engine", ENGINES)
def test_same_file_as_two_inputs_fails_before_dedupe_can_drop_both_copies(
    engine: str, tmp_path: Path, settings: Settings, catalog: Catalog
) -> None:
    """Issue #15 item 2: exact_dedupe used to drop both copies of every id and commit 0 samples."""
    raw = tmp_path / "raw" / "a.jsonl"
    raw.parent.mkdir()
    raw.write_text("".join(json.dumps({"text": f"document {i} has a few words"}) + "\n" for i in range(50)))
    twice = {"dataset": "web", "path": str(raw)}
    spec = PipelineSpec.model_validate(
        {"name": "twice", "inputs": [twice, twice], "operators": [{"name": "exact_dedupe"}], "output": {"dataset": "o"}}
    )
    with pytest.raises(RunError, match="duplicate sample_id values after convert: 50 id") as failed:
        Runner(settings, catalog).run(spec, engine=engine)
    # the error names both copies: which input, dataset, file and row each came from
    assert re.search(r"\(input 1: web/a\.jsonl row (\d+); input 2: web/a\.jsonl row \1\)", str(failed.value))
    _assert_nothing_committed(settings, catalog, "o", "duplicate sample_id")
    if engine != "local":  # only the recorded partitions stay, as a failed run's do (gc removes them later)
        with catalog.session() as s:
            (run_id,) = s.scalars(select(Run.id)).all()
        tier = get_tier(None, settings)
        kept = Path(tier.path(staging_prefix(run_id), FOLDER))
        leftovers = [p for p in Path(tier.path("")).rglob("*.parquet") if not p.is_relative_to(kept)]
        assert leftovers == [], f"{engine} left files behind: {leftovers}"


@pytest.mark.usefixtures("spark", "ray_runtime")
@pytest.mark.parametrize("engine", ENGINES)
def test_a_run_whose_output_lost_samples_commits_nothing(
    engine: str, tmp_path: Path, settings: Settings, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    lossy = replace(engines.ENGINES[engine], module="tests.support.failing_operators", cls=f"Lossy{engine.title()}")
    monkeypatch.setitem(engines.ENGINES, f"lossy-{engine}", lossy)
    settings.group_partition_rows, settings.parquet_file_rows, settings.parquet_row_group_rows = 40, 50, 20
    raw = engine_corpus.build(tmp_path / "raw", docs=60)
    spec = PipelineSpec.model_validate(
        {
            "name": "lossy",
            "inputs": [{"dataset": "raw", "path": str(raw), "id_field": "id"}],
            "operators": [{"name": "exact_dedupe"}],
            "output": {"dataset": "o"},
        }
    )
    with pytest.raises(RunError, match=r"internal error: the engine wrote \d+ samples but the lineage of step 1"):
        Runner(settings, catalog).run(spec, engine=f"lossy-{engine}")
    _assert_nothing_committed(settings, catalog, "o", "internal error")
