"""The process's Arrow memory pool: the setting chooses it when a service is built; Arrow's own variable wins."""

from __future__ import annotations

import subprocess
import sys

import pyarrow as pa
import pytest

from lineage.service.files import FileOperations
from lineage.settings import Settings
from storage.arrow_pool import use_memory_pool


@pytest.fixture(autouse=True)
def _restore_pool():
    before = pa.default_memory_pool()
    yield
    pa.set_memory_pool(before)


def test_building_the_service_gives_arrow_the_jemalloc_pool_by_default(tmp_path, monkeypatch):
    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    pa.set_memory_pool(pa.mimalloc_memory_pool())  # Arrow's own default
    FileOperations(Settings(home=tmp_path))
    assert pa.default_memory_pool().backend_name == "jemalloc"


@pytest.mark.parametrize("name", ["mimalloc", "system"])
def test_the_setting_names_the_pool(tmp_path, monkeypatch, name):
    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    FileOperations(Settings(home=tmp_path, arrow_memory_pool=name))
    assert pa.default_memory_pool().backend_name == name


def test_arrow_default_leaves_the_pool_alone(monkeypatch):
    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    pa.set_memory_pool(pa.system_memory_pool())
    assert use_memory_pool("arrow-default") == "system"


def test_arrows_own_variable_wins_over_the_setting(tmp_path):
    """Read when pyarrow loads, so in a process of its own."""
    code = (
        "import pyarrow as pa; from lineage.settings import Settings; from lineage.service.files import "
        f"FileOperations; FileOperations(Settings(home={str(tmp_path)!r})); "
        "print(pa.default_memory_pool().backend_name)"
    )
    env = {"ARROW_DEFAULT_MEMORY_POOL": "system", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "system"


def test_an_unknown_pool_is_a_configuration_error(tmp_path):
    with pytest.raises(ValueError, match="arrow_memory_pool"):
        Settings(home=tmp_path, arrow_memory_pool="tcmalloc")
