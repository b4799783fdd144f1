"""Session-scoped engine runtimes: one real local Spark session and one real Ray runtime per test run.

Engines reuse an active session/runtime and never stop one they did not start, so every test
shares these two. Import the fixtures into a test module (or a conftest) to use them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from lineage.settings import EngineConfig, Settings


def _runtime_settings(root: Path) -> Settings:
    engine = EngineConfig(
        spark_master="local[2]",
        spark_conf={"spark.sql.shuffle.partitions": "4", "spark.driver.memory": "1g"},
        ray_num_cpus=2,
        ray_temp_dir=f"/tmp/lineage-ray-test-{os.getpid()}",
    )
    return Settings(home=root, engine=engine)


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from pipelines.engines.spark import spark_session

    session, created = spark_session(_runtime_settings(tmp_path_factory.mktemp("spark-home")).engine)
    yield session
    if created:
        session.stop()


@pytest.fixture(scope="session")
def ray_runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    import ray

    from pipelines.engines.ray import ray_runtime as start

    settings = _runtime_settings(tmp_path_factory.mktemp("ray-home"))
    created = start(settings.engine)
    yield None
    if created:
        ray.shutdown()
        shutil.rmtree(settings.engine.ray_temp_dir or "", ignore_errors=True)
