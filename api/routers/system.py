"""Health (no auth: a client can check the server and whether it must send a token)."""

from __future__ import annotations

from fastapi import APIRouter

from api.deps import ServiceDep
from lineage.service import schemas as S

router = APIRouter(tags=["system"])


@router.get("/health", response_model=S.Health)
def health(service: ServiceDep) -> S.Health:
    return service.health()
