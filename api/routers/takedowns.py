"""Takedown requests (opt-out, copyright, privacy): record one, list them, and plan one: which live releases
hold what it names, where those bytes are, who trained on them. Planning changes nothing."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, status

from api.deps import CallerFirstRoute, Reader, ServiceDep, Writer
from api.routers.common import Limit, Offset
from lineage.service import schemas as S

router = APIRouter(tags=["takedowns"], route_class=CallerFirstRoute)

RequestId = Annotated[int, Path(ge=1, le=2**31 - 1, description="A takedown request's id.")]


@router.post("/takedowns", response_model=S.TakedownOut, status_code=status.HTTP_201_CREATED)
def create_takedown(body: S.TakedownCreate, service: ServiceDep, who: Writer) -> Any:
    """Record what goes (a source, sample ids, content hashes or a field predicate), why and who asked."""
    return service.create_takedown(body, actor=who.name)


@router.get("/takedowns", response_model=S.Page[S.TakedownOut])
def list_takedowns(
    service: ServiceDep,
    _: Reader,
    limit: Limit = None,
    offset: Offset = 0,
    state: Annotated[S.TakedownState | None, Query()] = None,
) -> Any:
    return service.list_takedowns(limit, offset, state=state)


@router.get("/takedowns/{request_id}", response_model=S.TakedownOut)
def get_takedown(request_id: RequestId, service: ServiceDep, _: Reader) -> Any:
    return service.get_takedown(request_id)


@router.get("/takedowns/{request_id}/plan", response_model=S.TakedownPlan)
def plan_takedown(
    request_id: RequestId,
    service: ServiceDep,
    _: Reader,
    sample_limit: Annotated[int, Query(ge=0, le=100_000, description="Sample ids listed per release.")] = 1000,
) -> Any:
    """Per live release: affected samples, their files, replicas and the jobs that read it; what was built
    from it."""
    return service.plan_takedown(request_id, sample_limit=sample_limit)
