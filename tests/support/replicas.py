"""Helpers of the replica tests: a release's replicas by tier, and its sample ids as a reader returns them."""

from __future__ import annotations

from sqlalchemy import select

import lineage
from lineage.catalog import Catalog, Replica
from lineage.releases import get_release
from lineage.settings import Settings


def replicas(catalog: Catalog, ref: str) -> dict[str, Replica]:
    with catalog.session() as s:
        release = get_release(s, ref)
        return {r.tier: r for r in s.scalars(select(Replica).where(Replica.release_id == release.id))}


def sample_ids(settings: Settings, ref: str, **kw) -> list[str]:
    reader = lineage.open_release(ref, settings=settings, columns=["sample_id"], shuffle=False, **kw)
    return [x for b in reader for x in b.column("sample_id").to_pylist()]
