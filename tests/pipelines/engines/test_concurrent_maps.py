"""The local engine runs a segment of concurrent map steps on a thread per core, with the same output."""

from __future__ import annotations

import threading
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable
from sqlalchemy import select

from lineage.catalog import Catalog, DatasetVersion
from lineage.runs import Runner
from lineage.settings import Settings
from operators import registry
from pipelines.spec import PipelineSpec
from storage.tier import get_tier
from tests.support import engine_corpus
from tests.support.thread_operators import ConcurrentRecorder, SerialRecorder


@pytest.fixture(autouse=True)
def _recorders() -> None:
    registry.register(ConcurrentRecorder.name, "tests.support.thread_operators:ConcurrentRecorder")
    registry.register(SerialRecorder.name, "tests.support.thread_operators:SerialRecorder")
    _reset()


def _reset() -> None:
    for recorder in (ConcurrentRecorder, SerialRecorder):
        recorder.seen.clear()
        recorder.started.clear()


def _run(raw: Path, settings: Settings, catalog: Catalog, output: str, cores: int) -> dict[str, pa.Table]:
    """The run's committed data and lineage (without run ids), sorted."""
    spec = PipelineSpec.model_validate(
        {
            "name": "threads",
            "inputs": [{"dataset": "raw", "path": str(raw), "id_field": "id", "convert": {"batch_rows": 8}}],
            "operators": [
                {"name": "concurrent_recorder", "params": {"label": "first"}},  # in the partitions
                {"name": "exact_dedupe"},
                {"name": "concurrent_recorder", "params": {"label": "after"}},  # after the barrier
                {"name": "quality"},
                {"name": "minhash_dedupe"},
                {"name": "serial_recorder", "params": {"label": "serial"}},  # a segment of its own
            ],
            "output": {"dataset": output},
        }
    )
    run_settings = settings.model_copy(update={"cores": cores, "batch_rows": 8})
    outcome = Runner(run_settings, catalog).run(spec, engine="local")
    with catalog.session() as s:
        dv = s.scalars(select(DatasetVersion).where(DatasetVersion.run_id == outcome.run_id)).one()
        tier = get_tier(dv.tier, settings)
        tables = {
            "data": DeltaTable(tier.uri(dv.data_path)).to_pyarrow_table().sort_by("sample_id"),
            "lineage": DeltaTable(tier.uri(dv.lineage_path))
            .to_pyarrow_table()
            .drop_columns(["run_id"])
            .sort_by([("sample_id", "ascending"), ("step", "ascending")]),
        }
    return tables


def test_concurrent_map_steps_use_a_thread_per_core_and_give_the_same_output(
    tmp_path: Path, settings: Settings, catalog: Catalog
) -> None:
    raw = engine_corpus.build(tmp_path / "raw", docs=60)
    one = _run(raw, settings, catalog, "one-core", cores=1)
    on_one = set(ConcurrentRecorder.seen)
    _reset()
    two = _run(raw, settings, catalog, "two-cores", cores=2)

    main = threading.main_thread().name
    assert {thread for _, thread in on_one} == {main}
    for label in ("first", "after"):
        threads = {thread for step, thread in ConcurrentRecorder.seen if step == label}
        assert main not in threads and len(threads) == 2, (label, threads)
    # a step that does not say it may run concurrently keeps its segment on this thread
    assert {thread for _, thread in SerialRecorder.seen} == {main}
    assert two["data"].drop_columns(["source_uri"]).equals(one["data"].drop_columns(["source_uri"]))
    assert two["lineage"].equals(one["lineage"])
