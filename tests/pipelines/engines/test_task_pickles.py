"""What a distributed run ships to its executors: the tasks carry no catalog URL and no service token.

Spark and Ray pickle every task (with cloudpickle) to send it to an executor, whose logs, spill
files and object store are not the driver's. A task carries a
:class:`pipelines.config.ExecutionConfig`, never the whole settings.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import ray.cloudpickle
from pydantic import SecretStr
from pyspark import cloudpickle as spark_cloudpickle

from lineage.catalog import Catalog
from lineage.runs import Runner
from lineage.settings import Settings
from pipelines.engines import base as engines
from pipelines.engines.ray import RayEngine
from pipelines.engines.spark import SparkEngine
from pipelines.spec import PipelineSpec
from tests.support import engine_corpus as corpus
from tests.support.fixtures_engines import ray_runtime, spark  # noqa: F401  (session fixtures)

CATALOG_PASSWORD = "catalog-pw-7f3e9a"
SERVICE_TOKEN = "llt_service-token-c41d"
PRIMITIVES = ("run_items", "run_groups", "run_map", "run_filtered", "run_cluster", "run_sorted")
SHIPPED: list[tuple[str, bytes]] = []  # (primitive, pickled task) of the last run


class _Recording:
    """A real engine that also pickles each task it is handed, with the pickler its engine ships it with."""

    dumps: Any

    def __getattribute__(self, name: str) -> Any:
        attr = super().__getattribute__(name)
        if name not in PRIMITIVES:
            return attr

        def recorded(*args: Any, **kwargs: Any) -> Any:
            SHIPPED.append((name, type(self).dumps(kwargs.get("task", args[-1] if args else None))))
            return attr(*args, **kwargs)

        return recorded


class RecordingSpark(_Recording, SparkEngine):
    name = "recording-spark"
    dumps = staticmethod(spark_cloudpickle.dumps)


class RecordingRay(_Recording, RayEngine):
    name = "recording-ray"
    dumps = staticmethod(ray.cloudpickle.dumps)


@pytest.mark.usefixtures("spark", "ray_runtime")
@pytest.mark.parametrize("engine", ["spark", "ray"])
def test_tasks_shipped_to_executors_carry_no_catalog_url_or_service_token(
    engine: str, tmp_path: Path, settings: Settings, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"recording-{engine}"
    monkeypatch.setitem(
        engines.ENGINES, name, replace(engines.ENGINES[engine], module=__name__, cls=f"Recording{engine.title()}")
    )
    secret = settings.model_copy(
        update={
            "catalog_url": f"postgresql+psycopg://ledger:{CATALOG_PASSWORD}@db.internal/ledger",
            "service_token": SecretStr(SERVICE_TOKEN),
            # several partitions, as in the parity tests (one partition takes another path on Ray)
            "group_partition_rows": 40,
            "parquet_file_rows": 50,
            "parquet_row_group_rows": 20,
        }
    )
    raw = corpus.build(tmp_path / "raw", docs=60)
    spec = PipelineSpec.model_validate(
        {
            "name": "shipped",
            "inputs": [{"dataset": "raw", "path": str(raw), "id_field": "id"}],
            # every kind of task: ingest, group (exact), sketch and cluster (minhash), filter, sort
            "operators": [{"name": "exact_dedupe"}, {"name": "minhash_dedupe"}, {"name": "quality"}],
            "output": {"dataset": "o"},
        }
    )
    SHIPPED.clear()
    outcome = Runner(secret, catalog).run(spec, engine=name)  # the catalog given here; the URL is only a value
    assert outcome.row_count > 0
    assert {primitive for primitive, _ in SHIPPED} == set(PRIMITIVES)
    for primitive, payload in SHIPPED:
        assert CATALOG_PASSWORD.encode() not in payload, f"a {primitive} task ships the catalog URL"
        assert SERVICE_TOKEN.encode() not in payload, f"a {primitive} task ships the service token"
