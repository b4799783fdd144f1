"""Eval sets (issue #19): list, show, versions, diff, deprecate, and collection versions. Registering a
set's items reads files on the tiers, so it runs in-process only (``lineage evalset register``)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Query
from fastapi import Path as PathParam

from api.deps import CallerFirstRoute, Reader, ServiceDep, Writer
from api.routers.common import Limit, Name, Offset, SampleId, Tag, VersionNumber
from lineage.service import schemas as S
from lineage.service.evalsets import NAME_MAX
from storage.names import NAME_MAX as DATASET_NAME_MAX
from storage.names import NAME_PATTERN, RELEASE_REF_PATTERN

router = APIRouter(tags=["evalsets"], route_class=CallerFirstRoute)

EvalSetName = Annotated[
    str,
    PathParam(
        pattern=NAME_PATTERN, max_length=NAME_MAX, description="An eval set's name (its items are NAME's dataset)."
    ),
]
Version = Annotated[int, Query(ge=1, le=2**31 - 1, description="A version number of the eval set.")]


@router.get("/evalsets", response_model=S.Page[S.EvalSetOut])
def list_evalsets(
    service: ServiceDep,
    _: Reader,
    limit: Limit = None,
    offset: Offset = 0,
    state: Annotated[S.EvalSetState | None, Query()] = None,
) -> Any:
    return service.list_evalsets(limit, offset, state=state)


@router.get("/evalsets/{name}", response_model=S.EvalSetOut)
def get_evalset(name: EvalSetName, service: ServiceDep, _: Reader) -> Any:
    return service.get_evalset(name)


@router.get("/evalsets/{name}/versions", response_model=list[S.EvalSetVersionOut])
def list_evalset_versions(name: EvalSetName, service: ServiceDep, _: Reader) -> Any:
    return service.list_evalset_versions(name)


@router.get("/evalsets/{name}/versions/{version}", response_model=S.EvalSetVersionOut)
def get_evalset_version(name: EvalSetName, version: VersionNumber, service: ServiceDep, _: Reader) -> Any:
    """``NAME:vN``: its items' dataset version (or a collection's members), checked fields, bad-input report."""
    return service.get_evalset_version(name, version)


@router.post("/evalsets/{name}/versions", response_model=S.EvalSetRegistered)
def register_collection(name: EvalSetName, body: S.CollectionCreate, service: ServiceDep, who: Writer) -> Any:
    """A version of collection NAME pinning each member at its version; the same members again: unchanged."""
    return service.register_collection(name, body, actor=who.name)


@router.get("/evalsets/{name}/diff", response_model=S.EvalSetDiff)
def diff_evalset(name: EvalSetName, service: ServiceDep, _: Reader, base: Version, target: Version) -> Any:
    """Items added, removed and changed from ``NAME:v{base}`` to ``NAME:v{target}``."""
    return service.diff_evalset(name, base, target)


@router.post("/evalsets/{name}/deprecate", response_model=S.EvalSetOut)
def deprecate_evalset(
    name: EvalSetName, service: ServiceDep, who: Writer, body: Annotated[S.EvalSetDeprecate | None, Body()] = None
) -> Any:
    return service.deprecate_evalset(name, (body or S.EvalSetDeprecate()).reason, actor=who.name)


RunId = Annotated[int, PathParam(ge=1, le=2**31 - 1, description="An eval run's id.")]


@router.post("/eval-runs", response_model=S.EvalRunOut)
def record_eval_run(body: S.EvalRunCreate, service: ServiceDep, who: Writer) -> Any:
    """Record a model (name, checkpoint) evaluated on an eval set version, with metrics and training jobs."""
    return service.record_eval_run(body, actor=who.name)


@router.get("/eval-runs/{run_id}", response_model=S.EvalRunProvenance)
def get_eval_run(run_id: RunId, service: ServiceDep, _: Reader) -> Any:
    """The eval run, the releases its model trained on, and whether they held items of the eval set."""
    return service.get_eval_run(run_id)


@router.get("/evalsets/{name}/versions/{version}/items/{item_id}/samples", response_model=S.ItemSamples)
def evalset_item_samples(
    name: EvalSetName,
    version: VersionNumber,
    item_id: SampleId,
    service: ServiceDep,
    _: Reader,
    limit: Limit = None,
    offset: Offset = 0,
    release: Annotated[
        str | None, Query(pattern=RELEASE_REF_PATTERN, max_length=300, description="A release, NAME@TAG.")
    ] = None,
    dataset: Annotated[
        str | None, Query(pattern=NAME_PATTERN, max_length=DATASET_NAME_MAX, description="A dataset.")
    ] = None,
    dataset_version: Annotated[
        int | None, Query(ge=1, le=2**31 - 1, description="The dataset's version (default: its latest).")
    ] = None,
) -> Any:
    """Every sample of the release (or dataset version) that contains the item, as its last check
    recorded them, in sample id order, one page at a time."""
    return service.evalset_item_samples(
        name,
        version,
        item_id,
        release=release,
        dataset=dataset,
        dataset_version=dataset_version,
        limit=limit,
        offset=offset,
    )


@router.get("/releases/{name}/{tag}/evals", response_model=S.ReleaseEvals)
def release_evals(name: Name, tag: Tag, service: ServiceDep, _: Reader) -> Any:
    """The models trained on the release and their eval results."""
    return service.release_evals(f"{name}@{tag}")
