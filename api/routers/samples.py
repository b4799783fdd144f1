"""Sample-level lineage: a sample's history, why it is not in a release, where a source's samples went."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from api.deps import CallerFirstRoute, Reader, ServiceDep
from api.routers.common import SampleId
from lineage.service import schemas as S
from storage.names import NAME_MAX, NAME_PATTERN, RELEASE_REF_PATTERN

router = APIRouter(tags=["samples"], route_class=CallerFirstRoute)

ReleaseRef = Annotated[str, Query(pattern=RELEASE_REF_PATTERN, description="NAME@TAG")]


@router.get("/samples/{sample_id}/lineage", response_model=S.SampleLineage)
def sample_lineage(
    sample_id: SampleId,
    service: ServiceDep,
    _: Reader,
    dataset: Annotated[str | None, Query(pattern=NAME_PATTERN, max_length=NAME_MAX)] = None,
    include_text: bool = False,
) -> S.SampleLineage:
    """Source file and row, every operator's verdict and reason, duplicate cluster and kept sample."""
    return service.sample_lineage(sample_id, dataset=dataset, include_text=include_text)


@router.get("/samples/{sample_id}/why-not", response_model=S.WhyNot)
def why_not(sample_id: SampleId, release: ReleaseRef, service: ServiceDep, _: Reader) -> S.WhyNot:
    """Why is this sample not in release X?"""
    return service.why_not(sample_id, release)


@router.get("/sources/releases", response_model=S.SourceReleases)
def source_releases(
    service: ServiceDep,
    _: Reader,
    uri: Annotated[
        str, Query(min_length=1, max_length=4096, description="A source file's URI; a trailing '/' means a folder.")
    ],
) -> S.SourceReleases:
    """Which releases contain samples read from a source file (or folder), and how many."""
    return service.source_releases(uri=uri)
