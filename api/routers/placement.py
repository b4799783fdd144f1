"""Placement: the moves the hot/cold rules want (``lineage tier plan``); making them moves data, so
``tier apply`` runs in-process, where the tiers are."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from api.deps import CallerFirstRoute, Reader, ServiceDep
from lineage.service import schemas as S

router = APIRouter(tags=["placement"], route_class=CallerFirstRoute)


@router.get("/placement/plan", response_model=list[S.PlannedMove])
def plan_placement(service: ServiceDep, _: Reader) -> Any:
    """Pinned releases stay hot, idle (no read for ``cold_after_days``) or deprecated ones go cold."""
    return service.plan_placement()
