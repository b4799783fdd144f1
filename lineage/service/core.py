"""The service: every operation of the HTTP API, the SDK and the CLI, once (which surface has which:
:mod:`lineage.service.operations`). Those that read or write data on the tiers (runs, exports, tier
copies, gc) are called in-process only.

Methods take plain arguments and return the pydantic models of :mod:`lineage.service.schemas`;
errors are :mod:`lineage.service.errors` (or ``ReleaseError``/``KeyError`` from the modules it
calls), which the HTTP layer maps to 4xx answers.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import re
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Select, func, inspect, select
from sqlalchemy.orm import Session

from lineage import openlineage, releases
from lineage.catalog import (
    Catalog,
    Dataset,
    DatasetVersion,
    EvalSet,
    EvalSetVersion,
    Export,
    PipelineRun,
    Release,
    ReleasePin,
    Run,
    TakedownRequest,
    queries,
)
from lineage.catalog.models import as_utc
from lineage.releases import placement, usage
from lineage.service import auth, evalruns, evalsets, samples, search, takedowns
from lineage.service import schemas as S
from lineage.service.errors import BadRequest, NotFound
from lineage.service.files import FileOperations
from lineage.service.tables import Duck, TableCache
from lineage.settings import Settings
from lineage.version import code_version
from storage import names

if TYPE_CHECKING:
    from pipelines.dag import DagSpec
    from pipelines.engines.base import ProgressFn
    from pipelines.spec import PipelineSpec

log = logging.getLogger(__name__)

MAX_LIMIT = 1000
VERDICTS = ("kept", "dropped", "modified")  # operators.lineage_records.Verdict, without loading pyarrow


MAX_STEP_SEQUENCES = 1 << 20  # sequences one reader_step answer may hold (every rank's batch)


class Service(FileOperations):
    """One per process (the HTTP app) or per in-process client; thread-safe."""

    def __init__(self, settings: Settings | None = None, catalog: Catalog | None = None) -> None:
        super().__init__(settings)
        self._catalog = catalog
        self._opening = threading.Lock()
        self.tables = TableCache(self.settings)
        self.duck = Duck(self.settings, threads=2)  # scans over whole versions (diffs, source counts)
        self.lookups = Duck(self.settings, threads=1)  # point lookups
        self.graph_cache = openlineage.GraphCache(self.settings.openlineage_namespace)

    @property
    def catalog(self) -> Catalog:
        """The catalog, opened (and migrated) at its first use: an operation that never touches it, such as
        ``dedupe_files``, does not pay for SQLAlchemy's engine and Alembic. A catalog that cannot be opened
        is refused there, inside the operation, on every surface."""
        if self._catalog is None:
            with self._opening:
                if self._catalog is None:
                    self._catalog = Catalog(self.settings.catalog_url or "")
        return self._catalog

    @functools.cached_property
    def stores(self) -> samples.Stores:
        return samples.Stores(self.catalog, self.tables, self.duck, self.lookups)

    @functools.cached_property
    def tokens(self) -> auth.TokenStore:
        return auth.TokenStore(self.catalog, self.settings.api_token_cache_seconds)

    def close(self) -> None:
        if self._catalog is not None:
            self._catalog.dispose()

    def warm(self, max_versions: int = 32) -> None:
        """Load what the first requests would otherwise wait for: the lineage graph, and the opened
        Delta versions of the newest releases. Best effort (a server runs it in the background)."""
        try:
            with self.catalog.session() as s:
                self.graph_cache.get(s)
                pinned = [
                    ((r.dataset_version.tier, p, v))
                    for r in s.scalars(select(Release).order_by(Release.id.desc()).limit(max_versions))
                    for p, v in (
                        (r.dataset_version.data_path, r.dataset_version.data_delta_version),
                        (r.dataset_version.lineage_path, r.dataset_version.lineage_delta_version),
                    )
                ]
            for key in pinned:
                self.tables.get(*key)
            log.info("warmed: lineage graph and %d Delta versions", len(pinned))
        except Exception:  # never fatal: requests load the same things on demand
            log.warning("warming the service failed; requests will load on demand", exc_info=True)

    # -- helpers ------------------------------------------------------------------------------
    def _limit(self, limit: int | None, offset: int) -> int:
        """The page size asked for (default: the settings'), refused outside 1..MAX_LIMIT."""
        limit = self.settings.api_page_limit if limit is None else limit
        if not 1 <= limit <= MAX_LIMIT or offset < 0:
            raise BadRequest(f"limit must be 1-{MAX_LIMIT} and offset >= 0 (got limit={limit}, offset={offset})")
        return limit

    def _page(self, s: Session, query: Select, limit: int | None, offset: int, convert: Any) -> dict[str, Any]:
        limit = self._limit(limit, offset)
        total = s.scalar(select(func.count()).select_from(query.order_by(None).subquery())) or 0
        items = [convert(s, row) for row in s.scalars(query.limit(limit).offset(offset))]
        return {"items": items, "total": total, "limit": limit, "offset": offset}

    @staticmethod
    def _dataset(s: Session, name: str) -> Dataset:
        ds = s.scalars(select(Dataset).where(Dataset.name == name)).first()
        if ds is None:
            raise NotFound(f"dataset {name!r} does not exist")
        return ds

    @staticmethod
    def _dataset_out(s: Session, ds: Dataset) -> S.DatasetOut:
        latest = s.scalar(select(func.max(DatasetVersion.version)).where(DatasetVersion.dataset_id == ds.id))
        count = s.scalar(select(func.count()).where(DatasetVersion.dataset_id == ds.id)) or 0
        return S.DatasetOut.model_validate({**_columns(ds), "latest_version": latest, "version_count": count})

    @staticmethod
    def _version_out(s: Session, dv: DatasetVersion) -> S.VersionOut:
        refs = s.scalars(select(Release).where(Release.dataset_version_id == dv.id).order_by(Release.id))
        return S.VersionOut.model_validate(
            {**_columns(dv), "dataset": dv.dataset.name, "releases": [r.ref for r in refs]}
        )

    @staticmethod
    def _release_out(_s: Session | None, r: Release) -> S.ReleaseOut:
        dv = r.dataset_version
        return S.ReleaseOut.model_validate(
            {
                **_columns(r),
                "ref": r.ref,
                "dataset": dv.dataset.name,
                "dataset_version": dv.version,
                "row_count": dv.row_count,
                "tables": {
                    kind: {"tier": dv.tier, "table": path, "delta_version": version}
                    for kind, (path, version) in dv.pinned_tables.items()
                },
            }
        )

    # -- datasets -----------------------------------------------------------------------------
    def list_datasets(
        self, limit: int | None = None, offset: int = 0, *, tag: str | None = None, owner: str | None = None
    ) -> S.Page[S.DatasetOut]:
        with self.catalog.session() as s:
            query = select(Dataset).order_by(Dataset.name)
            if owner is not None:
                query = query.where(Dataset.owner == owner)
            if tag is None:
                return S.Page[S.DatasetOut].model_validate(self._page(s, query, limit, offset, self._dataset_out))
            # tags are a JSON list: filtered in Python, portable across SQLite and PostgreSQL (datasets are few)
            tagged = [d.id for d in s.scalars(query) if tag in (d.tags or [])]
            return S.Page[S.DatasetOut].model_validate(
                self._page(s, query.where(Dataset.id.in_(tagged)), limit, offset, self._dataset_out)
            )

    def get_dataset(self, name: str) -> S.DatasetOut:
        with self.catalog.session() as s:
            return self._dataset_out(s, self._dataset(s, name))

    def update_dataset(self, name: str, update: S.DatasetUpdate | dict[str, Any]) -> S.DatasetOut:
        changes = S.parse_input(S.DatasetUpdate, update).model_dump(exclude_unset=True, exclude_none=True)
        with self.catalog.session() as s:
            ds = self._dataset(s, name)
            for key, value in changes.items():
                setattr(ds, key, value)
            s.flush()
            return self._dataset_out(s, ds)

    def list_versions(self, name: str, limit: int | None = None, offset: int = 0) -> S.Page[S.VersionOut]:
        with self.catalog.session() as s:
            ds = self._dataset(s, name)
            query = select(DatasetVersion).where(DatasetVersion.dataset_id == ds.id).order_by(DatasetVersion.version)
            return S.Page[S.VersionOut].model_validate(self._page(s, query, limit, offset, self._version_out))

    def get_version(self, name: str, version: int) -> S.VersionOut:
        with self.catalog.session() as s:
            return self._version_out(s, queries.dataset_version(s, name, version))

    def list_samples(
        self,
        name: str,
        version: int,
        limit: int | None = None,
        offset: int = 0,
        *,
        operator: str | None = None,
        verdict: str | None = None,
    ) -> S.Page[S.SampleVerdict]:
        """The version's lineage records, by sample id then step: what each step of the run that made it
        decided about each sample (only ``operator``'s, only ``verdict``). A sample's whole story is
        :meth:`sample_lineage`."""
        if verdict is not None and verdict not in VERDICTS:
            raise BadRequest(f"verdict must be one of {', '.join(VERDICTS)}, got {verdict[:40]!r}")
        limit = self._limit(limit, offset)
        with self.catalog.session() as s:
            dv = queries.dataset_version(s, name, version)
            key = (dv.tier, dv.lineage_path, dv.lineage_delta_version)
        rows, total = samples.verdicts(self.stores, key, operator=operator, verdict=verdict, limit=limit, offset=offset)
        return S.Page[S.SampleVerdict](
            items=[S.SampleVerdict(**r) for r in rows], total=total, limit=limit, offset=offset
        )

    # -- diffs --------------------------------------------------------------------------------
    def _resolve(self, s: Session, ref: str) -> tuple[DatasetVersion, S.VersionRef]:
        """``NAME@TAG`` (a release), ``DATASET:vN`` / ``DATASET:N`` (a version) or ``DATASET`` (its latest)."""
        dv, rel = queries.resolve_ref(s, ref)
        queries.require_data(dv)
        if rel is not None:
            return dv, S.VersionRef(ref=ref, dataset=dv.dataset.name, version=dv.version, release=rel.ref)
        return dv, S.VersionRef(ref=f"{dv.dataset.name}:v{dv.version}", dataset=dv.dataset.name, version=dv.version)

    def diff(self, base: str, target: str) -> S.Diff:
        with self.catalog.session() as s:
            b, bref = self._resolve(s, base)
            t, tref = self._resolve(s, target)
            bkey, tkey = (b.tier, b.data_path, b.data_delta_version), (t.tier, t.data_path, t.data_delta_version)
            bschema, tschema = b.schema, t.schema
            mixtures = [_mixture_of(s.get(Run, dv.run_id)) for dv in (b, t)]
        rows = self.duck.rows(
            """
            WITH b AS (SELECT sample_id, source_dataset, content_hash FROM base_ds),
                 t AS (SELECT sample_id, source_dataset, content_hash FROM target_ds)
            SELECT coalesce(t.source_dataset, b.source_dataset) AS source,
                   count(*) FILTER (WHERE b.sample_id IS NULL) AS added,
                   count(*) FILTER (WHERE t.sample_id IS NULL) AS removed,
                   count(*) FILTER (WHERE b.sample_id IS NOT NULL AND t.sample_id IS NOT NULL
                                    AND b.content_hash <> t.content_hash) AS changed
            FROM b FULL OUTER JOIN t ON b.sample_id = t.sample_id
            GROUP BY 1 ORDER BY 1
            """,
            base_ds=self.tables.get(*bkey).dataset,
            target_ds=self.tables.get(*tkey).dataset,
        )
        sources = [S.SourceDiff(**r) for r in rows if r["added"] or r["removed"] or r["changed"]]
        return S.Diff(
            base=bref,
            target=tref,
            added=sum(r.added for r in sources),
            removed=sum(r.removed for r in sources),
            changed=sum(r.changed for r in sources),
            sources=sources,
            schema_changes=schema_changes(bschema, tschema),
            mixture=mixture_diff(*mixtures),
        )

    # -- runs ---------------------------------------------------------------------------------
    def list_runs(
        self,
        limit: int | None = None,
        offset: int = 0,
        *,
        dataset: str | None = None,
        status: str | None = None,
    ) -> S.Page[S.RunOut]:
        with self.catalog.session() as s:
            query = select(Run).order_by(Run.started_at.desc(), Run.id)
            if dataset is not None:
                query = query.where(Run.output_dataset == dataset)
            if status is not None:
                query = query.where(Run.status == status)
            return S.Page[S.RunOut].model_validate(
                self._page(s, query, limit, offset, lambda _s, r: S.RunOut.model_validate(r))
            )

    def get_run(self, run_id: str) -> S.RunOut:
        with self.catalog.session() as s:
            run = s.get(Run, run_id) if len(run_id) <= 36 else None
            if run is None:
                raise NotFound(f"run {run_id[:80]!r} does not exist")
            return S.RunOut.model_validate(run)

    def list_pipeline_runs(
        self,
        limit: int | None = None,
        offset: int = 0,
        *,
        pipeline: str | None = None,
        status: str | None = None,
    ) -> S.Page[S.PipelineRunOut]:
        """Runs of pipelines of stages, newest first: per stage, ran or skipped, why, and its version."""
        with self.catalog.session() as s:
            query = select(PipelineRun).order_by(PipelineRun.started_at.desc(), PipelineRun.id)
            if pipeline is not None:
                query = query.where(PipelineRun.pipeline == pipeline)
            if status is not None:
                query = query.where(PipelineRun.status == status)
            return S.Page[S.PipelineRunOut].model_validate(
                self._page(s, query, limit, offset, lambda _s, r: S.PipelineRunOut.model_validate(r))
            )

    def get_pipeline_run(self, pipeline_run_id: str) -> S.PipelineRunOut:
        with self.catalog.session() as s:
            prun = s.get(PipelineRun, pipeline_run_id) if len(pipeline_run_id) <= 36 else None
            if prun is None:
                raise NotFound(f"pipeline run {pipeline_run_id[:80]!r} does not exist")
            return S.PipelineRunOut.model_validate(prun)

    # -- releases -----------------------------------------------------------------------------
    def list_releases(
        self,
        limit: int | None = None,
        offset: int = 0,
        *,
        name: str | None = None,
        state: str | None = None,
    ) -> S.Page[S.ReleaseOut]:
        with self.catalog.session() as s:
            query = select(Release).order_by(Release.name, Release.tag)
            if name is not None:
                query = query.where(Release.name == name)
            if S.checked_state(state, S.ReleaseState) is not None:
                query = query.where(Release.state == state)
            return S.Page[S.ReleaseOut].model_validate(self._page(s, query, limit, offset, self._release_out))

    def get_release(self, ref: str) -> S.ReleaseOut:
        with self.catalog.session() as s:
            return self._release_out(s, queries.get_release(s, ref))

    def create_release(self, body: S.ReleaseCreate | dict[str, Any], *, actor: str = "local") -> S.ReleaseResult:
        """Publish (or, with ``draft``, only record) a release. Same content again: ``changed`` is False.

        Through the publish gate if the body has one: failed conditions are :class:`~lineage.errors.GateFailed`
        (each with its measured value and limit) unless ``override_reason`` says why to publish anyway;
        the override is recorded with ``actor`` and the time."""
        req = S.parse_input(S.ReleaseCreate, body)
        with self.catalog.session() as s:  # NotFound here, before publishing reads its files
            queries.dataset_version(s, req.dataset or req.name, req.version)
        release, changed = releases.publish(
            self.catalog,
            self.settings,
            f"{req.name}@{req.tag}",
            dataset=req.dataset,
            version=req.version,
            created_by=actor,
            draft=req.draft,
            gate=req.gate,
            override_reason=req.override_reason,
        )
        return S.ReleaseResult(release=self.get_release(release.ref), changed=changed)

    def publish_release(
        self, ref: str, body: S.ReleasePublish | dict[str, Any] | None = None, *, actor: str = "local"
    ) -> S.ReleaseResult:
        """Publish a draft through the gate (``body.gate``, else the draft's own conditions), as
        :meth:`create_release` does."""
        req = S.parse_input(S.ReleasePublish, body or {})
        release, changed = releases.publish_draft(
            self.catalog, self.settings, ref, created_by=actor, gate=req.gate, override_reason=req.override_reason
        )
        return S.ReleaseResult(release=self.get_release(release.ref), changed=changed)

    def deprecate_release(self, ref: str, reason: str = "", *, actor: str = "local") -> S.ReleaseResult:
        release, changed = releases.deprecate(self.catalog, ref, reason=reason)
        log.info("release %s deprecated by %s", ref, actor)
        return S.ReleaseResult(release=self.get_release(release.ref), changed=changed)

    def get_manifest(self, ref: str) -> S.Manifest:
        with self.catalog.session() as s:
            return S.Manifest.model_validate(queries.get_release(s, ref).manifest)

    def get_quality(self, ref: str) -> S.Quality:
        """The release's quality counts, QC report and gate (what ``lineage release report`` draws)."""
        with self.catalog.session() as s:
            row = queries.get_release(s, ref)
            release, manifest = self._release_out(s, row), S.Manifest.model_validate(row.manifest)
        quality = manifest.quality
        return S.Quality(
            release=release.ref,
            steps=quality.steps,
            quarantine=quality.quarantine,
            report=manifest.qc,
            gate=release.gate,
        )

    # -- replicas and usage (what a training reader needs) --------------------------------------
    def list_replicas(self, ref: str, *, state: str | None = None) -> list[S.ReplicaOut]:
        """The release's copies, one per tier; a reader reads from the ``verified`` ones."""
        S.checked_state(state, S.ReplicaState)
        with self.catalog.session() as s:
            release = queries.get_release(s, ref)
            return [
                S.ReplicaOut.model_validate({**_columns(r), "release": release.ref, "file_count": len(r.files)})
                for r in queries.replicas_of(s, release)
                if state is None or r.state == state
            ]

    def record_read(self, ref: str, body: S.ReadCreate | dict[str, Any], *, actor: str = "local") -> S.ReleaseReadOut:
        """A usage record for one rank of a training job; ``actor`` is kept as who recorded it."""
        req = S.parse_input(S.ReadCreate, body)
        with self.catalog.session() as s:
            release = queries.get_release(s, ref)
            read = usage.record_read(
                s,
                release,
                job=req.job,
                world_size=req.world_size,
                rank=req.rank,
                host=req.host,
                recorded_by=actor,
                override_reason=req.override_reason,
            )
            return S.ReleaseReadOut.model_validate({**_columns(read), "release": release.ref})

    def list_reads(
        self, ref: str, limit: int | None = None, offset: int = 0, *, job: str | None = None
    ) -> S.Page[S.ReleaseReadOut]:
        """Which training jobs opened the release, newest first."""
        with self.catalog.session() as s:
            release = queries.get_release(s, ref)
            return S.Page[S.ReleaseReadOut].model_validate(
                self._page(
                    s,
                    usage.reads_query(release, job),
                    limit,
                    offset,
                    lambda _s, r: S.ReleaseReadOut.model_validate({**_columns(r), "release": release.ref}),
                )
            )

    # -- pins and placement ----------------------------------------------------------------------
    def pin_release(self, ref: str, body: S.PinCreate | dict[str, Any], *, actor: str = "local") -> S.PinOut:
        """Keep ``ref`` on the hot tier until ``body.until`` (a time in the future)."""
        req = S.parse_input(S.PinCreate, body)
        pin = placement.pin_release(self.catalog, ref, req.until, pinned_by=actor, reason=req.reason)
        return _pin_out(pin, ref)

    def list_pins(self, ref: str) -> list[S.PinOut]:
        """Every pin of the release, oldest first, expired ones included (``active`` says which keep it hot)."""
        with self.catalog.session() as s:
            release = queries.get_release(s, ref)
            query = select(ReleasePin).where(ReleasePin.release_id == release.id).order_by(ReleasePin.id)
            return [_pin_out(pin, release.ref) for pin in s.scalars(query)]

    def plan_placement(self) -> list[S.PlannedMove]:
        """The moves the placement rules (``settings.placement``) want now; ``apply_placement`` makes them."""
        return [
            S.PlannedMove(release=m.release, from_tier=m.from_tier, to_tier=m.to_tier, reason=m.reason)
            for m in placement.plan_moves(self.catalog, self.settings)
        ]

    # -- eval sets (lineage.service.evalsets) --------------------------------------------------
    def list_evalsets(
        self, limit: int | None = None, offset: int = 0, *, state: str | None = None
    ) -> S.Page[S.EvalSetOut]:
        with self.catalog.session() as s:
            query = select(EvalSet).order_by(EvalSet.name)
            if S.checked_state(state, S.EvalSetState) is not None:
                query = query.where(EvalSet.state == state)
            return S.Page[S.EvalSetOut].model_validate(self._page(s, query, limit, offset, evalsets.evalset_out))

    def get_evalset(self, name: str) -> S.EvalSetOut:
        with self.catalog.session() as s:
            return evalsets.evalset_out(s, evalsets.evalset_row(s, name))

    def list_evalset_versions(self, name: str) -> list[S.EvalSetVersionOut]:
        with self.catalog.session() as s:
            es = evalsets.evalset_row(s, name)
            query = select(EvalSetVersion).where(EvalSetVersion.eval_set_id == es.id).order_by(EvalSetVersion.version)
            return [evalsets.version_out(v) for v in s.scalars(query)]

    def get_evalset_version(self, name: str, version: int | None = None) -> S.EvalSetVersionOut:
        """``name:v{version}`` (None: the latest)."""
        with self.catalog.session() as s:
            return evalsets.version_out(evalsets.version_row(s, name, version))

    def diff_evalset(self, name: str, base: int, target: int) -> S.EvalSetDiff:
        return evalsets.diff(self, name, base, target)

    def deprecate_evalset(self, name: str, reason: str = "", *, actor: str = "local") -> S.EvalSetOut:
        return evalsets.deprecate(self, name, reason, actor=actor)

    def register_collection(
        self, name: str, body: S.CollectionCreate | dict[str, Any], *, actor: str = "local"
    ) -> S.EvalSetRegistered:
        """A version of collection ``name`` pinning each member eval set at its version."""
        return evalsets.register_collection(self, name, S.parse_input(S.CollectionCreate, body), actor=actor)

    def record_eval_run(self, body: S.EvalRunCreate | dict[str, Any], *, actor: str = "local") -> S.EvalRunOut:
        """A model (name, checkpoint) evaluated on an eval set version, with its metrics and training jobs."""
        req = S.parse_input(S.EvalRunCreate, body)
        with self.catalog.session() as s:
            return evalruns.record(s, req, actor=actor, namespace=self.settings.openlineage_namespace)

    def get_eval_run(self, run_id: int) -> S.EvalRunProvenance:
        """The eval run, the releases its model trained on, and which of them held the set's items."""
        with self.catalog.session() as s:
            return evalruns.provenance(s, run_id)

    def release_evals(self, ref: str) -> S.ReleaseEvals:
        """The models trained on release ``ref`` (jobs that read it) and their eval results."""
        with self.catalog.session() as s:
            return evalruns.release_evals(s, ref)

    def evalset_item_samples(
        self,
        name: str,
        version: int,
        item_id: str,
        *,
        release: str | None = None,
        dataset: str | None = None,
        dataset_version: int | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> S.ItemSamples:
        """Every sample of release ``release`` (or of ``dataset`` at ``dataset_version``, None: its latest)
        that contains item ``item_id`` of eval set ``name:v{version}``, as its last check recorded them, paged."""
        with self.catalog.session() as s:
            return evalsets.item_samples(
                s,
                name,
                version,
                item_id,
                release=release,
                dataset=dataset,
                dataset_version=dataset_version,
                limit=self._limit(limit, offset),
                offset=offset,
            )

    def check_evalset(self, ref: str, *, releases: list[str] | None = None, engine: str = "local") -> S.EvalSetCheck:
        """Check published releases (None: all) against eval set ``ref`` on ``engine`` (local, spark, ray:
        the same result) and record the result, and every hit, on each; their files are not changed."""
        from lineage.releases.contamination import check_releases  # start-up: numba kernels, deltalake

        with self.catalog.session() as s:
            canonical = evalsets.resolve(s, ref).ref
        done = check_releases(self.catalog, self.settings, canonical, releases, engine=engine)
        return S.EvalSetCheck(
            evalset=canonical, releases=[S.ReleaseCheck(release=r, evalsets=results) for r, results in done]
        )

    def register_evalset(
        self,
        name: str,
        path: str,
        *,
        version: int | None = None,
        task: str | None = None,
        split: str | None = None,
        language: str | None = None,
        license: str | None = None,  # noqa: A002 (the field's name)
        description: str | None = None,
        text_fields: list[str] | tuple[str, ...] = ("text",),
        join: str = "\n",
        id_field: str | None = None,
        tier: str | None = None,
        fmt: str = "auto",
        engine: str = "local",
        base_dir: Path | None = None,
        progress: ProgressFn | None = None,
        actor: str = "local",
    ) -> S.EvalSetRegistered:
        """Register items (JSONL, Parquet, CSV) as ``name:v{version}`` (default: the next) through convert;
        the same content again is a no-op, other content under a registered version a conflict."""
        meta = {"task": task, "split": split, "language": language, "license": license, "description": description}
        return evalsets.register(
            self,
            name,
            path,
            version=version,
            meta={k: v for k, v in meta.items() if v is not None},
            text_fields=list(text_fields),
            join=join,
            id_field=id_field,
            tier=tier,
            fmt=fmt,
            engine=engine,
            base_dir=base_dir,
            progress=progress,
            actor=actor,
        )

    # -- data on the tiers: in-process only (no HTTP endpoint; see lineage.service.operations) ----
    def run_pipeline(
        self,
        spec: PipelineSpec | DagSpec | dict[str, Any] | Path,
        *,
        engine: str | None = None,
        progress: ProgressFn | None = None,
        from_stage: str | None = None,
        force: bool = False,
    ) -> S.RunResult:
        """Run a pipeline (a spec, its dict, or a TOML/YAML file) and commit its output as a new version.

        A pipeline of stages (``[[stages]]``) runs them in order and skips each whose cache key is
        unchanged since its last succeeded run (``lineage.pipeline_runs``): ``from_stage`` reruns that
        stage and all downstream of it, ``force`` every stage. The result is its last stage's, with the
        pipeline run. A single-stage pipeline runs every time, as it always did."""
        # start-up: the runner loads the operators (numba), the engines, deltalake
        from lineage.pipeline_runs import PipelineRunner
        from lineage.runs import Runner
        from pipelines.dag import DagSpec

        spec = self._pipeline_spec(spec)
        kwargs: dict[str, Any] = {"progress": progress} if progress is not None else {}
        if not isinstance(spec, DagSpec):
            if from_stage is not None:
                raise BadRequest(f"--from {from_stage}: pipeline {spec.name!r} has no [[stages]]")
            outcome = Runner(self.settings, self.catalog).run(spec, engine=engine, **kwargs)
            return S.RunResult(
                run=self.get_run(outcome.run_id),
                dataset=outcome.dataset,
                version=outcome.version,
                row_count=outcome.row_count,
            )
        done = PipelineRunner(self.settings, self.catalog).run(
            spec, engine=engine, from_stage=from_stage, force=force, **kwargs
        )
        last = done.last
        assert last.run_id is not None and last.version is not None
        with self.catalog.session() as s:
            rows = queries.dataset_version(s, last.dataset, last.version).row_count
        return S.RunResult(
            run=self.get_run(last.run_id),
            dataset=last.dataset,
            version=last.version,
            row_count=rows,
            pipeline_run=self.get_pipeline_run(done.pipeline_run_id),
        )

    def plan_pipeline(
        self,
        spec: PipelineSpec | DagSpec | dict[str, Any] | Path,
        *,
        from_stage: str | None = None,
        force: bool = False,
    ) -> S.PipelinePlan:
        """Which stages a run would run and which it would skip, and why (the cache key's parts that
        changed); it runs nothing and changes nothing. It reads the raw input files to fingerprint them."""
        # start-up: the cache key loads the operators and reads the input files
        from lineage.pipeline_runs import PipelineRunner
        from pipelines.dag import DagSpec

        spec = self._pipeline_spec(spec)
        if not isinstance(spec, DagSpec):
            if from_stage is not None:
                raise BadRequest(f"--from {from_stage}: pipeline {spec.name!r} has no [[stages]]")
            why = "a pipeline without [[stages]] runs every time"
            one = S.StagePlan(stage=spec.name, action="run", reason=why, dataset=spec.output.dataset)
            return S.PipelinePlan(pipeline=spec.name, stages=[one])
        found = PipelineRunner(self.settings, self.catalog).plan(spec, from_stage=from_stage, force=force)
        return S.PipelinePlan(
            pipeline=spec.name, stages=[S.StagePlan.model_validate(dataclasses.asdict(d)) for d in found]
        )

    @staticmethod
    def _pipeline_spec(spec: PipelineSpec | DagSpec | dict[str, Any] | Path) -> PipelineSpec | DagSpec:
        """A pipeline file, or a dict (with ``stages``: of stages), as its spec."""
        from pipelines.dag import DagSpec, load_pipeline, parse_dag  # start-up: PyYAML
        from pipelines.spec import PipelineSpec  # start-up: PyYAML

        if isinstance(spec, Path):
            return load_pipeline(spec)
        if isinstance(spec, PipelineSpec | DagSpec):
            return spec
        if isinstance(spec, dict) and "stages" in spec:
            return parse_dag(spec, None)
        return S.parse_input(PipelineSpec, spec)

    def ingest(
        self,
        path: str,
        dataset: str,
        *,
        tier: str | None = None,
        fmt: str = "auto",
        text_field: str = "text",
        id_field: str | None = None,
        text_mode: str = "file",
        engine: str = "local",
        base_dir: Path | None = None,
        progress: ProgressFn | None = None,
    ) -> S.RunResult:
        """Convert raw files (a file, folder or glob; on ``tier``, else the local disk, relative to
        ``base_dir``, default the working directory) into a new version of source dataset ``dataset``."""
        from pipelines.spec import PipelineSpec  # start-up: PyYAML

        source = {"dataset": dataset, "path": path, "tier": tier, "format": fmt, "text_field": text_field}
        source |= {"id_field": id_field, "convert": {"text_mode": text_mode}}
        spec = S.parse_input(
            PipelineSpec, {"name": f"ingest-{dataset}", "inputs": [source], "output": {"dataset": dataset}}
        )
        spec.base_dir = base_dir or Path.cwd()
        return self.run_pipeline(spec, engine=engine, progress=progress)

    def _serve(self, ref: str, action: str, override_reason: str | None, actor: str) -> None:
        """Data of a withdrawn release leaves the tiers only with a reason, recorded as a use of it."""
        with self.catalog.session() as s:
            try:
                release = queries.get_release(s, ref)
            except NotFound:  # the operation refuses it itself, after its own checks (an engine's extra first)
                return
            if release.state != releases.WITHDRAWN:
                return
            releases.check_servable(release, override_reason)
            usage.record_read(
                s,
                release,
                job=action,
                world_size=1,
                rank=0,
                host="",
                recorded_by=actor,
                override_reason=override_reason,
            )

    def export_release(
        self,
        ref: str,
        out: Path | str,
        fmt: str = "jsonl",
        progress: Callable[[int], None] | None = None,
        *,
        tokenizer: Path | str | None = None,
        seq_len: int | None = None,
        pack: bool = False,
        shard_size: int | None = None,
        seed: int = 0,
        eod_token: str | None = None,
        tier: str | None = None,
        engine: str = "local",
        override_reason: str | None = None,
        actor: str = "local",
    ) -> S.ExportResult:
        """The release's samples as ``<out>/<name>-<tag>.{jsonl,parquet}``, or tokenized with the
        tokenizer.json ``tokenizer`` into Megatron or MDS shards in ``<out>/<name>-<tag>.<fmt>/`` on
        ``tier`` (a local folder when none), tokenizing on ``engine`` (local, spark or ray: the same
        shards); see :mod:`lineage.releases.tokenized`. A withdrawn release: only with ``override_reason``."""
        # start-up: deltalake, DuckDB
        from lineage.releases.export import TRAINING_FORMATS, ExportOptions, export_release

        self._serve(ref, "lineage export", override_reason, actor)

        training = None
        if tokenizer is None and fmt in TRAINING_FORMATS:  # a tokens mixture's tokenizer is the default
            mixture = self.get_manifest(ref).mixture
            if mixture is not None and mixture.tokenizer is not None:
                tokenizer = mixture.tokenizer["path"]
        if tokenizer is not None or fmt in TRAINING_FORMATS:
            if tokenizer is None:
                raise BadRequest(f"--format {fmt} needs --tokenizer PATH (a tokenizers tokenizer.json)")
            training = ExportOptions(
                format=fmt,
                tokenizer=Path(tokenizer),
                seq_len=seq_len,
                pack=pack,
                shard_size=shard_size or self.settings.export_shard_size,
                seed=seed,
                eod_token=eod_token,
            )
        elif pack or seq_len is not None or shard_size is not None:
            raise BadRequest(
                f"--format {fmt} writes samples as they are: --pack, --seq-len, --shard-size are for megatron and mds"
            )
        report = progress or (lambda _n: None)
        done = export_release(self.catalog, self.settings, ref, out, fmt, report, training, tier, engine)
        if done.manifest is None or done.training is None:
            return S.ExportResult(release=ref, path=done.path, rows=done.rows)
        from lineage.releases.exports import record_export  # start-up: pyarrow

        record_export(self.catalog, self.settings, done.training, actor)
        m = done.manifest
        return S.ExportResult(
            release=m["release"],
            path=done.path,
            rows=done.rows,
            format=fmt,
            tier=done.tier,
            export_id=m["export_id"],
            tokenizer_digest=m["tokenizer"]["digest"],
            sequences=m["sequences"],
            tokens=m["tokens"],
            tokens_by_source=m["tokens_by_source"],
            shards=m["shards"],
            resumed_shards=done.resumed_shards,
        )

    # -- training exports: the catalog's record, verification, sequence-level lineage ----------
    @staticmethod
    def _export_out(_s: Session | None, row: Any) -> S.ExportOut:
        return S.ExportOut.model_validate({**_columns(row), "release": row.release.ref})

    def list_exports(
        self, limit: int | None = None, offset: int = 0, *, release: str | None = None
    ) -> S.Page[S.ExportOut]:
        """Training exports, newest first (``release``: of one release only)."""
        with self.catalog.session() as s:
            query = select(Export).order_by(Export.id.desc())
            if release is not None:
                query = query.where(Export.release_id == queries.get_release(s, release).id)
            return S.Page[S.ExportOut].model_validate(self._page(s, query, limit, offset, self._export_out))

    def get_export(self, export_id: str) -> S.ExportOut:
        """One export (its first recorded place) with its manifest: shards, checksums, tokens per source."""
        from lineage.releases.exports import get_export  # start-up: pyarrow

        with self.catalog.session() as s:
            return self._export_out(s, get_export(s, export_id))

    def export_sequence(self, export_id: str, sequence: int) -> S.ExportSequence:
        """Which samples make up global sequence ``sequence`` of the export, each with its token span."""
        from lineage.releases import exports  # start-up: pyarrow

        with self.catalog.session() as s:
            row = exports.get_export(s, export_id, files=True)
            s.expunge(row)
        shard, rows = exports.sequence_samples(self.settings, row, sequence)
        return S.ExportSequence(
            export_id=export_id,
            sequence=sequence,
            shard=shard["index"],
            shard_sequence=sequence - shard["first_sequence"],
            files=shard["files"],
            samples=[_piece(r) for r in rows],
        )

    def sample_sequences(self, export_id: str, sample_id: str) -> S.SampleSequences:
        """Which sequences of the export hold the sample's tokens, and where."""
        from lineage.releases import exports  # start-up: pyarrow

        with self.catalog.session() as s:
            row = exports.get_export(s, export_id, files=True)
            s.expunge(row)
        rows = exports.sample_sequences(self.settings, row, sample_id)
        return S.SampleSequences(
            export_id=export_id,
            sample_id=sample_id,
            source_dataset=rows[0]["source_dataset"],
            sequences=[
                S.SampleSequence(
                    sequence=r["sequence"], shard=r["shard"], shard_sequence=r["shard_sequence"], **_spans(r)
                )
                for r in rows
            ],
        )

    def training_step(
        self,
        export_id: str,
        step: int,
        *,
        seed: int,
        sequence_length: int,
        global_batch_size: int,
        train_samples: int,
    ) -> S.TrainingStep:
        """Which samples were in global step ``step`` of a Megatron job that read the export with
        GPTDataset: its seed, sequence length, global batch size and train samples (iterations times
        global batch size) as recorded. World size only splits each global batch among the ranks."""
        from lineage.releases import exports  # start-up: pyarrow

        if min(step, seed) < 0 or min(sequence_length, global_batch_size, train_samples) < 1:
            raise BadRequest("step and seed must be >= 0; sequence length, batch size and train samples >= 1")
        with self.catalog.session() as s:
            row = exports.get_export(s, export_id, files=True)
            s.expunge(row)
        parts = exports.megatron_step(self.settings, row, step, seed, sequence_length, global_batch_size, train_samples)
        samples: dict[int, list[S.SequencePiece]] = {}
        for sample, doc, start, end in parts:
            filled = sum(p.seq_end - p.seq_start for p in samples.get(sample, []))
            samples.setdefault(sample, []).append(
                S.SequencePiece(
                    sample_id=doc["sample_id"],
                    source_dataset=doc["source_dataset"],
                    seq_start=filled,
                    seq_end=filled + end - start,
                    doc_start=start,
                    doc_end=end,
                )
            )
        return S.TrainingStep(
            export_id=export_id,
            step=step,
            seed=seed,
            sequence_length=sequence_length,
            global_batch_size=global_batch_size,
            train_samples=train_samples,
            samples=[S.StepSample(sample=k, pieces=v) for k, v in samples.items()],
        )

    def reader_step(self, export_id: str, step: int, job: S.ReaderJob) -> S.ReaderStep:
        """Which samples were in global step ``step`` of a training job that read the export with our
        reader (``open_release(ref, export=ID)`` / the torch ``ReleaseDataset``), given the job's recorded
        loader arguments: each rank's batch ``step``, sequence by sequence."""
        from lineage.releases import exports  # start-up: pyarrow

        if step < 0:
            raise BadRequest("step must be >= 0")
        with self.catalog.session() as s:  # an unknown export is a 404 whatever the job
            row = exports.get_export(s, export_id, files=True)
            s.expunge(row)
        if job.world_size * job.batch_size > MAX_STEP_SEQUENCES:
            raise BadRequest(
                f"a step of world_size × batch_size > {MAX_STEP_SEQUENCES:,} sequences is too large to answer"
            )
        if job.world_size > row.sequences:
            raise BadRequest(
                f"world_size {job.world_size} is more ranks than export {export_id}'s {row.sequences} sequences"
            )
        batches = exports.reader_step(self.settings, row, step, job)
        return S.ReaderStep(
            export_id=export_id,
            step=step,
            job=job,
            ranks=[
                S.RankBatch(
                    rank=rank,
                    sequences=[
                        S.ExportSequenceSamples(sequence=k, samples=[_piece(r) for r in rows]) for k, rows in seqs
                    ],
                )
                for rank, seqs in batches
            ],
        )

    def verify_export(self, export_id: str) -> S.ExportVerification:
        """Read the export's files back from its tier against its manifest (as ``tier verify`` does a release)."""
        from lineage.releases import exports  # start-up: pyarrow

        with self.catalog.session() as s:
            row = exports.get_export(s, export_id, files=True)
            s.expunge(row)
        problems = exports.verify_export(self.settings, row)
        files = sum(len(shard["files"]) + 1 for shard in row.manifest["shards"])
        return S.ExportVerification(export_id=export_id, tier=row.tier, path=row.path, files=files, problems=problems)

    def copy_release(
        self,
        ref: str,
        to: str,
        *,
        workers: int = 4,
        bytes_per_s: float | None = None,
        on_bytes: Callable[[int], None] | None = None,
        engine: str = "local",
        override_reason: str | None = None,
        actor: str = "local",
    ) -> S.ReplicaResult:
        """Make (or finish) a verified replica of ``ref`` on tier ``to``; each file is read back and checked
        (a withdrawn release: only with ``override_reason``)."""
        from lineage.releases import replicas  # start-up: deltalake, the copy engines

        self._serve(ref, f"tier copy to {to}", override_reason, actor)

        out = replicas.copy_release(
            self.catalog, self.settings, ref, to, **_copy_options(workers, bytes_per_s, on_bytes, engine)
        )
        return S.ReplicaResult.model_validate(dataclasses.asdict(out))

    def move_release(
        self,
        ref: str,
        to: str,
        *,
        workers: int = 4,
        bytes_per_s: float | None = None,
        on_bytes: Callable[[int], None] | None = None,
        engine: str = "local",
    ) -> S.ReplicaResult:
        """Copy and verify, then remove the source files no other published release needs."""
        from lineage.releases import replicas  # start-up: deltalake, the copy engines

        out = replicas.move_release(
            self.catalog, self.settings, ref, to, **_copy_options(workers, bytes_per_s, on_bytes, engine)
        )
        return S.ReplicaResult.model_validate(dataclasses.asdict(out))

    def verify_release(self, ref: str, tier: str) -> S.ReplicaResult:
        """Read the replica on ``tier`` back; ``problems`` names each file that does not match the manifest
        (the replica is then recorded ``corrupt``)."""
        from lineage.releases import replicas  # start-up: deltalake

        out = replicas.verify_release(self.catalog, self.settings, ref, tier)
        return S.ReplicaResult.model_validate(dataclasses.asdict(out))

    def apply_placement(
        self,
        *,
        workers: int = 4,
        engine: str = "local",
        on_move: Callable[[S.PlannedMove], None] | None = None,
        on_bytes: Callable[[int], None] | None = None,
    ) -> list[S.AppliedMove]:
        """Make the moves :meth:`plan_placement` lists, one after another (``on_move`` hears of each first)."""
        applied = []
        for move in self.plan_placement():
            if on_move is not None:
                on_move(move)
            result = self.move_release(move.release, move.to_tier, workers=workers, on_bytes=on_bytes, engine=engine)
            applied.append(S.AppliedMove(move=move, result=result))
        return applied

    def collect_garbage(self, *, dry_run: bool = False) -> S.GcResult:
        """Delete the files of runs that never committed (never what a dataset version needs)."""
        from lineage.gc import collect_garbage  # start-up: deltalake

        report = collect_garbage(self.catalog, self.settings, dry_run=dry_run)
        return S.GcResult(dry_run=dry_run, **dataclasses.asdict(report))

    # -- sample lineage (DuckDB over the pinned Delta versions) ---------------------------------
    def sample_lineage(
        self, sample_id: str, *, dataset: str | None = None, include_text: bool = False
    ) -> S.SampleLineage:
        return samples.sample_lineage(
            self.stores, names.check_sample_id(sample_id), dataset=dataset, include_text=include_text
        )

    def why_not(self, sample_id: str, release: str) -> S.WhyNot:
        return samples.why_not(self.stores, names.check_sample_id(sample_id), release)

    def source_releases(
        self, *, uri: str | None = None, dataset: str | None = None, version: int | None = None
    ) -> S.SourceReleases:
        return samples.source_releases(self.stores, uri=uri, dataset=dataset, version=version)

    # -- takedown ----------------------------------------------------------------------------------
    def create_takedown(self, body: S.TakedownCreate | dict[str, Any], *, actor: str = "local") -> S.TakedownOut:
        """Record a takedown request (state ``planned``); ``actor`` is who asked. Nothing is removed yet."""
        return takedowns.create(self.catalog, S.parse_input(S.TakedownCreate, body), actor)

    def list_takedowns(
        self, limit: int | None = None, offset: int = 0, *, state: str | None = None
    ) -> S.Page[S.TakedownOut]:
        """Takedown requests, newest first (only those in ``state``)."""
        with self.catalog.session() as s:
            query = select(TakedownRequest).order_by(TakedownRequest.id.desc())
            if S.checked_state(state, S.TakedownState) is not None:
                query = query.where(TakedownRequest.state == state)
            return S.Page[S.TakedownOut].model_validate(
                self._page(s, query, limit, offset, lambda _s, r: S.TakedownOut.model_validate(r))
            )

    def get_takedown(self, request_id: int) -> S.TakedownOut:
        return takedowns.get(self.catalog, request_id)

    def plan_takedown(self, request_id: int, *, sample_limit: int = 1000) -> S.TakedownPlan:
        """Per live release: the samples the request names, the files holding them, the tiers and replicas
        those bytes are on and the jobs that read it; and the versions built from it. Changes nothing."""
        if not 0 <= sample_limit <= 100_000:
            raise BadRequest(f"sample_limit must be 0-100000, got {sample_limit}")
        return takedowns.plan(self.stores, self.get_takedown(request_id), sample_limit=sample_limit)

    def apply_takedown(
        self,
        request_id: int,
        *,
        tag_suffix: str | None = None,
        purge: bool = False,
        engine: str = "local",
        actor: str = "local",
    ) -> S.TakedownApplied:
        """Successor releases without the request's samples (suffix ``tag_suffix``, default ``-td<id>``); the
        old releases are withdrawn; with ``purge``, then :meth:`purge_takedown`. ``engine`` rewrites the files
        holding the samples (local, spark or ray: the same files). Rewrites tier data: in-process only.
        Running it again finishes it."""
        return takedowns.apply(
            self.stores,
            self.settings,
            self.get_takedown(request_id),
            tag_suffix=tag_suffix,
            actor=actor,
            purge=purge,
            engine=engine,
        )

    def purge_takedown(self, request_id: int) -> S.TakedownPurged:
        """Delete an applied request's samples' bytes on every tier and replica (data files, quarantine and
        signature rows, exports, staged files, free-text statistics in Delta logs), once each successor
        verifies where its predecessor was. Withdrawn releases stay as tombstones. In-process only;
        running it again finishes a killed purge."""
        return takedowns.purge_request(self.stores, self.settings, self.get_takedown(request_id))

    # -- dataset-level lineage (OpenLineage) ----------------------------------------------------
    def ingest_event(self, event: openlineage.RunEvent | dict[str, Any]) -> S.EventAccepted:
        ev = S.parse_input(openlineage.RunEvent, event)
        with self.catalog.session() as s:
            openlineage.ingest(s, ev)
            evalruns.from_event(s, ev, namespace=self.settings.openlineage_namespace)
        return S.EventAccepted(
            run_id=ev.run.runId,
            event_type=ev.eventType,
            job=openlineage.node_id("job", ev.job.namespace, ev.job.name),
            inputs=len(ev.inputs),
            outputs=len(ev.outputs),
        )

    def lineage_graph_json(self, node_id: str, depth: int = 20, as_of: datetime | None = None) -> bytes:
        """The graph as JSON bytes (what the HTTP answer sends; assembled from cached pieces). With
        ``as_of`` (naive: UTC) the graph as it was then: only nodes and edges some event named by then."""
        if not 0 <= depth <= 100:
            raise BadRequest(f"depth must be 0-100, got {depth}")
        moment = None if as_of is None else as_utc(as_of)
        with self.catalog.session() as s:
            index = self.graph_cache.get(s, with_times=moment is not None)
        start = index.resolve(node_id)
        if start is None:
            if not re.match(openlineage.NODE_ID_PATTERN, node_id, flags=re.DOTALL):
                raise BadRequest(
                    f"invalid nodeId {node_id[:200]!r}: expected KIND:NAMESPACE:NAME, KIND one of "
                    + ", ".join(k.lower() for k in openlineage.KINDS)
                )
            raise NotFound(f"node {node_id[:200]!r} is not in the lineage graph")
        if moment is not None and not index.existed(start, moment):
            raise NotFound(f"node {node_id[:200]!r} was not in the lineage graph yet at {moment.isoformat()}")
        return index.subgraph_json(start, depth, moment)

    def lineage_graph(self, node_id: str, depth: int = 20, as_of: datetime | None = None) -> S.Graph:
        return S.Graph.model_validate_json(self.lineage_graph_json(node_id, depth, as_of))

    # -- search ---------------------------------------------------------------------------------
    def search(self, query: str, *, limit: int = 20) -> S.SearchResults:
        """Datasets, releases, runs, a sample, sources and eval sets matching ``query``, by kind."""
        return search.search(
            self.catalog,
            self.graph_cache,
            self.settings.openlineage_namespace,
            self.sample_lineage,
            query,
            limit,
            find_source=lambda uri: self.source_releases(uri=uri),
        )

    # -- tokens -------------------------------------------------------------------------------
    def create_token(self, name: str, role: str = "reader", *, actor: str = "local") -> S.TokenCreated:
        if role not in auth.ROLES:
            raise BadRequest(f"unknown role {role!r}: use one of {', '.join(auth.ROLES)}")
        body = S.parse_input(S.TokenCreate, {"name": name, "role": role})
        return self.tokens.create(body.name, body.role, created_by=actor)

    def list_tokens(self) -> list[S.TokenOut]:
        return self.tokens.list()

    def revoke_token(self, token_id: int) -> S.TokenOut:
        return self.tokens.revoke(token_id)

    def health(self, *, auth_required: bool) -> S.Health:
        """``auth_required`` is the caller's: over HTTP it depends on the peer address (``api.deps``)."""
        return S.Health(
            status="ok",
            version=code_version(),
            database=self.catalog.dialect,
            auth_required=auth_required,
            namespace=self.settings.openlineage_namespace,
        )


def _columns(obj: Any) -> dict[str, Any]:
    return {c.key: getattr(obj, c.key) for c in inspect(type(obj)).column_attrs}


def _copy_options(
    workers: int, bytes_per_s: float | None, on_bytes: Callable[[int], None] | None, engine: str
) -> dict[str, Any]:
    options: dict[str, Any] = {"workers": workers, "bytes_per_s": bytes_per_s, "engine": engine}
    if on_bytes is not None:
        options["on_bytes"] = on_bytes
    return options


def _spans(r: dict[str, Any]) -> dict[str, int]:
    return {
        "seq_start": r["seq_start"],
        "seq_end": r["seq_start"] + r["length"],
        "doc_start": r["doc_start"],
        "doc_end": r["doc_start"] + r["length"],
    }


def _piece(r: dict[str, Any]) -> S.SequencePiece:
    return S.SequencePiece(sample_id=r["sample_id"], source_dataset=r["source_dataset"], **_spans(r))


def _pin_out(pin: ReleasePin, ref: str) -> S.PinOut:
    return S.PinOut.model_validate({**_columns(pin), "release": ref, "active": placement.is_live(pin)})


def _mixture_of(run: Run | None) -> dict[str, Any] | None:
    """The mixture a version's run recorded (a takedown's successor carries its predecessor's)."""
    return (run.counts or {}).get("mixture") if run is not None else None


def mixture_diff(base: dict[str, Any] | None, target: dict[str, Any] | None) -> S.MixtureDiff | None:
    """Per source, the weight, achieved share, served size and epochs in each version (its own unit)."""
    if base is None and target is None:
        return None
    sides = [(m or {}).get("sources", {}) for m in (base, target)]
    rows = []
    for name in sorted(set(sides[0]) | set(sides[1])):
        values: dict[str, Any] = {"source": name}
        for label, mixture, sources in (("base", base, sides[0]), ("target", target, sides[1])):
            src = sources.get(name)
            if src is None or mixture is None:
                continue
            unit = mixture["unit"]
            values[f"{label}_weight"] = src["requested"]["weight"]
            values[f"{label}_share"] = src["achieved"]["share"][unit]
            values[f"{label}_served"] = src["achieved"]["served"][unit]
            values[f"{label}_epochs"] = src["achieved"]["epochs"]
        rows.append(S.MixtureSourceDiff(**values))
    return S.MixtureDiff(
        base_unit=base["unit"] if base else None,
        target_unit=target["unit"] if target else None,
        base_seed=base["seed"] if base else None,
        target_seed=target["seed"] if target else None,
        sources=rows,
    )


def schema_changes(before: dict[str, Any], after: dict[str, Any]) -> list[S.SchemaChange]:
    old = {f["name"]: f for f in before.get("fields", [])}
    new = {f["name"]: f for f in after.get("fields", [])}
    changes = [S.SchemaChange(field=n, change="added", after=new[n]) for n in new if n not in old]
    changes += [S.SchemaChange(field=n, change="removed", before=old[n]) for n in old if n not in new]
    for n in old.keys() & new.keys():
        if old[n].get("type") != new[n].get("type"):
            changes.append(S.SchemaChange(field=n, change="type_changed", before=old[n], after=new[n]))
        elif old[n].get("nullable") != new[n].get("nullable"):
            changes.append(S.SchemaChange(field=n, change="nullability_changed", before=old[n], after=new[n]))
    return sorted(changes, key=lambda c: (c.field, c.change))
