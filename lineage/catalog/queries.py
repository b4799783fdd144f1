"""Version look-ups: every "which dataset version / release / replica is this?" question, once.

The runner, releases, QC, replicas, the service, the reader and the CLI all ask the catalog the
same few questions; each is answered here, with one error (and one message) for a miss:

- :func:`dataset_version` — a dataset's version by number, or its latest; :func:`require_data` refuses
  one a takedown's purge made a tombstone, where its data is read;
- :func:`get_release` — a release by ``NAME@TAG``;
- :func:`resolve_ref` — ``NAME@TAG`` (a release), ``DATASET:vN`` / ``DATASET:N`` (a version) or
  ``DATASET`` (its latest), as the diff endpoints take them;
- :func:`replicas_of` — a release's copies, one per tier;
- :func:`evalset_version`, :func:`resolve_evalset` (``NAME:vN`` / ``NAME``) and :func:`evalset_leaves` — eval
  set versions, and the item-holding versions a collection stands for.

Functions take an open session and return ORM rows; they never commit.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from lineage.catalog.models import Dataset, DatasetVersion, EvalSet, EvalSetVersion, Release, Replica
from lineage.errors import DataPurged, Invalid, NotFound, ReleaseError, ReleaseNotFound
from storage.names import parse_release_ref, parse_version_ref


def parse_ref(ref: str) -> tuple[str, str]:
    """``NAME@TAG`` → ``(name, tag)`` (the grammar is :mod:`storage.names`), as a :class:`ReleaseError`."""
    try:
        return parse_release_ref(ref)
    except Invalid as exc:
        raise ReleaseError(str(exc)) from None


def dataset_version(session: Session, name: str, version: int | None = None) -> DatasetVersion:
    """Version ``version`` of dataset ``name``, or its latest when ``version`` is None."""
    query = select(DatasetVersion).join(Dataset).where(Dataset.name == name)
    if version is not None:
        query = query.where(DatasetVersion.version == version)
    found = session.scalars(query.order_by(DatasetVersion.version.desc()).limit(1)).first()
    if found is None:
        what = f"version {version} of dataset {name!r}" if version is not None else f"dataset {name!r}"
        raise NotFound(f"{what} does not exist" + (" (or it has no versions)" if version is None else ""))
    return found


def require_data(dv: DatasetVersion) -> DatasetVersion:
    """``dv``, unless a purge deleted its files: then a clear refusal, not a missing-file error later."""
    if dv.purged_by is not None:
        raise DataPurged(
            f"{dv.ref} was purged by takedown request {dv.purged_by}: its files are deleted; the catalog keeps "
            "its lineage, and its releases' manifests and QC reports"
        )
    return dv


def get_release(session: Session, ref: str) -> Release:
    name, tag = parse_ref(ref)
    release = session.scalars(select(Release).where(Release.name == name, Release.tag == tag)).first()
    if release is None:
        raise ReleaseNotFound(f"release {ref} does not exist")
    return release


def resolve_ref(session: Session, ref: str) -> tuple[DatasetVersion, Release | None]:
    """The dataset version ``ref`` names, and the release when it names one."""
    if "@" in ref:
        release = get_release(session, ref)
        return release.dataset_version, release
    name, version = parse_version_ref(ref)
    return dataset_version(session, name, version), None


def replicas_of(session: Session, release: Release) -> list[Replica]:
    """Every copy of the release the catalog records, in any state, oldest first."""
    return list(session.scalars(select(Replica).where(Replica.release_id == release.id).order_by(Replica.id)))


def parse_evalset_ref(ref: str) -> tuple[str, int | None]:
    """``NAME:vN`` / ``NAME:N`` → ``(name, N)``; ``NAME`` → ``(name, None)``; a release ref is refused."""
    if "@" in ref:
        raise Invalid(f"invalid eval set reference {ref!r}: expected NAME:vN or NAME ('@' is for release tags)")
    return parse_version_ref(ref)


def evalset(s: Session, name: str) -> EvalSet:
    row = s.scalars(select(EvalSet).where(EvalSet.name == name)).first()
    if row is None:
        raise NotFound(f"eval set {name!r} does not exist")
    return row


def evalset_version(s: Session, name: str, version: int | None) -> EvalSetVersion:
    es = evalset(s, name)
    query = select(EvalSetVersion).where(EvalSetVersion.eval_set_id == es.id)
    if version is None:
        query = query.order_by(EvalSetVersion.version.desc())
    else:
        query = query.where(EvalSetVersion.version == version)
    row = s.scalars(query.limit(1)).first()
    if row is None:
        raise NotFound(
            f"eval set {name!r} has no version {version}" if version else f"eval set {name!r} has no versions"
        )
    return row


def resolve_evalset(s: Session, ref: str) -> EvalSetVersion:
    return evalset_version(s, *parse_evalset_ref(ref))


def evalset_leaves(s: Session, ref: str) -> list[EvalSetVersion]:
    """The item-holding versions ``ref`` stands for: itself, or a collection's members at their pinned
    versions (collections of collections are followed), each once, in member order."""
    found: dict[int, EvalSetVersion] = {}

    def walk(v: EvalSetVersion) -> None:
        if v.dataset_version_id is not None:
            found.setdefault(v.id, v)
        for member in v.members:
            walk(resolve_evalset(s, member))

    walk(resolve_evalset(s, ref))
    return list(found.values())
