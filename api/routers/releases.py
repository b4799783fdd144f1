"""Releases: create (or draft), publish, deprecate; manifests, quality reports, replicas and reads."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Query, Response

from api.deps import CallerFirstRoute, Reader, ServiceDep, Writer
from api.routers.common import Limit, Name, Offset, Tag, diff_link
from lineage.service import schemas as S
from storage.names import NAME_MAX, NAME_PATTERN, NO_NUL_PATTERN

router = APIRouter(tags=["releases"], route_class=CallerFirstRoute)


def _diff_to_latest(release: str) -> dict[str, Any]:
    """Links of an answer holding a release at JSON pointer ``release``."""
    return {
        "DiffToLatest": diff_link(
            "What changed from this release to its dataset's latest version.",
            base=f"$response.body#{release}/ref",
            target=f"$response.body#{release}/dataset",
        )
    }


@router.get("/releases", response_model=S.Page[S.ReleaseOut])
def list_releases(
    service: ServiceDep,
    _: Reader,
    limit: Limit = None,
    offset: Offset = 0,
    name: Annotated[str | None, Query(pattern=NAME_PATTERN, max_length=NAME_MAX)] = None,
    state: S.ReleaseState | None = None,
) -> Any:
    return service.list_releases(limit, offset, name=name, state=state)


@router.post(
    "/releases",
    response_model=S.ReleaseResult,
    status_code=201,
    responses={
        201: {"links": _diff_to_latest("/release")},
        200: {
            "model": S.ReleaseResult,
            "description": "Same content already recorded: nothing changed",
            "links": _diff_to_latest("/release"),
        },
    },
)
def create_release(body: S.ReleaseCreate, service: ServiceDep, who: Writer, response: Response) -> S.ReleaseResult:
    """Publish a dataset version as NAME@TAG (or record a draft). Idempotent for the same content
    (200, ``changed: false``); refused with 409 for different content. With ``gate``, failed conditions
    are refused with 409 ``gate_failed`` and ``failures`` (each with its measured value and limit) unless
    ``override_reason`` is given; the override is recorded with the caller and the time."""
    result = service.create_release(body, actor=who.name)
    if not result.changed:
        response.status_code = 200
    return result


@router.get("/releases/{name}/{tag}", response_model=S.ReleaseOut, responses={200: {"links": _diff_to_latest("")}})
def get_release(name: Name, tag: Tag, service: ServiceDep, _: Reader) -> Any:
    return service.get_release(f"{name}@{tag}")


@router.post("/releases/{name}/{tag}/publish", response_model=S.ReleaseResult)
def publish_release(
    name: Name, tag: Tag, service: ServiceDep, who: Writer, body: Annotated[S.ReleasePublish | None, Body()] = None
) -> S.ReleaseResult:
    """Publish a draft (after checking its files still have the recorded content), through the publish
    gate: the body's conditions, else the draft's. Failed conditions: 409 ``gate_failed`` with ``failures``."""
    return service.publish_release(f"{name}@{tag}", body, actor=who.name)


@router.post("/releases/{name}/{tag}/deprecate", response_model=S.ReleaseResult)
def deprecate_release(
    name: Name, tag: Tag, service: ServiceDep, who: Writer, body: Annotated[S.Deprecation | None, Body()] = None
) -> S.ReleaseResult:
    return service.deprecate_release(f"{name}@{tag}", (body or S.Deprecation()).reason, actor=who.name)


@router.get("/releases/{name}/{tag}/manifest", response_model=S.Manifest)
def get_manifest(name: Name, tag: Tag, service: ServiceDep, _: Reader) -> S.Manifest:
    """Files with sizes and xxh3-128 checksums, row count, bytes, schema, quality summary."""
    return service.get_manifest(f"{name}@{tag}")


@router.get("/releases/{name}/{tag}/quality", response_model=S.Quality)
def get_quality(name: Name, tag: Tag, service: ServiceDep, _: Reader) -> S.Quality:
    return service.get_quality(f"{name}@{tag}")


@router.get("/releases/{name}/{tag}/replicas", response_model=list[S.ReplicaOut])
def list_replicas(
    name: Name,
    tag: Tag,
    service: ServiceDep,
    _: Reader,
    state: S.ReplicaState | None = None,
) -> Any:
    """Copies of the release's data, one per tier; a training reader reads from the ``verified`` ones."""
    return service.list_replicas(f"{name}@{tag}", state=state)


@router.get("/releases/{name}/{tag}/reads", response_model=S.Page[S.ReleaseReadOut])
def list_reads(
    name: Name,
    tag: Tag,
    service: ServiceDep,
    _: Reader,
    limit: Limit = None,
    offset: Offset = 0,
    job: Annotated[str | None, Query(min_length=1, max_length=300, pattern=NO_NUL_PATTERN)] = None,
) -> Any:
    """Which training jobs opened the release (one record per rank), newest first."""
    return service.list_reads(f"{name}@{tag}", limit, offset, job=job)


@router.post("/releases/{name}/{tag}/reads", response_model=S.ReleaseReadOut, status_code=201)
def record_read(name: Name, tag: Tag, body: S.ReadCreate, service: ServiceDep, who: Reader) -> Any:
    """Record that one rank of a training job opened the release (what ``open_release`` does).

    The reader role is enough: a training job needs only read access, and a usage record changes
    no data. The token's name is kept with the record (``recorded_by``).
    """
    return service.record_read(f"{name}@{tag}", body, actor=who.name)


@router.get("/releases/{name}/{tag}/pins", response_model=list[S.PinOut])
def list_pins(name: Name, tag: Tag, service: ServiceDep, _: Reader) -> Any:
    """The release's pins, oldest first, expired ones included (``active``: still keeps it hot)."""
    return service.list_pins(f"{name}@{tag}")


@router.post("/releases/{name}/{tag}/pins", response_model=S.PinOut, status_code=201)
def pin_release(name: Name, tag: Tag, body: S.PinCreate, service: ServiceDep, who: Writer) -> Any:
    """Keep the release on the hot tier until ``until``; the token's name is kept as who pinned it.
    A time that is not in the future is refused (400)."""
    return service.pin_release(f"{name}@{tag}", body, actor=who.name)
