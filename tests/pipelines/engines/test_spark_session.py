"""A new local Spark session reaches its Python workers through the session's conf and leaves the
caller's environment alone (it used to set ``PYTHONPATH`` and friends in ``os.environ``, which every
child process the caller started afterwards inherited: pip then found the tree's egg-info)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = """
import json, os, sys
from pipelines.config import EngineConfig
from pipelines.engines.distributed import project_path
from pipelines.engines.spark import spark_session

before = dict(os.environ)
session, created = spark_session(EngineConfig(spark_master="local[1]", spark_conf={"spark.driver.memory": "512m"}))
probe = session.sparkContext.parallelize([0], 1).map(lambda _: (__import__("sys").path, __import__("sys").executable))
paths, exe = probe.collect()[0]
changed = sorted(k for k in set(before) | set(os.environ) if before.get(k) != os.environ.get(k))
seen = {"worker_sees_project": project_path() in paths, "worker_python": exe}
print(json.dumps({"created": created, "changed": changed, **seen}))
session.stop()
"""


def test_a_new_session_changes_nothing_in_the_callers_environment(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_PYTHON", "SPARK_LOCAL_IP")}
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(result.stdout.strip().splitlines()[-1])
    # pyspark itself sets SPARK_AUTH_SOCKET_TIMEOUT and SPARK_BUFFER_SIZE when a context starts; these were ours
    assert found["created"] and not {"PYTHONPATH", "PYSPARK_PYTHON", "SPARK_LOCAL_IP"} & set(found["changed"]), found
    assert found["worker_sees_project"]  # the project reached the workers through spark.executorEnv.PYTHONPATH
    assert found["worker_python"] == sys.executable  # this interpreter (with pyarrow), not the system's python3
