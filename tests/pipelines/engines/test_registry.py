"""The engine registry: an unknown engine is refused with the known names, and an engine whose extra is
not installed fails at once with the ``pip install`` that fixes it, before any work or catalog row.

The extra is made missing for real in a subprocess: a ``sys.meta_path`` finder refuses to import
pyspark, ray and psycopg there, as an interpreter without them would (tests/test_base_install.py checks the
same in a fresh venv that truly lacks them).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pydantic import ValidationError

from lineage.catalog import Catalog, Run
from lineage.errors import Invalid
from lineage.releases.transfers import copy_on_engine
from lineage.settings import Settings
from pipelines.engines import check_engine, get_engine
from pipelines.spec import PipelineSpec
from storage.tier import get_tier
from tests.support.helpers import write_jsonl

ROOT = Path(__file__).resolve().parents[3]

# Run first by the subprocess: from then on pyspark, ray and psycopg fail to import, as if not installed.
BLOCK_EXTRAS = textwrap.dedent(
    """
    import sys

    class NotInstalled:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("pyspark", "ray", "psycopg"):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, NotInstalled())
    """
)


def run_without_extras(code: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LINEAGE_HOME": str(home)}
    env.pop("LINEAGE_CONFIG", None)
    env.pop("LINEAGE_CATALOG_URL", None)
    return subprocess.run(
        [sys.executable, "-c", BLOCK_EXTRAS + textwrap.dedent(code)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_an_unknown_engine_is_invalid_and_names_the_known_ones(settings: Settings) -> None:
    known = "choose one of local, spark, ray"
    with pytest.raises(Invalid, match=f"unknown engine 'flink'; {known}"):
        check_engine("flink")
    with pytest.raises(Invalid, match=known):
        get_engine("flink", settings.execution())
    with pytest.raises(ValidationError, match=known):  # a pipeline file is checked by name only
        PipelineSpec.model_validate({"name": "p", "engine": "flink", "inputs": [], "output": {"dataset": "o"}})
    tier = get_tier(None, settings)
    with pytest.raises(Invalid, match=known):
        copy_on_engine("flink", settings, tier, "a", tier, "b", [])  # nothing to copy: still refused
    with pytest.raises(Invalid, match="the local engine does not run tier copies as jobs"):
        copy_on_engine("local", settings, tier, "a", tier, "b", [])


def test_an_engine_without_its_extra_fails_at_once_with_the_fix(tmp_path: Path) -> None:
    result = run_without_extras(
        """
        from lineage.catalog import Catalog
        from lineage.errors import MissingExtra
        from lineage.settings import get_settings
        from pipelines.engines import check_engine, engine_module, get_engine
        from pipelines.spec import PipelineSpec

        check_engine("local")
        spec = PipelineSpec.model_validate(
            {"name": "p", "engine": "spark", "inputs": [{"dataset": "d", "path": "x"}], "output": {"dataset": "o"}}
        )  # a pipeline file naming spark is valid where spark is not installed
        for attempt in (
            lambda: check_engine("spark"),
            lambda: engine_module("ray"),
            lambda: get_engine("ray", get_settings().execution()),
            lambda: Catalog("postgresql+psycopg://ledger@127.0.0.1:1/ledger"),
        ):
            try:
                attempt()
            except MissingExtra as exc:
                print(exc)
        """,
        tmp_path / "home",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "the spark engine needs pyspark: pip install 'lineage-ledger[spark]'",
        "the ray engine needs ray: pip install 'lineage-ledger[ray]'",
        "the ray engine needs ray: pip install 'lineage-ledger[ray]'",
        "a PostgreSQL catalog needs psycopg: pip install 'lineage-ledger[postgres]'",
    ]


@pytest.mark.parametrize("engine", ["spark", "ray"])
def test_lineage_run_on_an_engine_without_its_extra_prints_the_fix_and_records_no_run(
    engine: str, tmp_path: Path
) -> None:
    write_jsonl(tmp_path / "raw" / "a.jsonl", [{"id": "1", "text": "one document"}])
    (tmp_path / "p.toml").write_text(
        f'name = "p"\n[[inputs]]\ndataset = "raw"\npath = "{tmp_path / "raw"}"\nid_field = "id"\n'
        '[output]\ndataset = "o"\n'
    )
    home = tmp_path / "home"
    result = run_without_extras(
        f"""
        sys.argv = ["lineage", "run", {str(tmp_path / "p.toml")!r}, "--engine", {engine!r}]
        from lineage.cli.main import main

        main()
        """,
        home,
    )
    needs = {"spark": "pyspark", "ray": "ray"}[engine]
    assert result.returncode == 13, result.stderr  # MissingExtra
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        f"error: the {engine} engine needs {needs}: pip install 'lineage-ledger[{engine}]'"
    ]
    catalog = Catalog(Settings(home=home).catalog_url or "")
    try:
        with catalog.session() as s:
            assert s.query(Run).count() == 0  # refused before the run row, not recorded as a failed run
    finally:
        catalog.dispose()


def test_the_user_facing_modules_load_neither_pyspark_nor_ray_where_both_are_installed() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import importlib, sys\n"
            "assert importlib.util.find_spec('pyspark') and importlib.util.find_spec('ray')\n"
            "for m in ('lineage', 'lineage.reader', 'lineage.client', 'lineage.cli', 'lineage.runs',"
            " 'lineage.releases', 'lineage.service.core', 'api.app', 'pipelines.spec', 'pipelines.engines'):\n"
            "    importlib.import_module(m)\n"
            "from lineage import Client, open_release\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'pyspark', 'ray'}))",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_a_tier_copy_on_an_engine_without_its_extra_prints_the_fix(tmp_path: Path) -> None:
    result = run_without_extras(
        """
        sys.argv = ["lineage", "tier", "copy", "t@v1", "--to", "local", "--engine", "ray"]
        from lineage.cli.main import main

        main()
        """,
        tmp_path / "home",
    )
    assert result.returncode == 13, result.stderr  # MissingExtra
    assert "Traceback" not in result.stderr
    assert "error: the ray engine needs ray: pip install 'lineage-ledger[ray]'" in result.stderr.splitlines()
