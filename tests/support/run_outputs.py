"""A committed dataset version's output as bytes and rows, for "byte-identical to an uninterrupted run" checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import select

from lineage.catalog import Catalog, DatasetVersion
from lineage.settings import Settings
from storage.delta import version_dataset, version_files
from storage.tier import get_tier


def version_output(settings: Settings, catalog: Catalog, version: int) -> dict[str, Any]:
    """A version's tables: each data and signature file's bytes in name order, and every table's rows (run
    ids apart: a resumed run keeps its id, an uninterrupted one compared with it has another)."""
    with catalog.session() as s:
        dv = s.scalars(select(DatasetVersion).where(DatasetVersion.version == version)).one()
        tier = get_tier(dv.tier, settings)
        tables = dict(dv.pinned_tables)
    out: dict[str, Any] = {}
    for kind, (path, v) in sorted(tables.items()):
        table = version_dataset(tier, path, v).to_table()
        out[kind] = table.drop_columns([c for c in ("run_id",) if c in table.column_names])
    for kind in ("data", "signatures"):
        if kind in tables:
            path, v = tables[kind]
            names = sorted(f["path"] for f in version_files(tier, path, v))
            out[f"{kind} files"] = [Path(tier.path(path, name)).read_bytes() for name in names]
    return out
