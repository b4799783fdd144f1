"""Takedown requests and their plans: which live releases hold what a request names, where those bytes are,
who trained on them, and what was built from them. Planning changes nothing.

A request's selector becomes one filter on the sample columns every data table keeps (``source_*``,
``sample_id``, ``content_hash``, ``meta``), never on ``text``: a source, ids or hashes are answered from
those columns alone; a ``where`` on ``meta.KEY`` reads each version's ``meta`` once (DuckDB's JSON
functions; pyarrow has none). Each live release's pinned Delta version is scanned with the filter and
``__filename``, so the plan names the files that hold affected samples: the ones applying a takedown
rewrites, the others stay shared.
"""

from __future__ import annotations

import bisect
import dataclasses
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
from sqlalchemy import select
from sqlalchemy.orm import Session

from lineage import releases
from lineage.catalog import Catalog, DatasetVersion, Release, Run, TakedownRequest, queries
from lineage.catalog.models import as_utc, utcnow
from lineage.errors import Conflict
from lineage.releases import qc, takedown, usage
from lineage.releases.purge import purge as purge_files
from lineage.releases.replicas import copy_release, verify_release
from lineage.service import schemas as S
from lineage.service.errors import BadRequest, NotFound
from lineage.service.samples import Stores
from lineage.settings import Settings
from pipelines.faults import checkpoint
from storage.delta import key_ranges, rows_with_keys
from storage.tier import get_tier

if TYPE_CHECKING:
    import pyarrow.dataset as pads

_SOURCE_COLUMNS = ("source_dataset", "source_uri", "source_path")


def glob_regex(glob: str) -> str:
    """An anchored RE2 pattern for a path glob: ``**`` any characters, ``*`` and ``?`` within a folder."""
    parts = re.split(r"(\*\*|\*|\?)", glob)
    wild = {"**": ".*", "*": "[^/]*", "?": "[^/]"}
    return "^" + "".join(wild.get(p, re.escape(p)) for p in parts) + "$"


def _match(column: pc.Expression, op: str, value: str | list[str]) -> pc.Expression:
    if op == "eq":
        return column == value
    if op == "in":
        return column.isin(value)
    pattern = glob_regex(str(value)) if op == "glob" else f"^(?:{value})$"
    return pc.match_substring_regex(column, pattern=pattern)


def arrow_filter(selector: S.TakedownSelector) -> pc.Expression | None:
    """The selector as a filter pyarrow pushes into the scan; None for a ``where`` on ``meta`` (DuckDB's)."""
    if selector.source is not None:
        src = selector.source
        expr = pc.field("source_dataset") == src.dataset
        if src.uri is not None:
            uri = pc.field("source_uri")
            expr &= pc.starts_with(uri, src.uri) if src.uri.endswith("/") else uri == src.uri
        if src.path is not None:
            expr &= _match(pc.field("source_path"), "glob", src.path)
        return expr
    if selector.sample_ids is not None:
        return pc.field("sample_id").isin(selector.sample_ids)
    if selector.content_hashes is not None:
        return pc.field("content_hash").isin(selector.content_hashes)
    where = selector.where
    assert where is not None  # the model holds exactly one form
    if where.field in _SOURCE_COLUMNS:
        return _match(pc.field(where.field), where.op, where.value)
    return None


def _meta_sql(where: S.FieldPredicate) -> tuple[str, list[Any]]:
    """The DuckDB condition of a ``where`` on ``meta.KEY`` (the value compared as text, as JSON holds it)."""
    value = "json_extract_string(meta, ?)"
    path = ["$." + ".".join(f'"{part}"' for part in where.field.removeprefix("meta.").split("."))]
    if where.op == "eq":
        return f"{value} = ?", [*path, where.value]
    if where.op == "in":
        return f"list_contains(?, {value})", [where.value, *path]
    pattern = glob_regex(str(where.value)) if where.op == "glob" else f"^(?:{where.value})$"
    return f"regexp_full_match({value}, ?)", [*path, pattern]


def affected_rows(stores: Stores, key: tuple[str, str, int], selector: S.TakedownSelector) -> pa.Table:
    """``sample_id`` and ``__filename`` of every sample of one Delta version the selector names. Sample ids
    read only the files whose ``sample_id`` range (in the log's statistics) can hold one: a version's
    files are written sorted by it, so a thousand ids touch a handful of files, not every file's ids."""
    tier = get_tier(key[0], stores.tables.settings)
    ranges = key_ranges(tier, key[1], key[2], "sample_id") if selector.sample_ids else None
    if ranges is None:
        return select_rows(stores, stores.tables.get(*key).dataset, selector)
    ids = sorted(set(selector.sample_ids or ()))
    files = [path for path, lo, hi in ranges if bisect.bisect_left(ids, lo) < bisect.bisect_right(ids, hi)]
    return rows_with_keys(tier, key[1], files, ["sample_id"], "sample_id", pa.array(ids, pa.string()))


def select_rows(stores: Stores, dataset: pads.Dataset, selector: S.TakedownSelector) -> pa.Table:
    """``sample_id`` and ``__filename`` of the rows of ``dataset`` (sample columns) the selector names."""
    expr = arrow_filter(selector)
    if expr is not None:
        return dataset.to_table(columns=["sample_id", "__filename"], filter=expr)
    assert selector.where is not None
    scanned = dataset.to_table(columns=["sample_id", "meta", "__filename"])
    condition, params = _meta_sql(selector.where)
    with stores.duck.tables(t=scanned) as con:
        return con.sql(f'SELECT sample_id, "__filename" FROM t WHERE {condition}', params=params).to_arrow_table()


def quarantine_filter(selector: S.TakedownSelector) -> pc.Expression | None:
    """The selector on quarantine rows, which keep only the source columns of what they failed to read: a
    source, or a ``where`` on a source column. Ids, hashes and ``meta`` name samples, which a record that
    never became one lacks."""
    on_source = selector.where is not None and selector.where.field in _SOURCE_COLUMNS
    return arrow_filter(selector) if selector.source is not None or on_source else None


# -- requests --------------------------------------------------------------------------------------
def _check_pattern(selector: S.TakedownSelector) -> None:
    """A ``regex`` that RE2 (pyarrow's and DuckDB's engine) cannot compile is refused when recorded, not
    when planned."""
    where = selector.where
    if where is None or where.op != "regex":
        return
    try:
        pc.match_substring_regex(pa.array([""]), pattern=f"^(?:{where.value})$")
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise BadRequest(f"where.value is not a regular expression RE2 accepts: {exc}") from None


def create(catalog: Catalog, body: S.TakedownCreate, actor: str) -> S.TakedownOut:
    _check_pattern(body.selector)
    with catalog.session() as s:
        request = TakedownRequest(
            selector=body.selector.model_dump(mode="json", exclude_none=True),
            kind=body.kind,
            reason=body.reason,
            requested_by=actor,
        )
        s.add(request)
        s.flush()
        return S.TakedownOut.model_validate(request)


def get(catalog: Catalog, request_id: int) -> S.TakedownOut:
    with catalog.session() as s:
        in_range = 0 < request_id < 2**31  # the id column is a 32-bit integer
        request = s.get(TakedownRequest, request_id) if in_range else None
        if request is None:
            raise NotFound(f"takedown request {request_id} does not exist")
        return S.TakedownOut.model_validate(request)


# -- plans -----------------------------------------------------------------------------------------
def plan(stores: Stores, request: S.TakedownOut, *, sample_limit: int) -> S.TakedownPlan:
    return _plan(stores, request, sample_limit=sample_limit)[0]


def _plan(stores: Stores, request: S.TakedownOut, *, sample_limit: int) -> tuple[S.TakedownPlan, dict[str, pa.Table]]:
    """The plan, and each affected release's rows (``sample_id``, ``__filename``), which apply rewrites."""
    scanned: dict[str, pa.Table] = {}
    with stores.catalog.session() as s:
        live = select(Release).where(Release.state.in_(releases.LIVE_STATES)).order_by(Release.name, Release.tag)
        found = [(r, _release_facts(s, r)) for r in s.scalars(live)]
        runs = [(run.id, run.inputs) for run in s.scalars(select(Run).where(Run.status == "succeeded"))]
        made_by = {dv.run_id: (dv.dataset.name, dv.version) for dv in s.scalars(select(DatasetVersion))}
    impacts = []
    for release, facts in found:
        rows = affected_rows(stores, facts["key"], request.selector)
        if not rows.num_rows:
            continue
        scanned[release.ref] = rows
        per_file = {c["values"]: c["counts"] for c in pc.value_counts(rows.column("__filename")).to_pylist()}
        first = pc.select_k_unstable(rows, k=min(sample_limit, rows.num_rows), sort_keys=[("sample_id", "ascending")])
        ids = rows.column("sample_id").take(first).to_pylist()
        manifest_files = {f["path"]: f for f in facts["files"]}
        impacts.append(
            S.ReleaseImpact(
                release=release.ref,
                state=release.state,
                dataset=facts["dataset"],
                version=facts["version"],
                samples=rows.num_rows,
                sample_ids=ids,
                files=[
                    S.AffectedFile(
                        path=path,
                        rows=manifest_files.get(path, {}).get("rows", 0),
                        bytes=manifest_files.get(path, {}).get("size", 0),
                        affected=n,
                    )
                    for path, n in sorted(per_file.items())
                ],
                replicas=facts["replicas"],
                jobs=facts["jobs"],
            )
        )
    sources = {(i.dataset, i.version) for i in impacts}
    answer = S.TakedownPlan(
        request=request,
        releases=impacts,
        releases_checked=len(found),
        downstream=_downstream(sources, runs, made_by),
        read_text=request.selector.where is not None and request.selector.where.field.startswith("meta."),
    )
    return answer, scanned


def _release_facts(s: Any, release: Release) -> dict[str, Any]:
    """What the plan says about a release, read while the session is open."""
    dv = release.dataset_version
    reads: dict[str, list[Any]] = {}
    for read in s.scalars(usage.reads_query(release, None)):
        reads.setdefault(read.job, []).append(read)
    return {
        "key": (dv.tier, dv.data_path, dv.data_delta_version),
        "dataset": dv.dataset.name,
        "version": dv.version,
        "files": list(release.manifest.get("files", [])),
        "replicas": [
            S.ReplicaImpact(tier=r.tier, state=r.state, table_path=r.table_path, primary=r.primary)
            for r in queries.replicas_of(s, release)
        ],
        "jobs": [
            S.JobImpact(
                job=job,
                ranks=len({r.rank for r in rs}),
                world_size=max(r.world_size for r in rs),
                last_opened=max(as_utc(r.opened_at) for r in rs),
            )
            for job, rs in sorted(reads.items())
        ],
    }


def _downstream(
    sources: set[tuple[str, int]],
    runs: list[tuple[str, list[Any]]],
    made_by: dict[str, tuple[str, int]],
) -> list[S.DownstreamVersion]:
    """Versions built from ``sources`` through dataset inputs, followed to any depth (breadth first). A
    downstream version may itself be released (and so also among the plan's releases)."""
    found: list[S.DownstreamVersion] = []
    seen: set[tuple[str, int]] = set()
    frontier = sorted(sources)
    while frontier:
        nxt = []
        for dataset, version in frontier:
            for run_id, inputs in runs:
                if run_id not in made_by or not any(
                    i.get("kind") == "dataset" and i.get("dataset") == dataset and i.get("version") == version
                    for i in inputs
                ):
                    continue
                built = made_by[run_id]
                if built in seen:
                    continue
                seen.add(built)
                nxt.append(built)
                found.append(
                    S.DownstreamVersion(
                        dataset=built[0], version=built[1], built_from=f"{dataset}:v{version}", run_id=run_id
                    )
                )
        frontier = sorted(nxt)
    return found


# -- apply -----------------------------------------------------------------------------------------
def apply(
    stores: Stores,
    settings: Settings,
    request: S.TakedownOut,
    *,
    tag_suffix: str | None,
    actor: str,
    purge: bool = False,
    engine: str = "local",
) -> S.TakedownApplied:
    """For each live release holding the request's samples: a new version without them (only the files
    holding them rewritten), released under a successor tag and copied to every other tier the old
    release had a verified replica on, then the old release withdrawn. Each step is idempotent, so an
    apply that was killed is finished by running it again. ``engine`` (local, spark, ray) rewrites the
    affected files, with the same result on each. ``purge`` then purges (:func:`purge_request`)."""
    suffix = tag_suffix if tag_suffix is not None else f"-td{request.id}"
    done = []
    answer, scanned = _plan(stores, request, sample_limit=0)
    for impact in answer.releases:
        rows = scanned[impact.release]
        drop: dict[str, list[str]] = {}
        for sample, path in zip(
            rows.column("sample_id").to_pylist(), rows.column("__filename").to_pylist(), strict=True
        ):
            drop.setdefault(path, []).append(sample)
        removed = takedown.remove_samples(
            stores.catalog, settings, impact.dataset, impact.version, drop, request.id, engine=engine
        )
        checkpoint("takedown.version_made")
        name, tag = impact.release.split("@")
        successor = f"{name}@{tag}{suffix}"
        releases.publish(
            stores.catalog,
            settings,
            successor,
            dataset=impact.dataset,
            version=removed.version,
            created_by=actor,
            qc_report=_successor_report(stores, settings, impact, drop, request.id, removed.rows),
            gate=_inherited_gate(stores.catalog, impact.release),
            shares_files_of=impact.release,
            override_reason=f"takedown request {request.id}: its successor is published whatever the gate says",
        )
        checkpoint("takedown.successor_published")
        for replica in impact.replicas:
            if not replica.primary and replica.state == "verified":
                copy_release(stores.catalog, settings, successor, replica.tier)
        checkpoint("takedown.successor_copied")
        releases.withdraw(stores.catalog, impact.release, successor=successor, request_id=request.id)
        checkpoint("takedown.withdrawn")
        done.append(
            S.Successor(
                release=impact.release,
                successor=successor,
                dataset=impact.dataset,
                version=removed.version,
                samples_removed=impact.samples,
                files_rewritten=len(impact.files),
            )
        )
    with stores.catalog.session() as s:
        row = s.get(TakedownRequest, request.id)
        if row.state == "planned":
            row.state, row.applied_at = "applied", utcnow()
    purged = purge_request(stores, settings, get(stores.catalog, request.id)) if purge else None
    return S.TakedownApplied(request=get(stores.catalog, request.id), successors=done, purge=purged)


def _inherited_gate(catalog: Catalog, ref: str) -> qc.GateConfig | None:
    """The gate the withdrawn release was published through: the successor is measured against it and the
    results are recorded, but a failure does not stop it (the removal is not optional; the override
    names the request)."""
    with catalog.session() as s:
        record = queries.get_release(s, ref).gate
    return qc.GateConfig.model_validate(record["conditions"]) if record else None


def _successor_report(
    stores: Stores,
    settings: Settings,
    impact: S.ReleaseImpact,
    drop: dict[str, list[str]],
    request_id: int,
    removed_rows: pa.Table | None = None,
) -> Callable[[Session, DatasetVersion], dict[str, Any] | None]:
    """The successor's QC report from its predecessor's, minus the removed rows: publishing it must not cost
    a pass over every text of the release. ``removed_rows`` are those the rewrite had in hand; without them
    (a rerun that reuses a finished version, a distributed engine) they are read from the affected files."""

    def report(s: Session, dv: DatasetVersion) -> dict[str, Any] | None:
        old = queries.get_release(s, impact.release)
        base = old.manifest.get("qc")
        if not base:
            return None
        odv = old.dataset_version
        removed = (
            removed_rows if removed_rows is not None else takedown.removed_rows(settings, odv.tier, odv.data_path, drop)
        )
        records = takedown.takedown_records("", 0, removed.column("sample_id").to_pylist(), request_id)
        return qc.successor_report(s, dv, settings, base, removed, records)

    return report


# -- purge -----------------------------------------------------------------------------------------
def purge_request(stores: Stores, settings: Settings, request: S.TakedownOut) -> S.TakedownPurged:
    """Delete the request's samples' bytes everywhere (:mod:`lineage.releases.purge`), once nothing live
    holds them and each successor's checksums pass on every tier that held the release it replaces.
    Running it again finishes a killed purge, and after a finished one deletes nothing."""
    if request.state == "planned":
        raise Conflict(f"takedown request {request.id} is planned: apply it before purging")
    still = plan(stores, request, sample_limit=5).releases
    if still:
        refs = ", ".join(f"{i.release} ({i.samples} samples)" for i in still)
        raise Conflict(f"live releases still hold samples of takedown request {request.id}: {refs}; apply it again")
    verified = _verify_successors(stores.catalog, settings, request.id)
    checkpoint("purge.successors_verified")
    report = purge_files(
        stores.catalog,
        settings,
        lambda dataset: select_rows(stores, dataset, request.selector),
        quarantine_filter(request.selector),
        request.id,
    )
    stores.tables.clear()  # cached Delta versions may name deleted files
    body = {**dataclasses.asdict(report), "successors_verified": verified}
    with stores.catalog.session() as s:
        row = s.get(TakedownRequest, request.id)
        row.state, row.purged_at, row.purge_report = "purged", utcnow(), body
    return S.TakedownPurged(request=get(stores.catalog, request.id), **body)


def _verify_successors(catalog: Catalog, settings: Settings, request_id: int) -> list[str]:
    """``TIER:SUCCESSOR`` for each tier a withdrawn release of the request had a verified copy on, each
    read back and matched now; a successor missing from one of them, or not matching, stops the purge."""
    with catalog.session() as s:
        withdrawn = s.scalars(select(Release).where(Release.withdrawn_by == request_id).order_by(Release.id))
        wanted = [
            (r.ref, r.successor, sorted({x.tier for x in queries.replicas_of(s, r) if x.state == "verified"}))
            for r in withdrawn
        ]
    checked = []
    for ref, successor, tiers in wanted:
        for tier in tiers:
            try:
                outcome = verify_release(catalog, settings, successor, tier)
            except NotFound:
                raise Conflict(
                    f"{successor} has no copy on tier {tier}, where {ref} was: copy it there "
                    f"(`lineage tier copy {successor} --to {tier}`) before purging"
                ) from None
            if outcome.state != "verified":
                raise Conflict(f"{successor} on tier {tier} does not match its manifest: {outcome.problems}")
            checked.append(f"{tier}:{successor}")
    return checked
