"""Sample-level lineage questions, answered from the columnar tables (DuckDB over Delta versions).

The catalog only says which Delta versions a dataset version or release pins; every per-sample
fact comes from the lineage and data tables. Point lookups touch only the files and row groups
whose ``sample_id`` range holds the id (see :mod:`lineage.service.tables`); scans over whole
versions run in DuckDB.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from lineage import releases
from lineage.catalog import Catalog, Dataset, DatasetVersion, Release, queries
from lineage.service import schemas as S
from lineage.service.errors import BadRequest
from lineage.service.tables import Duck, TableCache


@dataclass(frozen=True)
class Stores:
    """What the answers read: the catalog (which Delta versions are pinned), the opened Delta
    versions, and two DuckDB pools: ``duck`` for scans over whole versions, ``lookups`` for point
    lookups. The service owns them; this module only borrows them."""

    catalog: Catalog
    tables: TableCache
    duck: Duck
    lookups: Duck


_LINEAGE_COLUMNS = ["run_id", "step", "operator", "operator_version", "verdict", "reason", "related_ids", "detail"]
_SAMPLE_COLUMNS = [
    "sample_id",
    "content_hash",
    "source_dataset",
    "source_version",
    "source_uri",
    "source_path",
    "source_row",
    "source_offset",
    "meta",
]


def _compact(detail: dict[str, Any] | None) -> dict[str, Any] | None:
    if not detail:
        return None
    kept = {k: v for k, v in detail.items() if v is not None}
    return kept or None


def lineage_records(stores: Stores, dv: DatasetVersion | tuple[str, str, int], sample_id: str) -> list[dict[str, Any]]:
    key = dv if isinstance(dv, tuple) else (dv.tier, dv.lineage_path, dv.lineage_delta_version)
    rows = sorted(stores.tables.get(*key).lookup(sample_id, _LINEAGE_COLUMNS, stores.lookups), key=lambda r: r["step"])
    for r in rows:
        r["detail"] = _compact(r["detail"])
    return rows


def sample_row(
    stores: Stores, dv: DatasetVersion | tuple[str, str, int], sample_id: str, *, include_text: bool = False
) -> dict[str, Any] | None:
    key = dv if isinstance(dv, tuple) else (dv.tier, dv.data_path, dv.data_delta_version)
    rows = stores.tables.get(*key).lookup(
        sample_id, _SAMPLE_COLUMNS + (["text"] if include_text else []), stores.lookups
    )
    return rows[0] if rows else None


def verdicts(
    stores: Stores,
    lineage_key: tuple[str, str, int],
    *,
    operator: str | None,
    verdict: str | None,
    limit: int,
    offset: int,
) -> tuple[list[dict[str, Any]], int]:
    """One page of a version's lineage records (by sample id, then step), with the operator and verdict
    asked for, and how many there are: one scan of the lineage table each."""
    where = "(? IS NULL OR operator = ?) AND (? IS NULL OR verdict = ?)"
    params = [operator, operator, verdict, verdict]
    table = stores.tables.get(*lineage_key).dataset
    total = stores.duck.scalar(f"SELECT count(*) FROM lin WHERE {where}", params, lin=table)
    rows = stores.duck.rows(
        f"SELECT sample_id, step, operator, verdict, reason FROM lin WHERE {where} "
        "ORDER BY sample_id, step LIMIT ? OFFSET ?",
        [*params, limit, offset],
        lin=table,
    )
    return rows, int(total or 0)


def _duplicate(records: list[dict[str, Any]]) -> S.DuplicateInfo | None:
    for rec in records:
        dup = (rec["detail"] or {}).get("duplicate")
        if dup:
            return S.DuplicateInfo(**dup)
    return None


def _source(records: list[dict[str, Any]], sample: dict[str, Any] | None) -> S.SampleSource | None:
    for rec in records:
        src = (rec["detail"] or {}).get("source")
        if src:
            return S.SampleSource(**src)
    if sample:
        return S.SampleSource(
            dataset=sample["source_dataset"],
            version=sample["source_version"],
            uri=sample["source_uri"],
            path=sample["source_path"],
            row=sample["source_row"],
            offset=sample["source_offset"],
        )
    return None


def _pins(stores: Stores, dataset: str | None) -> list[tuple[DatasetVersion, list[str]]]:
    """Dataset versions (oldest first) with the refs of their releases; detached from the session."""
    with stores.catalog.session() as s:
        query = select(DatasetVersion).join(Dataset).order_by(DatasetVersion.created_at, DatasetVersion.id)
        if dataset is not None:
            query = query.where(Dataset.name == dataset)
        versions = list(s.scalars(query))
        refs: dict[int, list[str]] = {}
        for r in s.scalars(select(Release).where(Release.state != releases.DRAFT).order_by(Release.id)):
            refs.setdefault(r.dataset_version_id, []).append(r.ref)
        for dv in versions:
            _ = dv.dataset.name  # load before the session closes
        return [(dv, refs.get(dv.id, [])) for dv in versions]


def sample_lineage(
    stores: Stores, sample_id: str, *, dataset: str | None = None, include_text: bool = False
) -> S.SampleLineage:
    versions: list[S.VersionLineage] = []
    source: S.SampleSource | None = None
    duplicate: S.DuplicateInfo | None = None
    latest_row: dict[str, Any] | None = None
    for dv, refs in _pins(stores, dataset):
        records = lineage_records(stores, dv, sample_id)
        if not records:
            continue
        row = None if dv.purged_by is not None else sample_row(stores, dv, sample_id, include_text=include_text)
        dup = _duplicate(records)
        versions.append(
            S.VersionLineage(
                dataset=dv.dataset.name,
                version=dv.version,
                run_id=dv.run_id,
                in_output=row is not None,
                releases=refs,
                records=[S.LineageRecord(**r) for r in records],
                duplicate=dup,
                purged_by=dv.purged_by,
            )
        )
        source = source or _source(records, row)
        duplicate = dup or duplicate
        latest_row = row or latest_row
    return S.SampleLineage(
        sample_id=sample_id,
        found=bool(versions),
        source=source,
        duplicate=duplicate,
        versions=versions,
        sample=latest_row,
    )


def why_not(stores: Stores, sample_id: str, ref: str) -> S.WhyNot:
    with stores.catalog.session() as s:
        rel = queries.get_release(s, ref)
        dv = rel.dataset_version
        data_key = (dv.tier, dv.data_path, dv.data_delta_version)
        lineage_key = (dv.tier, dv.lineage_path, dv.lineage_delta_version)
        where = f"{dv.dataset.name} v{dv.version}"
    ref = rel.ref
    if sample_row(stores, data_key, sample_id) is not None:
        return S.WhyNot(
            sample_id=sample_id,
            release=ref,
            in_release=True,
            cause="in_release",
            explanation=f"sample {sample_id} is in {ref} ({where})",
        )
    records = lineage_records(stores, lineage_key, sample_id)
    if records:
        dropped = next((r for r in records if r["verdict"] == "dropped"), records[-1])
        dup = _duplicate([dropped])
        kept_in = None
        text = (
            f"step {dropped['step']} ({dropped['operator']}@{dropped['operator_version']}) of the run that made "
            f"{where} {dropped['verdict']} it"
        )
        if dropped["reason"]:
            text += f": {dropped['reason']}"
        if dup and dup.kept_id:
            kept_in = sample_row(stores, data_key, dup.kept_id) is not None
            text += f"; it duplicates {dup.kept_id}, which {'is' if kept_in else 'is not'} in {ref}"
        failed = [r for r in ((dropped["detail"] or {}).get("rules") or []) if not r.get("passed")]
        if failed:
            text += "; failed rules: " + ", ".join(
                f"{r['rule_set']}:{r['rule']} ({r['value']:.4g} {r['comparison']} {r['threshold']:.4g} is false)"
                for r in failed
            )
        return S.WhyNot(
            sample_id=sample_id,
            release=ref,
            in_release=False,
            cause="dropped",
            explanation=text,
            step=dropped["step"],
            operator=dropped["operator"],
            reason=dropped["reason"],
            duplicate=dup,
            kept_in_release=kept_in,
        )
    found = sample_lineage(stores, sample_id)
    found_in = [
        S.VersionRef(ref=f"{v.dataset}:v{v.version}", dataset=v.dataset, version=v.version)
        for v in found.versions
        if v.in_output
    ]
    if found.found:
        where_else = ", ".join(v.ref for v in found_in) or "no version's output"
        return S.WhyNot(
            sample_id=sample_id,
            release=ref,
            in_release=False,
            cause="not_an_input",
            explanation=(
                f"the run that made {where} never saw sample {sample_id}: its source was not one of the run's "
                f"inputs (the sample is in {where_else})"
            ),
            found_in=found_in,
        )
    return S.WhyNot(
        sample_id=sample_id,
        release=ref,
        in_release=False,
        cause="unknown_sample",
        explanation=f"no dataset version's lineage knows sample {sample_id}",
    )


def source_releases(
    stores: Stores, *, uri: str | None = None, dataset: str | None = None, version: int | None = None
) -> S.SourceReleases:
    """Releases holding samples of a source file (``uri``; a trailing ``/`` matches a folder) or of
    a dataset version (``dataset`` + ``version``, latest if omitted), with sample counts."""
    if (uri is None) == (dataset is None):
        raise BadRequest("give exactly one source: uri (a file URI) or dataset (a dataset name, with version)")
    if uri is not None and not 1 <= len(uri) <= 4096:
        raise BadRequest("uri must be 1-4096 characters")
    with stores.catalog.session() as s:
        pinned: dict[int, tuple[tuple[str, str, int], str, int]] = {}
        rels: list[tuple[str, str, int]] = []
        for r in s.scalars(select(Release).where(Release.state != releases.DRAFT).order_by(Release.name, Release.tag)):
            dv = r.dataset_version
            if dv.purged_by is not None:
                continue  # a tombstone holds no data any more
            pinned[dv.id] = ((dv.tier, dv.data_path, dv.data_delta_version), dv.dataset.name, dv.version)
            rels.append((r.ref, r.state, dv.id))
        src_key = None
        if dataset is not None:
            src = queries.require_data(queries.dataset_version(s, dataset, version))
            src_key = (src.tier, src.data_path, src.data_delta_version)
            label = f"{src.dataset.name}:v{src.version}"
        else:
            label = uri or ""
    counts: dict[int, int] = {}
    for dv_id, (key, _name, _v) in pinned.items():
        table = stores.tables.get(*key).dataset
        if src_key is not None:
            counts[dv_id] = stores.duck.scalar(
                "SELECT count(*) FROM rel WHERE sample_id IN (SELECT sample_id FROM src)",
                rel=table,
                src=stores.tables.get(*src_key).dataset,
            )
        elif uri is not None and uri.endswith("/"):
            counts[dv_id] = stores.duck.scalar(
                "SELECT count(*) FROM rel WHERE starts_with(source_uri, ?)", [uri], rel=table
            )
        else:
            counts[dv_id] = stores.duck.scalar("SELECT count(*) FROM rel WHERE source_uri = ?", [uri], rel=table)
    return S.SourceReleases(
        source=label,
        releases=[
            S.SourceRelease(release=ref, state=state, dataset=pinned[i][1], version=pinned[i][2], samples=counts[i])
            for ref, state, i in rels
            if counts[i]
        ],
    )
