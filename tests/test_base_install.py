"""``pip install lineage-ledger`` without extras: a fresh venv gets the catalog, CLI, SDK, reader and the
in-process engine, and nothing else.

The package is installed as a wheel built from a copy of this tree (not editable: it also proves what
the wheel ships, e.g. the catalog migrations), with the pinned versions (constraints.txt). In that
venv a pipeline runs on the local engine, its output is published and read back with
``lineage.open_release``; the user-facing modules import without pyspark or ray; and choosing the
spark or ray engine fails at once with one line naming the ``pip install`` that fixes it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from tests.support.helpers import write_jsonl

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("storage", "operators", "pipelines", "lineage", "api")
EXTRAS = ("pyspark", "ray", "torch", "psycopg", "datasketch")  # none of them may come with the base
# Wheels of the base dependencies, kept between test runs (pip's own cache still needs the index).
WHEELS = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "lineage-ledger" / "base-install-wheels"
DOCS = [{"id": str(i), "text": f"document number {i} about {word}"} for i, word in enumerate(["tea", "rain", "moss"])]


@dataclass(frozen=True)
class BaseVenv:
    python: Path
    lineage: Path  # the console script
    home: Path  # LINEAGE_HOME of the commands below
    work: Path  # their working directory: nothing of this tree is on their path

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LINEAGE_", "PYTHON", "VIRTUAL_ENV"))}
        return {**env, "LINEAGE_HOME": str(self.home), "PATH": f"{self.python.parent}{os.pathsep}{env['PATH']}"}

    def run(self, *args: str | Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(a) for a in args], cwd=self.work, env=self.env(), capture_output=True, text=True, timeout=300
        )

    def python_code(self, code: str) -> subprocess.CompletedProcess[str]:
        return self.run(self.python, "-c", textwrap.dedent(code))


def pip(python: Path | str, *args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """pip without this process's ``PYTHONPATH`` (the Spark engine puts the tree on it for its workers):
    pip would find this tree's ``lineage_ledger.egg-info`` there and skip installing the wheel."""
    command = [str(python), "-m", "pip", *map(str, args)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=1200)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> BaseVenv:
    """A fresh venv with the base package installed from a wheel of this tree.

    The dependencies come from a wheel cache (:data:`WHEELS`) without asking the index: resolving
    them there takes over a minute. The cache is filled from the index the first time, and again
    whenever the dependencies change (the offline install then fails and is retried once)."""
    root = tmp_path_factory.mktemp("base-install")
    src = root / "src"  # a copy, so that building the wheel leaves no build/ or egg-info in the tree
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for package in PACKAGES:
        shutil.copytree(ROOT / package, src / package, ignore=shutil.ignore_patterns("__pycache__"))
    start = time.perf_counter()
    # This interpreter's setuptools builds the wheel if it has one: seconds faster than an isolated build.
    no_isolation = ["--no-build-isolation"] if all(map(importlib.util.find_spec, ("setuptools", "wheel"))) else []
    built = pip(sys.executable, "wheel", "-q", "--no-deps", *no_isolation, "-w", root / "dist", src, cwd=root)
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = (root / "dist").glob("lineage_ledger-*.whl")
    venv = root / "venv"
    # No pip of its own: this interpreter's pip installs into it (``--python``), which saves ensurepip.
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(venv)], check=True)  # type: ignore[attr-defined]
    python = venv / "bin" / "python"
    constraints = ("-c", ROOT / "constraints.txt")
    offline = ("--python", python, "install", "-q", "--no-compile", *constraints, "--no-index", "--find-links", WHEELS)
    installed = pip(sys.executable, *offline, wheel, cwd=root)
    if installed.returncode != 0:  # a cold cache, or new dependencies: fetch them, then install again
        fetched = pip(sys.executable, "wheel", "-q", *constraints, "-w", WHEELS, wheel, cwd=root)
        assert fetched.returncode == 0, fetched.stdout + fetched.stderr
        for own in WHEELS.glob("lineage_ledger-*.whl"):
            own.unlink()
        installed = pip(sys.executable, *offline, wheel, cwd=root)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    print(f"base venv installed in {time.perf_counter() - start:.1f} s")
    work = root / "work"
    work.mkdir()
    return BaseVenv(python, venv / "bin" / "lineage", root / "home", work)


def test_the_base_install_has_no_extras_and_its_modules_import_without_them(base: BaseVenv) -> None:
    result = base.python_code(
        f"""
        import importlib, importlib.util, json, sys

        absent = [name for name in {EXTRAS!r} if importlib.util.find_spec(name) is None]
        import lineage
        from lineage import Client, open_release
        for module in ("lineage.reader", "lineage.client", "lineage.cli", "lineage.runs", "api.app"):
            importlib.import_module(module)
        from api.web import docs, pages  # the wheel ships the web view's files and finds the docs' bundles
        from lineage.releases.qc import CHARTS_JS
        assert CHARTS_JS.is_file() and (pages.STATIC / "graph.js").is_file(), "web view files missing"
        assert (docs.asset_folder() / "swagger-ui-bundle.js").is_file()
        loaded = sorted({{name.split(".")[0] for name in sys.modules}} & {{"pyspark", "ray"}})
        print(json.dumps({{"absent": absent, "loaded": loaded, "file": lineage.__file__}}))
        """
    )
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["absent"] == list(EXTRAS)
    assert found["loaded"] == []
    assert "site-packages" in found["file"]  # the installed package, not this tree


def test_the_base_install_runs_publishes_and_reads_a_release_on_the_local_engine(
    base: BaseVenv, tmp_path: Path
) -> None:
    base = replace(base, home=tmp_path / "home")
    raw = write_jsonl(tmp_path / "raw" / "docs.jsonl", DOCS)
    pipeline = tmp_path / "p.toml"
    pipeline.write_text(
        f'name = "t"\n[[inputs]]\ndataset = "raw"\npath = "{raw}"\nid_field = "id"\n'
        '[[operators]]\nname = "exact_dedupe"\n[output]\ndataset = "t"\n'
    )
    for args in (("run", pipeline), ("release", "publish", "t@v1")):
        result = base.run(base.lineage, *args)
        assert result.returncode == 0, result.stdout + result.stderr
    result = base.python_code(
        """
        import json, sys
        import lineage

        texts = sorted(row["text"] for row in lineage.open_release("t@v1", columns=["text"], as_dicts=True))
        print(json.dumps({"texts": texts, "extras": [m for m in ("pyspark", "ray") if m in sys.modules]}))
        """
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"texts": sorted(d["text"] for d in DOCS), "extras": []}


def test_the_extras_fail_at_once_with_the_fix(base: BaseVenv, tmp_path: Path) -> None:
    base = replace(base, home=tmp_path / "home")
    raw = write_jsonl(tmp_path / "raw" / "docs.jsonl", DOCS)
    pipeline = tmp_path / "p.toml"
    pipeline.write_text(f'name = "s"\n[[inputs]]\ndataset = "raw"\npath = "{raw}"\n[output]\ndataset = "s"\n')
    for engine, package in (("spark", "pyspark"), ("ray", "ray")):
        result = base.run(base.lineage, "run", pipeline, "--engine", engine)
        assert result.returncode == 13, result.stderr  # MissingExtra
        assert "Traceback" not in result.stderr
        assert result.stderr.strip().splitlines() == [
            f"error: the {engine} engine needs {package}: pip install 'lineage-ledger[{engine}]'"
        ]
    result = base.python_code(  # the SDK: the same class and message, before any catalog row
        f"""
        from lineage.catalog import Catalog, Run
        from lineage.errors import MissingExtra
        from lineage.runs import Runner
        from lineage.settings import get_settings
        from pipelines.spec import PipelineSpec

        runner = Runner(get_settings())
        try:
            runner.run(PipelineSpec.load({str(pipeline)!r}), engine="ray")
        except MissingExtra as exc:
            print(exc)
        with runner.catalog.session() as s:
            print(s.query(Run).count(), "runs")
        try:
            Catalog("postgresql+psycopg://ledger@127.0.0.1:1/ledger")
        except MissingExtra as exc:
            print(exc)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "the ray engine needs ray: pip install 'lineage-ledger[ray]'",
        "0 runs",
        "a PostgreSQL catalog needs psycopg: pip install 'lineage-ledger[postgres]'",
    ]
