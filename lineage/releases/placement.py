"""Hot/cold placement of releases: pins, last use and the rules that turn them into moves."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from lineage.catalog import Catalog, Release, ReleasePin
from lineage.catalog.models import utcnow
from lineage.catalog.queries import get_release
from lineage.errors import Invalid
from lineage.releases.replicas import verified_locations
from lineage.releases.usage import last_used
from lineage.settings import Settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PlannedMove:
    release: str
    from_tier: str
    to_tier: str
    reason: str


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=utcnow().tzinfo)


def pin_release(catalog: Catalog, ref: str, until: datetime, pinned_by: str = "local", reason: str = "") -> ReleasePin:
    """Keep ``ref`` hot until ``until`` (training jobs pin what they use)."""
    until = _aware(until)
    if until <= utcnow():
        raise Invalid(f"pin expiry {until.isoformat()} is in the past")
    with catalog.session() as s:
        release = get_release(s, ref)
        pin = ReleasePin(release_id=release.id, until=until, pinned_by=pinned_by, reason=reason)
        s.add(pin)
        s.flush()
        return pin


def is_live(pin: ReleasePin) -> bool:
    """The pin still keeps its release hot."""
    return _aware(pin.until) > utcnow()


def active_pin(session: Session, release: Release) -> ReleasePin | None:
    pins = session.scalars(select(ReleasePin).where(ReleasePin.release_id == release.id))
    live = [p for p in pins if is_live(p)]
    return max(live, key=lambda p: _aware(p.until)) if live else None


def desired_class(session: Session, release: Release, settings: Settings) -> tuple[str, str]:
    """("hot" | "cold", why) for one release under the configured rules."""
    policy = settings.placement
    if release.state in ("deprecated", "withdrawn"):  # a withdrawn release is served only with a reason
        return "cold", release.state
    pin = active_pin(session, release)
    if pin is not None:
        return "hot", f"pinned until {_aware(pin.until):%Y-%m-%d %H:%M}"
    used = last_used(session, release) or release.published_at
    idle = utcnow() - _aware(used)
    if idle > timedelta(days=policy.cold_after_days):
        return "cold", f"unused for {idle.days} days (> {policy.cold_after_days})"
    return "hot", f"used {idle.days} days ago"


def plan_moves(catalog: Catalog, settings: Settings) -> list[PlannedMove]:
    policy = settings.placement
    plan = []
    with catalog.session() as s:
        for release in s.scalars(select(Release).order_by(Release.id)):
            wanted, why = desired_class(s, release, settings)
            target = policy.hot_tier if wanted == "hot" else policy.cold_tier
            if target is None:
                continue
            live = verified_locations(s, release)
            if not live or any(r.tier == target for r in live):
                continue
            source = sorted(live, key=lambda r: not r.primary)[0]
            plan.append(PlannedMove(release.ref, source.tier, target, why))
    return plan
