"""Small lineage-table queries that are not part of the service API (demos, docs).

Sample lineage, "why not in release X" and source → releases live in ``lineage.service``; the
CLI, the SDK and the HTTP API all go through it.
"""

from __future__ import annotations

from typing import Any

import duckdb

from lineage.catalog import DatasetVersion
from lineage.settings import Settings
from storage.delta import version_dataset
from storage.tier import get_tier


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
