"""The documented takedown example (``examples/takedown.sh``, the README's "Takedown" section) as a user runs
it: ``lineage demo`` on a slice of the bundled corpus, then the script, in processes of their own."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

from lineage.client import Client
from lineage.settings import get_settings
from tests.support.cli import lineage

ROOT = Path(__file__).parents[3]


def test_the_takedown_example_removes_one_source_package_from_the_demo_release(home: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    for lang in ("en", "zh"):
        with gzip.open(ROOT / "examples" / "data" / f"debian_{lang}.jsonl.gz", "rt") as src:
            lines = [next(src) for _ in range(400)]
        with gzip.open(data / f"debian_{lang}.jsonl.gz", "wt") as out:
            out.writelines(lines)
    lineage(home, "demo", "--data-dir", str(data))
    env = {**os.environ, "LINEAGE_HOME": str(home), "LINEAGE": f"{sys.executable} -m lineage"}
    env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"
    done = subprocess.run(
        ["bash", str(ROOT / "examples" / "takedown.sh"), "abiword"], env=env, capture_output=True, text=True, cwd=ROOT
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "debian-clean@demo withdrawn → debian-clean@demo-td1" in done.stdout
    assert "takedown request 1: purged" in done.stdout
    assert "reading debian-clean@demo:" in done.stdout and "use its successor debian-clean@demo-td1" in done.stdout

    get_settings.cache_clear()
    with Client(settings=get_settings()) as client:
        old, new = client.get_release("debian-clean@demo"), client.get_release("debian-clean@demo-td1")
        assert (old.state, old.successor) == ("withdrawn", new.ref) and new.row_count < old.row_count
        rows = client.export_release(new.ref, tmp_path / "out")
        assert '"source_package": "abiword"' not in Path(rows.path).read_text()
