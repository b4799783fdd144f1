"""Dataset-level lineage: OpenLineage RunEvents in, Marquez-shaped graphs out."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from api.deps import CallerFirstRoute, Reader, ServiceDep, Writer
from lineage.openlineage import NODE_ID_PATTERN, RunEvent
from lineage.service import schemas as S

router = APIRouter(tags=["lineage"], route_class=CallerFirstRoute)


@router.post("/lineage", response_model=S.EventAccepted, status_code=201)
def post_lineage_event(event: RunEvent, service: ServiceDep, _: Writer) -> S.EventAccepted:
    """Accept an OpenLineage RunEvent from any producer."""
    return service.ingest_event(event)


@router.get("/lineage", response_model=S.Graph)
def lineage_graph(
    service: ServiceDep,
    _: Reader,
    node_id: Annotated[
        str,
        Query(alias="nodeId", pattern=NODE_ID_PATTERN, max_length=2000, description="dataset:NS:NAME or job:NS:NAME"),
    ],
    depth: Annotated[int, Query(ge=0, le=100, description="Hops from the node.")] = 20,
) -> Response:
    """The lineage graph around a dataset or job, in Marquez's shape."""
    # JSON assembled from cached per-node pieces: no re-validation of large graphs
    return Response(service.lineage_graph_json(node_id, depth), media_type="application/json")
