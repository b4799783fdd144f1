"""Fixtures and helpers shared by the replica tests: a small multi-file release and a cold tier."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

import lineage
from lineage.catalog import Catalog, Replica
from lineage.releases import get_release
from lineage.settings import Settings, TierConfig
from tests.conftest import publish_records


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


def replicas(catalog: Catalog, ref: str) -> dict[str, Replica]:
    with catalog.session() as s:
        release = get_release(s, ref)
        return {r.tier: r for r in s.scalars(select(Replica).where(Replica.release_id == release.id))}


def sample_ids(settings: Settings, ref: str, **kw) -> list[str]:
    reader = lineage.open_release(ref, settings=settings, columns=["sample_id"], shuffle=False, **kw)
    return [x for b in reader for x in b.column("sample_id").to_pylist()]
