"""The ``lineage`` console command, run as a user runs it (a real subprocess)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from operators.schema import sample_id
from tests.support.cli import lineage
from tests.support.helpers import write_jsonl


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


def one_line_error(result: subprocess.CompletedProcess[str], code: int) -> str:
    """The refusal a command printed: its class's exit code and exactly one line on stderr, no traceback."""
    assert result.returncode == code and "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def test_a_pipeline_file_the_spec_refuses_is_one_line(tmp_path: Path) -> None:
    """Every problem pydantic finds in a pipeline file, on one line with where it is (not pydantic's
    multi-line report); a file that does not parse (YAML as well as TOML) is refused the same way."""
    home = tmp_path / "home"
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "p"\n[[inputs]]\ndataset = "raw"\n[output]\ndataset = "out"\nowner = 3\nsurprise = 1\n')
    line = one_line_error(lineage(home, "run", str(bad), check=False), 3)  # Invalid
    assert f"pipeline file {bad}: " in line
    assert "output.owner: Input should be a valid string" in line and "output.surprise: Extra inputs" in line
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: p\ninputs: [\n")
    assert f"pipeline file {broken} does not parse" in one_line_error(lineage(home, "run", str(broken), check=False), 3)
    write_jsonl(tmp_path / "d.jsonl", [{"text": "x"}])
    ingest = lineage(home, "ingest", str(tmp_path / "d.jsonl"), "--dataset", "d", "--format", "jsnol", check=False)
    assert "input 'd': unknown format 'jsnol'" in one_line_error(ingest, 3)


def test_a_tier_misconfiguration_is_one_line(tmp_path: Path) -> None:
    """A tier whose credential variable is unset, and settings whose tiers are malformed: a refusal that
    names the fix, on one line."""
    home = tmp_path / "home"
    write_jsonl(tmp_path / "d.jsonl", [{"text": "some text"}])
    s3 = {"name": "ceph", "kind": "s3", "root": "s3://bucket/x", "credentials_env": {"access_key": "LL_UNSET_AK"}}
    env = {"LINEAGE_TIERS": json.dumps([s3]), "LL_UNSET_AK": ""}
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(
        f"name: p\ninputs:\n  - dataset: raw\n    path: {tmp_path / 'd.jsonl'}\noutput:\n  dataset: out\n  tier: ceph\n"
    )
    env.pop("LL_UNSET_AK")
    line = one_line_error(lineage(home, "run", str(pipeline), check=False, **env), 12)  # ConfigError
    assert "tier 'ceph': environment variable LL_UNSET_AK (access_key) is not set" in line
    malformed = one_line_error(
        lineage(
            home, "release", "publish", "x@y", check=False, LINEAGE_TIERS=json.dumps([{"name": "ceph", "kind": "s3"}])
        ),
        12,
    )
    assert "lineage settings: tiers.0.root: Field required" in malformed


def test_a_bug_in_a_command_is_a_traceback_not_a_refusal() -> None:
    """Only the errors tree (and the database's refusals) is a one-line refusal: a KeyError from a
    coding mistake propagates, so the CLI prints its traceback."""
    import pytest
    import typer

    from lineage.cli.app import guard
    from lineage.errors import NotFound

    with pytest.raises(KeyError, match="a bug"):
        guard(lambda: {}["a bug"])
    with pytest.raises(typer.Exit):
        guard(lambda: (_ for _ in ()).throw(NotFound("gone")))
