"""The layer contract (pyproject ``[tool.importlinter]``): it holds, and it catches an upward import."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("storage", "operators", "pipelines", "lineage", "api")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports with the repo's contract over the packages in ``tree`` (a copy shadows the
    installed tree: the editable-install finder comes after ``PYTHONPATH`` on the import path)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )


def test_the_layers_hold() -> None:
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_lower_layer_importing_a_higher_one_breaks_the_contract(tmp_path: Path) -> None:
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    layout = tmp_path / "storage" / "layout.py"
    layout.write_text(layout.read_text() + "\nimport lineage.service.core  # noqa: E402,F401\n")
    result = lint_imports(tmp_path)
    assert result.returncode == 1, result.stdout
    assert "storage is not allowed to import lineage.service" in result.stdout
