"""Datasets, their versions (with schema), and diffs between versions or releases."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query

from api.deps import CallerFirstRoute, Reader, ServiceDep, Writer
from api.routers.common import DIFF, Limit, Name, Offset, VersionNumber, diff_link
from lineage.service import schemas as S
from storage.names import NAME_PATTERN, NO_NUL_PATTERN, REF_PATTERN

router = APIRouter(tags=["datasets"], route_class=CallerFirstRoute)

Ref = Annotated[
    str,
    Query(
        pattern=REF_PATTERN,
        max_length=300,
        description="NAME@TAG, DATASET:vN or DATASET (latest).",
        examples=["debian-clean@demo", "debian-clean:v1", "debian-clean"],  # the README's demo
    ),
]


@router.get("/datasets", response_model=S.Page[S.DatasetOut])
def list_datasets(
    service: ServiceDep,
    _: Reader,
    limit: Limit = None,
    offset: Offset = 0,
    tag: Annotated[str | None, Query(max_length=200, pattern=NO_NUL_PATTERN)] = None,
    owner: Annotated[str | None, Query(max_length=200, pattern=NO_NUL_PATTERN)] = None,
) -> Any:
    return service.list_datasets(limit, offset, tag=tag, owner=owner)


@router.get("/datasets/{name}", response_model=S.DatasetOut)
def get_dataset(name: Name, service: ServiceDep, _: Reader) -> Any:
    return service.get_dataset(name)


@router.patch("/datasets/{name}", response_model=S.DatasetOut)
def update_dataset(name: Name, body: S.DatasetUpdate, service: ServiceDep, _: Writer) -> Any:
    """Edit owner, licence, description or tags."""
    return service.update_dataset(name, body)


@router.get("/datasets/{name}/versions", response_model=S.Page[S.VersionOut])
def list_versions(name: Name, service: ServiceDep, _: Reader, limit: Limit = None, offset: Offset = 0) -> Any:
    return service.list_versions(name, limit, offset)


@router.get(
    "/datasets/{name}/versions/{version}",
    response_model=S.VersionOut,
    responses={
        200: {
            "links": {
                "DiffToLatest": diff_link(
                    "What changed from this version to the dataset's latest.",
                    base="{$response.body#/dataset}:v{$response.body#/version}",
                    target="$response.body#/dataset",
                )
            }
        }
    },
)
def get_version(name: Name, version: VersionNumber, service: ServiceDep, _: Reader) -> Any:
    return service.get_version(name, version)


@router.get("/datasets/{name}/versions/{version}/samples", response_model=S.Page[S.SampleVerdict])
def list_samples(
    name: Name,
    version: VersionNumber,
    service: ServiceDep,
    _: Reader,
    limit: Limit = None,
    offset: Offset = 0,
    operator: Annotated[str | None, Query(max_length=200, pattern=NAME_PATTERN)] = None,
    verdict: Annotated[Literal["kept", "dropped", "modified"] | None, Query()] = None,
) -> Any:
    """What each step of the run that made the version decided about each sample, by sample id."""
    return service.list_samples(name, version, limit, offset, operator=operator, verdict=verdict)


@router.get("/datasets/{name}/versions/{version}/releases", response_model=S.SourceReleases)
def releases_containing_version(name: Name, version: VersionNumber, service: ServiceDep, _: Reader) -> S.SourceReleases:
    """Which releases contain samples of this dataset version, and how many."""
    return service.source_releases(dataset=name, version=version)


@router.get("/diff", response_model=S.Diff, operation_id=DIFF)
def diff(
    service: ServiceDep,
    _: Reader,
    base: Ref,
    target: Ref,
) -> S.Diff:
    """Samples added, removed and changed per source, and schema changes, from ``base`` to ``target``."""
    return service.diff(base, target)
