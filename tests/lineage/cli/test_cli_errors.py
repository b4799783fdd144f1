"""Every failure a user can cause is one line on stderr and the exit code of its row in the errors table,
never a traceback: a catalog that cannot be reached, a catalog URL SQLAlchemy cannot use, and a TOML file
that does not parse (the settings file, a release config), each named in the line. Run as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lineage import errors
from tests.support.fixtures_postgres import free_port

ROOT = Path(__file__).resolve().parents[3]
CONFIG = errors.BY_CODE[errors.ConfigError.code].exit_code  # 12
INVALID = errors.BY_CODE[errors.Invalid.code].exit_code  # 3


def one_line_error(tmp_path: Path, *args: str, code: int, **env_vars: str) -> str:
    """Run ``lineage ARGS``; it must exit with ``code`` and print exactly one ``error:`` line, no traceback."""
    env = {k: v for k, v in os.environ.items() if k not in ("LINEAGE_CONFIG", "LINEAGE_CATALOG_URL")}
    env.update({"LINEAGE_HOME": str(tmp_path / "home"), **env_vars})
    result = subprocess.run([sys.executable, "-m", "lineage", *args], cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.returncode == code and "Traceback" not in result.stderr, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


@pytest.mark.parametrize("verb", [["datasets"], ["release", "list"], ["gc", "--dry-run"]])
def test_an_unreachable_catalog_is_one_line(tmp_path: Path, verb: list[str]) -> None:
    """A closed PostgreSQL port (through the service, and through a verb that opens the catalog itself)."""
    port = free_port()  # nothing listens on it
    url = f"postgresql+psycopg://lineage:s3cret@127.0.0.1:{port}/lineage"
    line = one_line_error(tmp_path, *verb, code=CONFIG, LINEAGE_CATALOG_URL=url)
    assert f"cannot open the catalog postgresql+psycopg://lineage:***@127.0.0.1:{port}/lineage" in line
    assert "s3cret" not in line  # the password stays out of logs


def test_a_postgres_url_says_which_url_to_use(tmp_path: Path) -> None:
    """SQLAlchemy has no dialect named ``postgres`` (the name Heroku and libpq URLs use)."""
    line = one_line_error(tmp_path, "datasets", code=CONFIG, LINEAGE_CATALOG_URL="postgres://u:pw@127.0.0.1/db")
    assert "catalog URL postgres://u:***@127.0.0.1/db" in line and "use postgresql+psycopg://" in line


def test_a_settings_file_that_does_not_parse_is_named(tmp_path: Path) -> None:
    config = tmp_path / "lineage.toml"
    config.write_text('default_tier = "local"\ntiers = [\n')
    line = one_line_error(tmp_path, "datasets", code=CONFIG, LINEAGE_CONFIG=str(config))
    assert f"settings file {config} does not parse" in line


@pytest.mark.parametrize(
    ("toml", "problem"),
    [
        ('defualt_tier = "cold"\n', "no such setting: defualt_tier"),  # misspelt: it used to change nothing
        ('[[tiers]]\nname = "cold"\nkindd = "s3"\nroot = "/x"\n', "no such setting: tiers.0.kindd"),
        ("[placement]\ncold_after = 3\n", "no such setting: placement.cold_after"),
        ('[[tiers]]\nname = "cold"\n', "(or LINEAGE_* variables): tiers.0.root: Field required"),
    ],
)
def test_a_settings_file_with_a_key_no_setting_has_or_a_bad_value_is_named(
    tmp_path: Path, toml: str, problem: str
) -> None:
    config = tmp_path / "lineage.toml"
    config.write_text(toml)
    line = one_line_error(tmp_path, "datasets", code=CONFIG, LINEAGE_CONFIG=str(config))
    assert line.startswith(f"error: settings file {config}") and problem in line, line


@pytest.mark.parametrize(
    ("name", "value"),
    [("LINEAGE_TIERS", '[{"name": "cold"'), ("LINEAGE_ENGINE__SPARK_CONF", "spark.executor.memory=8g")],
)
def test_a_variable_that_should_hold_json_and_does_not_is_named(tmp_path: Path, name: str, value: str) -> None:
    """It was a traceback (pydantic-settings' ``SettingsError``, which nothing translated)."""
    line = one_line_error(tmp_path, "datasets", code=CONFIG, **{name: value})
    assert line.startswith(f"error: {name} must be JSON (") and value not in line, line  # no credential echoed


def test_a_request_body_the_service_refuses_is_one_line_naming_each_field(tmp_path: Path) -> None:
    """pydantic's own text for a refused body was several lines (and a link to its docs)."""
    args = ("takedown", "request", "--kind", "nope", "--reason", "", "--source", "raw")
    line = one_line_error(tmp_path, *args, code=INVALID)
    assert line.startswith("error: TakedownCreate: ") and "kind: Input should be 'copyright'" in line, line
    assert "; reason: String should have at least 1 character" in line and "pydantic.dev" not in line


def test_an_output_path_that_cannot_be_used_is_one_line_before_any_work(tmp_path: Path) -> None:
    """Each was an OSError's traceback: the report's only after it was made."""
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    data, more = tmp_path / "in.jsonl", tmp_path / "more.jsonl"
    for path in (data, more):
        path.write_text('{"text": "one document"}\n')
    (tmp_path / "folder").mkdir()
    for args, why in [
        (("dedupe", str(data), "--output", str(a_file / "out.jsonl")), f"{a_file} is a file"),
        (("dedupe", str(data), "--output", str(a_file / "sub" / "o.jsonl")), f"output folder {a_file / 'sub'}"),
        (("dedupe", str(data), str(more), "--output", str(a_file)), f"{a_file} is a file"),
        (("release", "report", "x@y", "--out", str(a_file / "r.html")), f"{a_file} is a file"),
        (("release", "report", "x@y", "--out", str(tmp_path / "folder")), "is a folder: name the output file"),
    ]:
        line = one_line_error(tmp_path, *args, code=INVALID)
        assert why in line, (args, line)
    assert not list((tmp_path / "folder").iterdir()) and a_file.read_text() == "x"


def test_a_setting_out_of_range_is_one_line_before_any_work(tmp_path: Path) -> None:
    """LINEAGE_BATCH_ROWS=0 failed an ingest half-way with Arrow's traceback."""
    data = tmp_path / "in.jsonl"
    data.write_text('{"text": "one document"}\n')
    line = one_line_error(tmp_path, "ingest", str(data), "--dataset", "d", code=CONFIG, LINEAGE_BATCH_ROWS="0")
    assert "batch_rows: Input should be greater than or equal to 1" in line, line
    assert not (tmp_path / "home" / "data").exists()
    # lineage serve --port took any number: 99999 ended in a traceback and a segfault
    line = one_line_error(tmp_path, "serve", "--port", "99999", code=CONFIG)
    assert "api_port: Input should be less than or equal to 65535" in line, line


def test_a_release_config_that_does_not_parse_or_is_refused_is_named(tmp_path: Path) -> None:
    broken = tmp_path / "broken.toml"
    broken.write_text("[gate\nmin_samples = 1\n")
    line = one_line_error(tmp_path, "release", "publish", "clean@v1", "--gate", str(broken), code=INVALID)
    assert f"release config {broken} does not parse" in line
    refused = tmp_path / "refused.toml"
    refused.write_text('[gate]\nmin_samples = "many"\n')
    line = one_line_error(tmp_path, "release", "publish", "clean@v1", "--gate", str(refused), code=INVALID)
    assert f"release config {refused}: gate config: min_samples" in line
