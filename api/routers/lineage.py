"""Dataset-level lineage: OpenLineage RunEvents in, Marquez-shaped graphs out."""

from __future__ import annotations

from datetime import datetime
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
        Query(
            alias="nodeId",
            pattern=NODE_ID_PATTERN,
            max_length=2000,
            description="KIND:NS:NAME: dataset, job, version, run, release, export, model, evalset, evalset_version",
        ),
    ],
    depth: Annotated[int, Query(ge=0, le=100, description="Hops from the node.")] = 20,
    as_of: Annotated[
        datetime | None,
        Query(alias="asOf", description="The graph as it was at this time (RFC 3339; without a zone: UTC)."),
    ] = None,
) -> Response:
    """The lineage graph around a dataset or job, in Marquez's shape; each node with its upstream and
    downstream counts in the whole graph, so a viewer can load one hop and expand on demand."""
    # JSON assembled from cached per-node pieces: no re-validation of large graphs
    return Response(service.lineage_graph_json(node_id, depth, as_of), media_type="application/json")
