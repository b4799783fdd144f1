"""Lineage questions answered from the columnar lineage tables (DuckDB over Delta versions).

The SQL catalog only says *which* Delta versions to look in; per-sample facts never live in SQL.
Lineage and data tables are sorted by ``sample_id``, so a point lookup reads a few row groups.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import duckdb
from sqlalchemy import select
from sqlalchemy.orm import Session

from lineage.catalog import Catalog, DatasetVersion
from lineage.settings import Settings
from storage.delta import version_dataset
from storage.tier import get_tier


@dataclass
class VersionLineage:
    """What one dataset version knows about a sample."""

    dataset: str
    version: int
    run_id: str
    in_output: bool
    records: list[dict[str, Any]]
    sample: dict[str, Any] | None = None


@dataclass
class SampleLineage:
    sample_id: str
    versions: list[VersionLineage] = field(default_factory=list)

    @property
    def found(self) -> bool:
        return bool(self.versions)

    @property
    def source(self) -> dict[str, Any] | None:
        """The source file and row, from the convert step (or the sample row's provenance)."""
        for v in self.versions:
            for rec in v.records:
                if rec["detail"] and rec["detail"].get("source"):
                    return rec["detail"]["source"]
            if v.sample:
                s = v.sample
                return {
                    "dataset": s["source_dataset"],
                    "version": s["source_version"],
                    "uri": s["source_uri"],
                    "path": s["source_path"],
                    "row": s["source_row"],
                    "offset": s["source_offset"],
                }
        return None


def _lookup(dv: DatasetVersion, settings: Settings, table: str, sample_id: str, order: str) -> list[dict[str, Any]]:
    tier = get_tier(dv.tier, settings)
    path, version = (
        (dv.lineage_path, dv.lineage_delta_version) if table == "lineage" else (dv.data_path, dv.data_delta_version)
    )
    with duckdb.connect() as con:
        con.register("ds", version_dataset(tier, path, version))
        return (
            con.sql(f"SELECT * FROM ds WHERE sample_id = ? ORDER BY {order}", params=[sample_id])
            .to_arrow_table()
            .to_pylist()
        )


def versions_of(session: Session, dataset: str | None = None) -> list[DatasetVersion]:
    query = select(DatasetVersion).order_by(DatasetVersion.created_at.desc())
    if dataset is not None:
        from lineage.catalog import Dataset

        query = query.join(Dataset).where(Dataset.name == dataset)
    return list(session.scalars(query))


def sample_lineage(catalog: Catalog, settings: Settings, sample_id: str, dataset: str | None = None) -> SampleLineage:
    """Every dataset version's lineage records for a sample, oldest run first."""
    result = SampleLineage(sample_id)
    with catalog.session() as s:
        for dv in reversed(versions_of(s, dataset)):
            records = _lookup(dv, settings, "lineage", sample_id, "step")
            if not records:
                continue
            rows = _lookup(dv, settings, "data", sample_id, "sample_id")
            result.versions.append(
                VersionLineage(dv.dataset.name, dv.version, dv.run_id, bool(rows), records, rows[0] if rows else None)
            )
    return result


def example_sample_ids(
    dv: DatasetVersion, settings: Settings, *, verdict: str, operator: str | None = None, limit: int = 1
) -> list[str]:
    """A few sample ids with a given verdict in a version's lineage (for demos and docs)."""
    tier = get_tier(dv.tier, settings)
    where = "verdict = ?" + (" AND operator = ?" if operator else "")
    params: list[Any] = [verdict] + ([operator] if operator else [])
    with duckdb.connect() as con:
        con.register("ds", version_dataset(tier, dv.lineage_path, dv.lineage_delta_version))
        rows = con.sql(
            f"SELECT sample_id FROM ds WHERE {where} ORDER BY sample_id LIMIT {int(limit)}", params=params
        ).fetchall()
    return [r[0] for r in rows]
