import os
import subprocess
import sys
from pathlib import Path


def test_a_skipped_test_fails_the_session(tmp_path: Path) -> None:
    """The suite's own rule: components that are missing must not pass as skips."""
    (tmp_path / "test_x.py").write_text("import pytest\n\ndef test_s():\n    pytest.skip('no server')\n")
    conftest = Path(__file__).parent / "conftest.py"
    (tmp_path / "conftest.py").write_text(conftest.read_text())
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},  # conftest imports tests.*
    )
    assert result.returncode == 1, result.stdout
    assert "only HDFS tests may skip" in result.stdout
