"""Fixtures and helpers shared by the replica tests: a small multi-file release and a cold tier."""

from __future__ import annotations

from pathlib import Path

import pytest

from lineage.catalog import Catalog
from lineage.settings import Settings, TierConfig
from tests.support.helpers import publish_records


@pytest.fixture
def cold(settings: Settings, tmp_path: Path) -> str:
    settings.tiers.append(TierConfig(name="cold", kind="posix", root=str(tmp_path / "cold-tier"), tier_class="cold"))
    return "cold"


@pytest.fixture
def release(tmp_path: Path, settings: Settings, catalog: Catalog) -> str:
    """A release spread over several files, so copies can be interrupted between files."""
    settings.parquet_file_rows = 40
    settings.parquet_row_group_rows = 20
    records = [{"id": i, "text": f"text of document {i} " * 20} for i in range(200)]
    return publish_records(tmp_path, settings, catalog, records, "d@v1")
