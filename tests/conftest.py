"""Shared fixtures: an isolated LINEAGE_HOME (catalog + local tier) per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lineage.catalog import Catalog
from lineage.settings import Settings, get_settings
from tests.support.helpers import FAMILY, write_jsonl

# Session-wide real services, available to every test by fixture name.
pytest_plugins = ["tests.support.fixtures_ceph", "tests.support.fixtures_postgres", "tests.support.api_clients"]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh LINEAGE_HOME; settings are re-read from the environment."""
    home = tmp_path / "home"
    monkeypatch.setenv("LINEAGE_HOME", str(home))
    monkeypatch.delenv("LINEAGE_CONFIG", raising=False)
    monkeypatch.delenv("LINEAGE_CATALOG_URL", raising=False)
    get_settings.cache_clear()
    yield home
    get_settings.cache_clear()


@pytest.fixture
def settings(home: Path) -> Settings:
    return get_settings()


@pytest.fixture
def catalog(settings: Settings) -> Iterator[Catalog]:
    cat = Catalog(settings.catalog_url or "")
    yield cat
    cat.dispose()


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A small raw corpus with exact duplicates (also across files) and one bad record."""
    root = tmp_path / "raw"
    write_jsonl(
        root / "a.jsonl",
        [
            {"id": "libc6", "text": FAMILY, "lang": "en"},
            {"id": "libc6-dev", "text": FAMILY + "\n\nThis package contains the development files."},
            {"id": "libc6-copy", "text": "  " + FAMILY.replace(" ", "  ") + "\n"},  # same after normalisation
            {"id": "zh-1", "text": "这是一个用于测试的中文软件包描述，包含足够多的汉字以通过质量检查。"},
        ],
    )
    write_jsonl(
        root / "sub" / "b.jsonl.gz",
        [
            {"id": "libc6-again", "text": FAMILY},
            {"id": "curl", "text": "command line tool for transferring data with URL syntax over many protocols"},
        ],
        compress=True,
    )
    with (root / "a.jsonl").open("a") as fh:
        fh.write('{"id": "broken", "text": \n')
    return root


# A skipped test is a failure in CI: a missing component must not pass silently. The one
# exception is HDFS (marker ``hdfs``), which cannot run on this machine.
_unexpected_skips: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and "hdfs" not in report.keywords:
        _unexpected_skips.append(report.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _unexpected_skips and exitstatus == 0:
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter) -> None:  # type: ignore[no-untyped-def]
    if _unexpected_skips:
        terminalreporter.write_line(
            f"FAILED: {len(_unexpected_skips)} test(s) skipped; only HDFS tests may skip: {_unexpected_skips}",
            red=True,
        )
