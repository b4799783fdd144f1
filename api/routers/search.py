"""One search over names and ids: what the web view's search page asks."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from api.deps import CallerFirstRoute, Reader, ServiceDep
from lineage.service import schemas as S

router = APIRouter(tags=["search"], route_class=CallerFirstRoute)


@router.get("/search", response_model=S.SearchResults)
def search(
    service: ServiceDep,
    _: Reader,
    q: Annotated[str, Query(min_length=1, max_length=500, description="A name, id, sample id or source URI.")],
    limit: Annotated[int, Query(ge=1, le=100, description="At most this many hits per kind.")] = 20,
) -> S.SearchResults:
    """Datasets, releases, runs, a sample, sources and eval sets matching ``q``, grouped by kind."""
    return service.search(q, limit=limit)
