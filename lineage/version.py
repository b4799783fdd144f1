"""The code version recorded on every run: package version plus the git commit when known."""

from __future__ import annotations

import subprocess
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path


@lru_cache(maxsize=1)
def code_version() -> str:
    try:
        base = version("lineage-ledger")
    except PackageNotFoundError:
        base = "0+unknown"
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
        return f"{base}+g{sha}"
    except (OSError, subprocess.SubprocessError):
        return base
