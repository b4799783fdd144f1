"""Where settings come from: keyword arguments over ``LINEAGE_*`` variables over the settings file over the
defaults, merged table by table; JSON for the settings that hold a table or a list; a variable's name in
any case; and ``NAME__KEY`` for one key of a table (``lineage.settings``'s module docstring)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lineage.settings import Settings, from_environment, merged
from storage.errors import ConfigError


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    for name in [n for n in os.environ if n.upper().startswith("LINEAGE_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("LINEAGE_HOME", str(tmp_path / "home"))
    return monkeypatch


def test_the_environment_as_nested_values() -> None:
    env = {
        "LINEAGE_CORES": "3",
        "lineage_default_tier": "cold",  # any case
        "LINEAGE_ENGINE": json.dumps({"spark_master": "local[1]", "ray_address": "ray://head:10001"}),
        "LINEAGE_ENGINE__SPARK_MASTER": "yarn",  # one key of a table, over the table's JSON
        "LINEAGE_ENGINE__SPARK_CONF": '{"spark.executor.memory": "8g"}',  # a dict-valued key takes JSON
        "LINEAGE_ENGINE__RAY_RUNTIME_ENV__WORKING_DIR": "/srv/job",  # a key of a dict: a plain value
        "LINEAGE_TIERS": json.dumps([{"name": "cold", "kind": "posix", "root": "/cold"}]),
        "LINEAGE_CONFIG": "/etc/lineage.toml",  # read by settings_file(), not a setting
        "LINEAGE_ENGINE__SPARK_MASTR": "typo",  # no such key: ignored, as the model ignores it
        "LINEAGE_ENGINE__": "no key",
        "OTHER_CORES": "9",
    }
    assert from_environment(Settings, env) == {
        "cores": "3",
        "default_tier": "cold",
        "engine": {
            "spark_master": "yarn",
            "ray_address": "ray://head:10001",
            "spark_conf": {"spark.executor.memory": "8g"},
            "ray_runtime_env": {"working_dir": "/srv/job"},
        },
        "tiers": [{"name": "cold", "kind": "posix", "root": "/cold"}],
    }


def test_a_table_key_set_before_the_table_json_still_wins() -> None:
    """The variables are read in name order; case can put a key's variable before its table's."""
    env = {"LINEAGE_ENGINE__SPARK_MASTER": "yarn", "lineage_engine": '{"spark_master": "x", "ray_num_cpus": 2}'}
    assert from_environment(Settings, env) == {"engine": {"spark_master": "yarn", "ray_num_cpus": 2}}


@pytest.mark.parametrize(
    ("name", "value"), [("LINEAGE_TIERS", "[{"), ("LINEAGE_ENGINE", "yarn"), ("LINEAGE_ENGINE__SPARK_CONF", "a=b")]
)
def test_a_value_that_should_be_json_is_refused_with_its_name(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=f"^{name} must be JSON"):
        from_environment(Settings, {name: value})


def test_merged_goes_key_by_key_into_tables_and_replaces_anything_else() -> None:
    low = {"engine": {"spark_master": "a", "spark_conf": {"x": "1"}}, "tiers": [{"name": "a"}], "cores": 1}
    high = {"engine": {"spark_conf": {"y": "2"}}, "tiers": [{"name": "b"}]}
    assert merged(low, high) == {
        "engine": {"spark_master": "a", "spark_conf": {"x": "1", "y": "2"}},
        "tiers": [{"name": "b"}],
        "cores": 1,
    }
    assert low["engine"]["spark_conf"] == {"x": "1"}  # the sources are left as they were


def test_precedence_arguments_over_environment_over_file_over_defaults(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = tmp_path / "lineage.toml"
    config.write_text(
        'default_tier = "from-file"\nbatch_rows = 7\napi_port = 1\n'
        '[engine]\nspark_master = "file-master"\nray_address = "ray://file:1"\n'
        '[engine.spark_conf]\n"spark.a" = "file"\n'
    )
    clean_env.setenv("LINEAGE_CONFIG", str(config))
    clean_env.setenv("LINEAGE_BATCH_ROWS", "8")
    clean_env.setenv("LINEAGE_API_PORT", "2")
    clean_env.setenv("LINEAGE_ENGINE__SPARK_MASTER", "env-master")
    clean_env.setenv("LINEAGE_ENGINE__SPARK_CONF", '{"spark.b": "env"}')
    settings = Settings(api_port=3)
    assert settings.default_tier == "from-file"  # the file over the default
    assert settings.batch_rows == 8  # the environment over the file
    assert settings.api_port == 3  # an argument over both
    assert settings.engine.spark_master == "env-master" and settings.engine.ray_address == "ray://file:1"
    assert settings.engine.spark_conf == {"spark.a": "file", "spark.b": "env"}
    assert settings.duckdb_memory_limit == "256MB"  # a default
    assert settings.home == (tmp_path / "home").resolve()
    assert settings.catalog_url == f"sqlite:///{settings.home / 'catalog.db'}"


def test_the_model_converts_and_checks_what_the_environment_gives(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("LINEAGE_SINGLE_USER", "true")
    clean_env.setenv("LINEAGE_SERVICE_TOKEN", "t0k3n")
    clean_env.setenv("LINEAGE_PLACEMENT__COLD_AFTER_DAYS", "7")
    settings = Settings()
    assert settings.single_user is True and settings.placement.cold_after_days == 7
    assert settings.service_token is not None and settings.service_token.get_secret_value() == "t0k3n"
    assert "t0k3n" not in repr(settings)
    assert [t.name for t in settings.tiers] == ["local"]  # the local tier is always there
    clean_env.setenv("LINEAGE_API_TOKEN_CACHE_SECONDS", "5")
    with pytest.raises(ValueError, match="api_token_cache_seconds"):
        Settings()


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("LINEAGE_BATCH_ROWS", "0"),
        ("LINEAGE_PARQUET_FILE_ROWS", "-5"),
        ("LINEAGE_PARQUET_ROW_GROUP_ROWS", "0"),
        ("LINEAGE_CORES", "0"),
        ("LINEAGE_API_PORT", "99999"),
        ("LINEAGE_API_PAGE_LIMIT", "5000"),
    ],
)
def test_sizes_counts_and_ports_out_of_range_are_refused(clean_env: pytest.MonkeyPatch, name: str, value: str) -> None:
    """Each was accepted, and a run failed half-way on it with Arrow's or DuckDB's traceback (a port: a segfault
    in ``lineage serve``)."""
    clean_env.setenv(name, value)
    with pytest.raises(ValueError, match=name.removeprefix("LINEAGE_").lower()):
        Settings()


def test_convert_limits_are_the_inputs_not_settings() -> None:
    """``max_record_bytes`` and ``quarantine_raw_bytes`` were settings that nothing read (convert takes them per
    input); a settings file naming them is now refused as naming no setting."""
    from lineage.settings import unknown_keys

    assert unknown_keys(Settings, {"max_record_bytes": 1, "quarantine_raw_bytes": 1}) == [
        "max_record_bytes",
        "quarantine_raw_bytes",
    ]


def test_a_copy_with_other_values_is_checked_and_reads_no_source_again(clean_env: pytest.MonkeyPatch) -> None:
    """``lineage serve --port`` changed the port with ``model_copy``, which checks nothing: 99999 crashed the server."""
    settings = Settings(api_port=9000)
    clean_env.setenv("LINEAGE_API_HOST", "0.0.0.0")  # set after: a copy does not read it
    copy = settings.with_values(api_port=9001)
    assert (copy.api_port, copy.api_host, copy.home) == (9001, "127.0.0.1", settings.home)
    with pytest.raises(ConfigError, match="api_port: Input should be less than or equal to 65535"):
        settings.with_values(api_port=99999)
