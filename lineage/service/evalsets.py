"""Eval sets as versioned assets (issue #19, item 1): register, list, show, diff, deprecate, collections.

**An eval set is its own catalog table, whose items live in a dataset version.** ``eval_sets`` and
``eval_set_versions`` hold what only a benchmark has: its task, split and language, the fields checked
for overlap and how they join, versions numbered by whoever registers them (``--version``, not by the
next run), a content digest that makes registering the same version again a no-op and different
content a conflict, a bad-input report, deprecation of the whole set, and collections (集合) whose
versions pin member versions and hold no items of their own. None of that fits a dataset row, and an
eval set listed among datasets would be offered to pipelines and releases as training data. The items
themselves are stored the way every sample is: the convert operator (stable ids, quarantine with
reasons) writes an immutable Delta version of the dataset ``evalset.NAME`` on a tier, which the eval
set version pins by id (so runs, lineage, tier placement and gc need nothing new).

Names and references are datasets' (:mod:`storage.names`): ``NAME`` and ``NAME:vN`` (``NAME`` alone is
its latest version); ``@`` stays for release tags.

Bad input is accepted and counted (``report``): items with an empty checked field, duplicate items
(same text), items with fewer units than the n-gram size (they count as one n-gram), and the rows
convert quarantined, by reason. Two items with one id (``--id-field``) fail the run, as for any input.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy import func, inspect, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from lineage.catalog import DatasetVersion, EvalSet, EvalSetVersion, queries
from lineage.catalog.models import ContaminationHit, ContaminationScan, utcnow
from lineage.errors import Conflict, Invalid, NotFound
from lineage.service import schemas as S
from storage import names

if TYPE_CHECKING:
    from lineage.catalog import Catalog
    from lineage.service.tables import Duck, TableCache
    from lineage.settings import Settings
    from pipelines.engines.base import ProgressFn
    from pipelines.spec import PipelineSpec


class Service(Protocol):
    """What these operations use of :class:`~lineage.service.core.Service` (which calls them)."""

    settings: Settings
    catalog: Catalog
    tables: TableCache
    duck: Duck

    def run_pipeline(
        self, spec: PipelineSpec, *, engine: str | None = None, progress: ProgressFn | None = None
    ) -> S.RunResult: ...


log = logging.getLogger(__name__)

TASKS = ("mcq", "qa", "code", "function_call", "agent_trajectory", "other")
DATASET_PREFIX = "evalset."  # the dataset holding an eval set's items
NAME_MAX = names.NAME_MAX - len(DATASET_PREFIX)
DIFF_IDS = 1000  # item ids a diff lists per kind (the counts are complete)


def items_dataset(name: str) -> str:
    return DATASET_PREFIX + name


def check_evalset_name(name: str) -> str:
    names.check_name(name, "eval set")
    if len(name) > NAME_MAX:
        raise Invalid(f"invalid eval set name {name[:40]!r}…: at most {NAME_MAX} characters")
    return name


def _columns(obj: Any) -> dict[str, Any]:
    return {c.key: getattr(obj, c.key) for c in inspect(type(obj)).column_attrs}


parse_ref = queries.parse_evalset_ref
evalset_row = queries.evalset
version_row = queries.evalset_version
resolve = queries.resolve_evalset
leaves = queries.evalset_leaves


def evalset_out(s: Session, es: EvalSet) -> S.EvalSetOut:
    versions = list(s.scalars(select(EvalSetVersion.version).where(EvalSetVersion.eval_set_id == es.id)))
    return S.EvalSetOut.model_validate(
        {**_columns(es), "versions": sorted(versions), "latest_version": max(versions, default=None)}
    )


def version_out(v: EvalSetVersion) -> S.EvalSetVersionOut:
    dv = v.dataset_version
    return S.EvalSetVersionOut.model_validate(
        {
            **_columns(v),
            "name": v.eval_set.name,
            "ref": v.ref,
            "kind": v.eval_set.kind,
            "state": v.eval_set.state,
            "items": None if dv is None else dv.ref,
            "report": S.EvalSetReport.model_validate(v.report),
        }
    )


# -- register ----------------------------------------------------------------------------------
def register(
    service: Service,
    name: str,
    path: str,
    *,
    version: int | None,
    meta: dict[str, Any],
    text_fields: list[str],
    join: str,
    id_field: str | None,
    tier: str | None,
    fmt: str,
    engine: str,
    base_dir: Path | None,
    progress: ProgressFn | None,
    actor: str,
) -> S.EvalSetRegistered:
    """Items from a JSONL, Parquet or CSV file (or folder, or glob) become ``NAME:vN``; see the module."""
    check_evalset_name(name)
    _check_meta(meta)
    if version is not None and version < 1:
        raise Invalid(f"an eval set version is a number >= 1, got {version}")
    if not text_fields or len(join) > 20:
        raise Invalid("an eval set needs at least one text field, and a join of at most 20 characters")
    source = {
        "dataset": name,
        "path": path,
        "tier": tier,
        "format": fmt,
        "id_field": id_field,
        "convert": {"text_fields": list(text_fields), "join": join},
    }
    digest = _input_digest(service, source, base_dir)
    with service.catalog.session() as s:
        existing = _existing(s, name, version, digest, kind="items")
        if existing is not None:
            return S.EvalSetRegistered(evalset=version_out(existing), changed=False)
    from pipelines.spec import PipelineSpec  # start-up: PyYAML

    spec = S.parse_input(
        PipelineSpec,
        {
            "name": f"evalset-{name}",
            "inputs": [source],
            "output": {"dataset": items_dataset(name), "license": meta.get("license") or "", "tags": ["evalset"]},
        },
    )
    spec.base_dir = base_dir or Path.cwd()
    result = service.run_pipeline(spec, engine=engine, progress=progress)
    with service.catalog.session() as s:
        dv = queries.dataset_version(s, result.dataset, result.version)
        key = (dv.tier, dv.data_path, dv.data_delta_version), (dv.tier, dv.quarantine_path, dv.quarantine_delta_version)
    report = bad_input_report(service, *key, text_fields=text_fields)
    return _record(
        service,
        name,
        version,
        digest,
        kind="items",
        meta=meta,
        actor=actor,
        fields={
            "dataset_version_id": dv.id,
            "text_fields": list(text_fields),
            "join": join,
            "id_field": id_field,
            "item_count": result.row_count,
            "report": report.model_dump(),
        },
    )


def register_collection(service: Service, name: str, body: S.CollectionCreate, *, actor: str) -> S.EvalSetRegistered:
    """A version of collection ``name`` pinning each member at its version (``NAME`` alone: its latest)."""
    check_evalset_name(name)
    meta = body.model_dump(include={"task", "split", "language", "license", "description"}, exclude_none=True)
    _check_meta(meta)
    with service.catalog.session() as s:
        pinned: list[str] = []
        count = 0
        for ref in body.members:
            member = resolve(s, ref)
            if member.eval_set.name == name:
                raise Invalid(f"collection {name!r} cannot contain itself ({ref})")
            if member.ref not in pinned:
                pinned.append(member.ref)
                count += member.item_count
        digest = hashlib.sha256(json.dumps(pinned).encode()).hexdigest()
        existing = _existing(s, name, body.version, digest, kind="collection")
        if existing is not None:
            return S.EvalSetRegistered(evalset=version_out(existing), changed=False)
    return _record(
        service,
        name,
        body.version,
        digest,
        kind="collection",
        meta=meta,
        actor=actor,
        fields={"members": pinned, "item_count": count, "report": S.EvalSetReport(items=count).model_dump()},
    )


def _check_meta(meta: dict[str, Any]) -> None:
    task = meta.get("task")
    if task is not None and task not in TASKS:
        raise Invalid(f"unknown task {task!r}: use one of {', '.join(TASKS)}")


def _existing(s: Session, name: str, version: int | None, digest: str, *, kind: str) -> EvalSetVersion | None:
    """The version already registered with this content (a no-op), or None; a conflict is refused."""
    es = s.scalars(select(EvalSet).where(EvalSet.name == name)).first()
    if es is None:
        return None
    if es.kind != kind:
        raise Conflict(f"eval set {name!r} is {'a collection' if es.kind == 'collection' else 'not a collection'}")
    query = select(EvalSetVersion).where(EvalSetVersion.eval_set_id == es.id)
    if version is None:  # no version asked for: the same content as the latest is that version
        latest = s.scalars(query.order_by(EvalSetVersion.version.desc()).limit(1)).first()
        return latest if latest is not None and latest.content_digest == digest else None
    row = s.scalars(query.where(EvalSetVersion.version == version)).first()
    if row is None:
        return None
    if row.content_digest != digest:
        raise Conflict(
            f"{row.ref} is already registered with other content (digest {row.content_digest[:12]}…, "
            f"now {digest[:12]}…); register a new version"
        )
    return row


def _record(
    service: Service,
    name: str,
    version: int | None,
    digest: str,
    *,
    kind: str,
    meta: dict[str, Any],
    actor: str,
    fields: dict[str, Any],
) -> S.EvalSetRegistered:
    try:
        with service.catalog.session() as s:
            es = s.scalars(select(EvalSet).where(EvalSet.name == name)).first()
            if es is None:
                es = EvalSet(name=name, kind=kind)
                s.add(es)
            if es.state == "deprecated":
                raise Conflict(f"eval set {name!r} is deprecated: it takes no new versions")
            for key, value in meta.items():
                setattr(es, key, value)
            s.flush()
            latest = s.scalar(select(func.max(EvalSetVersion.version)).where(EvalSetVersion.eval_set_id == es.id))
            row = EvalSetVersion(
                version=version or (latest or 0) + 1, content_digest=digest, created_by=actor, **fields
            )
            row.eval_set = es
            if row.dataset_version_id is not None:
                row.dataset_version = s.get(DatasetVersion, row.dataset_version_id)
            s.add(row)
            s.flush()
            log.info("eval set %s registered (%d items) by %s", row.ref, row.item_count, actor)
            return S.EvalSetRegistered(evalset=version_out(row), changed=True)
    except IntegrityError:  # registered by someone else meanwhile
        raise Conflict(f"eval set {name!r} version {version} was registered concurrently; try again") from None


def _input_digest(service: Service, source: dict[str, Any], base_dir: Path | None) -> str:
    """SHA-256 of how the items are read and of every input file's bytes, by relative path: what
    "the same content" means for registering a version again."""
    # start-up: the planners load pyarrow and the convert operator's readers
    from operators.convert.plan import plan_chunks
    from pipelines.sources import resolve_source
    from pipelines.spec import InputSpec
    from storage import links

    inp = S.parse_input(InputSpec, source)
    src = resolve_source(inp, base_dir or Path.cwd(), service.settings)
    chunks = plan_chunks(src, 0).to_pylist()
    h = hashlib.sha256(json.dumps({k: source[k] for k in ("format", "id_field", "convert")}, sort_keys=True).encode())
    for chunk in chunks:
        h.update(chunk["relative_path"].encode("utf-8", "surrogateescape") + b"\0")
        if chunk["refused"] is None:
            with src.tier.filesystem.open_input_stream(links.real_path(src.tier, chunk["path"])) as f:
                while block := f.read(1 << 20):
                    h.update(block)
        h.update(b"\0")
    return h.hexdigest()


def bad_input_report(
    service: Service, data: tuple[str, str, int], quarantine: tuple[str, str, int], *, text_fields: list[str]
) -> S.EvalSetReport:
    """Counts of what was accepted but is worth knowing (see the module), and of what was quarantined."""
    # start-up: numba kernels of the unit stream
    from operators.contamination.params import NgramParams
    from operators.contamination.units import unit_counts

    table = service.tables.get(*data).dataset.to_table(columns=["text", "content_hash", "meta"])
    empty: Counter[str] = Counter()
    for meta in table.column("meta").to_pylist():
        fields = json.loads(meta) if meta else {}
        for field in text_fields:
            value = fields.get(field)
            if value is None or (isinstance(value, str | list) and not str(value).strip("[] \n\t")):
                empty[field] += 1
    hashes = Counter(table.column("content_hash").to_pylist())
    params = NgramParams()
    counts, cjk = unit_counts(table.column("text"), params.cjk_ratio)
    short = int(((~cjk & (counts < params.word_ngram)) | (cjk & (counts < params.char_ngram))).sum())
    reasons = Counter(service.tables.get(*quarantine).dataset.to_table(columns=["reason"]).column("reason").to_pylist())
    return S.EvalSetReport(
        items=table.num_rows,
        empty_fields=dict(sorted(empty.items())),
        duplicate_items=sum(n - 1 for n in hashes.values() if n > 1),
        shorter_than_n=short,
        word_ngram=params.word_ngram,
        char_ngram=params.char_ngram,
        quarantined=dict(sorted(reasons.items())),
    )


# -- read, diff, deprecate -------------------------------------------------------------------------
def diff(service: Service, name: str, base: int, target: int) -> S.EvalSetDiff:
    """Items added, removed and changed (same id, other text) from ``name:v{base}`` to ``name:v{target}``."""
    with service.catalog.session() as s:
        b, t = version_row(s, name, base), version_row(s, name, target)
        if b.dataset_version is None or t.dataset_version is None:
            return _members_diff(b, t)
        bdv, tdv = b.dataset_version, t.dataset_version
        bkey, tkey = (
            (bdv.tier, bdv.data_path, bdv.data_delta_version),
            (tdv.tier, tdv.data_path, tdv.data_delta_version),
        )
        bref, tref = b.ref, t.ref
    rows = service.duck.rows(
        """
        SELECT coalesce(t.sample_id, b.sample_id) AS item_id,
               CASE WHEN b.sample_id IS NULL THEN 'added' WHEN t.sample_id IS NULL THEN 'removed'
                    ELSE 'changed' END AS change
        FROM (SELECT sample_id, content_hash FROM base_ds) b
        FULL OUTER JOIN (SELECT sample_id, content_hash FROM target_ds) t ON b.sample_id = t.sample_id
        WHERE b.sample_id IS NULL OR t.sample_id IS NULL OR b.content_hash <> t.content_hash
        ORDER BY 1
        """,
        base_ds=service.tables.get(*bkey).dataset,
        target_ds=service.tables.get(*tkey).dataset,
    )
    by: dict[str, list[str]] = {"added": [], "removed": [], "changed": []}
    for r in rows:
        by[r["change"]].append(r["item_id"])
    return S.EvalSetDiff(
        base=bref,
        target=tref,
        **{k: len(v) for k, v in by.items()},
        **{f"{k}_items": v[:DIFF_IDS] for k, v in by.items()},
    )


def _members_diff(b: EvalSetVersion, t: EvalSetVersion) -> S.EvalSetDiff:
    added = [m for m in t.members if m not in b.members]
    removed = [m for m in b.members if m not in t.members]
    return S.EvalSetDiff(
        base=b.ref,
        target=t.ref,
        added=len(added),
        removed=len(removed),
        changed=0,
        added_items=[],
        removed_items=[],
        changed_items=[],
        added_members=added,
        removed_members=removed,
    )


def deprecate(service: Service, name: str, reason: str, *, actor: str) -> S.EvalSetOut:
    """Mark the eval set deprecated (all its versions; they stay readable); again: unchanged."""
    with service.catalog.session() as s:
        es = evalset_row(s, name)
        if es.state != "deprecated":
            es.state, es.deprecated_at, es.deprecation_reason = "deprecated", utcnow(), reason
            log.info("eval set %s deprecated by %s: %s", name, actor, reason)
        s.flush()
        return evalset_out(s, es)


def item_samples(
    s: Session,
    name: str,
    version: int,
    item_id: str,
    *,
    release: str | None,
    dataset: str | None,
    dataset_version: int | None,
    limit: int,
    offset: int,
) -> S.ItemSamples:
    """The samples of a release's (or a dataset version's) that contain item ``item_id`` of ``name:vN``, as
    its last contamination check (at publish, or ``evalset check``) recorded them: all of them, paged."""
    leaf = version_row(s, name, version)  # what does not exist is NotFound first, then a bad combination
    found_release = queries.get_release(s, release) if release is not None else None
    found_version = queries.dataset_version(s, dataset, dataset_version) if dataset is not None else None
    if (found_release is None) == (found_version is None):
        raise Invalid("name either a release (NAME@TAG) or a dataset (and its version), not both or neither")
    if leaf.dataset_version_id is None:
        raise Invalid(f"{leaf.ref} is a collection: ask for an item of one of its members ({', '.join(leaf.members)})")
    dv = found_release.dataset_version if found_release is not None else found_version
    assert dv is not None
    found = s.scalars(
        select(ContaminationScan).where(
            ContaminationScan.dataset_version_id == dv.id, ContaminationScan.eval_set_version_id == leaf.id
        )
    ).first()
    target = release or f"{dv.dataset.name}:v{dv.version}"
    if found is None:
        raise NotFound(
            f"{target} was never checked against {leaf.ref}: publish it, or run `lineage evalset check {leaf.ref}`"
        )
    hits = select(ContaminationHit).where(ContaminationHit.scan_id == found.id, ContaminationHit.item_id == item_id)
    total = s.scalar(select(func.count()).select_from(hits.subquery())) or 0
    page = s.scalars(hits.order_by(ContaminationHit.sample_id).limit(limit).offset(offset))
    return S.ItemSamples(
        evalset=leaf.ref,
        item_id=item_id,
        dataset=dv.dataset.name,
        version=dv.version,
        release=release,
        checked_at=found.checked_at,
        threshold=found.threshold,
        coverage=found.coverage,
        checked_samples=found.checked_samples,
        items=[S.ItemSample.model_validate(_columns(h)) for h in page],
        total=total,
        limit=limit,
        offset=offset,
    )
