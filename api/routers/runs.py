"""Pipeline runs."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query

from api.deps import CallerFirstRoute, Reader, ServiceDep
from api.routers.common import Limit, Offset
from lineage.openlineage import RUN_ID_MAX_LENGTH
from lineage.service import schemas as S
from storage.names import NAME_MAX, NAME_PATTERN, NO_NUL_PATTERN

router = APIRouter(tags=["runs"], route_class=CallerFirstRoute)


@router.get("/runs", response_model=S.Page[S.RunOut])
def list_runs(
    service: ServiceDep,
    _: Reader,
    limit: Limit = None,
    offset: Offset = 0,
    dataset: Annotated[str | None, Query(pattern=NAME_PATTERN, max_length=NAME_MAX)] = None,
    status: Literal["running", "succeeded", "failed"] | None = None,
) -> Any:
    return service.list_runs(limit, offset, dataset=dataset, status=status)


RunId = Annotated[
    str,
    Path(
        min_length=1,
        max_length=RUN_ID_MAX_LENGTH,
        pattern=NO_NUL_PATTERN,
        description="A run's id, as in its OpenLineage events (ours are UUIDs; any other is not found).",
    ),
]


@router.get("/runs/{run_id}", response_model=S.RunOut)
def get_run(run_id: RunId, service: ServiceDep, _: Reader) -> Any:
    return service.get_run(run_id)


@router.get("/pipeline-runs", response_model=S.Page[S.PipelineRunOut])
def list_pipeline_runs(
    service: ServiceDep,
    _: Reader,
    limit: Limit = None,
    offset: Offset = 0,
    pipeline: Annotated[str | None, Query(min_length=1, max_length=200, pattern=NO_NUL_PATTERN)] = None,
    status: Literal["running", "succeeded", "failed"] | None = None,
) -> Any:
    """Runs of pipelines of stages, newest first: per stage, ran or skipped (and why), and its version."""
    return service.list_pipeline_runs(limit, offset, pipeline=pipeline, status=status)


@router.get("/pipeline-runs/{pipeline_run_id}", response_model=S.PipelineRunOut)
def get_pipeline_run(pipeline_run_id: RunId, service: ServiceDep, _: Reader) -> Any:
    return service.get_pipeline_run(pipeline_run_id)
