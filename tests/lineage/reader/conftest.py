"""The reader tests' release: N samples in several files of several small row groups."""

from __future__ import annotations

from pathlib import Path

import pytest

from lineage.catalog import Catalog
from lineage.settings import Settings
from tests.support.helpers import publish_records
from tests.support.reader_helpers import N


@pytest.fixture
def release(tmp_path: Path, settings: Settings, catalog: Catalog) -> str:
    """A release of N samples in several files of several small row groups."""
    settings.parquet_row_group_rows = 16
    settings.parquet_file_rows = 80
    records = [{"id": i, "text": f"document number {i}"} for i in range(N)]
    return publish_records(tmp_path, settings, catalog, records, "d@v1")
