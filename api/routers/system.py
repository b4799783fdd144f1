"""Health (no auth: a client can check the server and whether it must send a token)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from api.deps import CallerFirstRoute, ServiceDep, single_user
from lineage.service import schemas as S

router = APIRouter(tags=["system"], route_class=CallerFirstRoute)


@router.get("/health", response_model=S.Health)
def health(request: Request, service: ServiceDep) -> S.Health:
    return service.health(auth_required=not single_user(request, service))
