"""The lineage command in a subprocess, as a user runs it, against a given LINEAGE_HOME."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def lineage(home: Path, *args: str, check: bool = True, **env_vars: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LINEAGE_HOME": str(home), **env_vars}
    result = subprocess.run([sys.executable, "-m", "lineage", *args], env=env, capture_output=True, text=True)
    if check and result.returncode != 0:
        raise AssertionError(f"lineage {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result


_LOADING = """
import json, sys
from lineage.cli.main import main
args, modules = json.loads(sys.argv[1]), json.loads(sys.argv[2])
sys.argv = ["lineage", *args]
try:
    main()
except SystemExit as exit:
    assert not exit.code, exit.code
print(json.dumps([m for m in modules if m in sys.modules]))
"""


def lineage_loading(home: Path, args: list[str], modules: tuple[str, ...]) -> tuple[str, list[str]]:
    """``lineage ARGS`` as the console script runs it (``main``, in a process of its own): its output, and
    which of ``modules`` it had imported by the end."""
    env = {**os.environ, "LINEAGE_HOME": str(home)}
    run = subprocess.run(
        [sys.executable, "-c", _LOADING, json.dumps(args), json.dumps(modules)], env=env, capture_output=True, text=True
    )
    if run.returncode != 0:
        raise AssertionError(f"lineage {' '.join(args)} failed:\n{run.stdout}\n{run.stderr}")
    *out, loaded = run.stdout.strip().splitlines()
    return "\n".join(out), json.loads(loaded)


def lineage_killed_at(home: Path, point: str, *args: str) -> None:
    """``lineage ARGS`` paused at the named point (:mod:`pipelines.faults`), then SIGKILLed there. A point in
    a Spark or Ray task pauses a worker process: the driver is killed first (so it cannot see the task fail
    and clean up), then that worker."""
    marker = home.parent / f"paused-{point}"
    marker.unlink(missing_ok=True)  # an earlier kill's marker: this process has not paused yet
    env = {**os.environ, "LINEAGE_HOME": str(home), "LINEAGE_PAUSE_AT": point, "LINEAGE_PAUSE_MARKER": str(marker)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "lineage", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    deadline = time.monotonic() + 120
    while not marker.exists():
        if proc.poll() is not None:
            out = proc.stdout.read().decode() if proc.stdout else ""
            raise AssertionError(f"lineage {' '.join(args)} ended before reaching {point}: {out}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"lineage {' '.join(args)} never reached {point}")
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    paused = int(marker.read_text())
    if paused != proc.pid:
        with contextlib.suppress(ProcessLookupError):
            os.kill(paused, signal.SIGKILL)
