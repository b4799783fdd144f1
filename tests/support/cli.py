"""The lineage command in a subprocess, as a user runs it, against a given LINEAGE_HOME."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def lineage(home: Path, *args: str, check: bool = True, **env_vars: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LINEAGE_HOME": str(home), **env_vars}
    result = subprocess.run([sys.executable, "-m", "lineage", *args], env=env, capture_output=True, text=True)
    if check and result.returncode != 0:
        raise AssertionError(f"lineage {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result
