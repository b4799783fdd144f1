"""The ``lineage`` console command, run as a user runs it (a real subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from operators.schema import sample_id
from tests.conftest import write_jsonl


def lineage(home: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LINEAGE_HOME": str(home)}
    result = subprocess.run([sys.executable, "-m", "lineage", *args], env=env, capture_output=True, text=True)
    if check and result.returncode != 0:
        raise AssertionError(f"lineage {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result


def test_ingest_run_publish_show_sample_export(corpus: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    out = lineage(home, "ingest", str(corpus), "--dataset", "raw", "--id-field", "id").stdout
    assert "committed raw v1: 6 samples" in out and "invalid_json=1" in out

    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(
        "name: clean\ninputs:\n  - dataset: raw\noperators:\n  - name: exact_dedupe\noutput:\n  dataset: clean\n"
    )
    out = lineage(home, "run", str(pipeline)).stdout
    assert "exact_duplicate=2" in out and "committed clean v1: 4 samples" in out

    assert "published clean@v1" in lineage(home, "release", "publish", "clean@v1").stdout
    assert "already published" in lineage(home, "release", "publish", "clean@v1").stdout
    assert "clean@v1" in lineage(home, "release", "list").stdout
    show = lineage(home, "release", "show", "clean@v1").stdout
    assert "4 samples" in show and "xxh3-128" in show
    for kind in ("data", "lineage", "quarantine"):  # each table the release reads, at the version it pins
        assert f"{kind} table datasets/clean/{kind} at Delta version 0" in show

    export_dir = tmp_path / "export"
    lineage(home, "export", "clean@v1", "--out", str(export_dir))
    rows = [json.loads(line) for line in (export_dir / "clean-v1.jsonl").read_text().splitlines()]
    assert len(rows) == 4

    dup = sample_id("raw", "id:libc6-again")
    text = lineage(home, "sample", dup).stdout
    assert "sub/b.jsonl.gz" in text and "exact_duplicate" in text and "not in output" in text
    as_json = json.loads(lineage(home, "sample", dup, "--json").stdout)
    assert as_json["source"]["row"] == 0


def test_errors_are_one_clear_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    result = lineage(home, "release", "show", "nope@x", check=False)
    assert result.returncode == 4 and "release nope@x does not exist" in result.stderr  # NotFound
    assert "Traceback" not in result.stderr
    bad = lineage(home, "release", "publish", "not a ref", check=False)
    assert bad.returncode == 3 and "expected NAME@TAG" in bad.stderr  # Invalid
    write_jsonl(tmp_path / "d.jsonl", [{"text": "x"}])
    missing = lineage(home, "ingest", str(tmp_path / "nothing-here"), "--dataset", "d", check=False)
    assert missing.returncode == 4 and "no such file or folder" in missing.stderr  # NotFound
