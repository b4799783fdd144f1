"""Usage records of releases: each training reader's open is one ``ReleaseRead`` row.

Written by the reader (straight to the catalog, or through the service), read by placement
(a release unused for long goes cold) and by "which training jobs used this release".
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from lineage.catalog import Release, ReleaseRead
from lineage.errors import Invalid
from lineage.releases.publishing import check_servable


def check_rank(rank: int, world_size: int) -> None:
    """Ranks of a job are numbered 0 .. world_size - 1."""
    if not 0 <= rank < world_size:
        raise Invalid(f"rank must be in [0, world_size), got rank={rank}, world_size={world_size}")


def record_read(
    session: Session,
    release: Release,
    *,
    job: str,
    world_size: int,
    rank: int,
    host: str,
    recorded_by: str,
    override_reason: str | None = None,
) -> ReleaseRead:
    """One rank of ``job`` opened ``release`` (a withdrawn one only with ``override_reason``, kept here)."""
    check_rank(rank, world_size)
    check_servable(release, override_reason)
    read = ReleaseRead(
        release_id=release.id,
        job=job,
        world_size=world_size,
        rank=rank,
        host=host,
        recorded_by=recorded_by,
        override_reason=override_reason,
    )
    session.add(read)
    session.flush()
    return read


def reads_query(release: Release, job: str | None = None) -> Select[tuple[ReleaseRead]]:
    """A release's reads, newest first (optionally of one job)."""
    query = select(ReleaseRead).where(ReleaseRead.release_id == release.id)
    if job is not None:
        query = query.where(ReleaseRead.job == job)
    return query.order_by(ReleaseRead.opened_at.desc(), ReleaseRead.id.desc())


def last_used(session: Session, release: Release) -> datetime | None:
    return session.scalar(select(func.max(ReleaseRead.opened_at)).where(ReleaseRead.release_id == release.id))
