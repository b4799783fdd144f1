"""API tokens (admin only)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path

from api.deps import Admin, CallerFirstRoute, ServiceDep
from lineage.service import schemas as S

router = APIRouter(tags=["tokens"], route_class=CallerFirstRoute)


@router.post("/tokens", response_model=S.TokenCreated, status_code=201)
def create_token(body: S.TokenCreate, service: ServiceDep, who: Admin) -> Any:
    """The token is in the answer once; only its hash is stored."""
    return service.create_token(body.name, body.role, actor=who.name)


@router.get("/tokens", response_model=list[S.TokenOut])
def list_tokens(service: ServiceDep, _: Admin) -> Any:
    return service.list_tokens()


@router.delete("/tokens/{token_id}", response_model=S.TokenOut)
def revoke_token(token_id: Annotated[int, Path(ge=1, le=2**31 - 1)], service: ServiceDep, _: Admin) -> Any:
    return service.revoke_token(token_id)
