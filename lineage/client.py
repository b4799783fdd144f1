"""The Python SDK: ``lineage.Client(url, token)`` talks to a server; ``lineage.Client()`` runs the
same operations in-process through the service layer (no server needed).

Both return the same pydantic models (:mod:`lineage.service.schemas`; in-process the service's own
answer, over HTTP the JSON validated into the same model) and raise the same errors, with the same
message: the classes of :mod:`lineage.errors` (``BadRequest`` is ``Invalid``; ``Unauthorized``,
``Forbidden``, ``NotFound``, ``Conflict`` and their subclasses, e.g. ``GateFailed`` with its
``failures``), chosen over HTTP by the body's ``code``. So code written against one works against the
other. Each method is named as its HTTP operation's ``operationId`` (``list_datasets``, ``get_release``).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

from lineage import errors
from lineage.errors import GateFailed
from lineage.releases.qc import GateConfig
from lineage.service import schemas as S
from lineage.service.errors import BadRequest, Conflict, Forbidden, NotFound, ServiceError, Unauthorized
from storage.names import parse_release_ref, parse_version_ref

if TYPE_CHECKING:
    from lineage.service.core import Service
    from lineage.settings import Settings

__all__ = [
    "BadRequest",
    "Client",
    "Conflict",
    "Forbidden",
    "GateConfig",
    "GateFailed",
    "NotFound",
    "ServiceError",
    "Unauthorized",
]

R = TypeVar("R")
T = TypeVar("T")
Progress = Callable[[str, int], None]  # (counter name, increment): a run's progress, as the engines report it


def _evalset_ref(ref: str) -> tuple[str, int | None]:
    """``NAME:vN`` → (NAME, N), ``NAME`` → (NAME, None); the service's rule, refused as it refuses."""
    if "@" in ref:
        raise BadRequest(f"invalid eval set reference {ref!r}: expected NAME:vN or NAME ('@' is for release tags)")
    return _translated(parse_version_ref)(ref)


def _q(part: str) -> str:
    return quote(part, safe="")


def _translated(fn: Callable[..., R]) -> Callable[..., R]:
    """In-process calls raise the same error classes as HTTP calls."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> R:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            error = errors.translate(exc)
            if error is None or error is exc:
                raise
            raise error from exc

    return wrapper


class _Renamed:
    """A method's former name: still works, with a DeprecationWarning naming the new one; ``convert``
    turns the new method's answer into the old one's type (the manifest was a dict)."""

    def __init__(self, new: str, convert: Callable[[Any], object] | None = None) -> None:
        self.new = new
        self.convert = convert

    def __set_name__(self, owner: type, name: str) -> None:
        self.old = name

    def __get__(self, obj: object, owner: type | None = None) -> Callable[..., object]:
        warnings.warn(f"Client.{self.old} is deprecated: use Client.{self.new}", DeprecationWarning, stacklevel=2)
        method = getattr(obj if obj is not None else owner, self.new)
        convert = self.convert
        if convert is None or obj is None:
            return method
        return functools.wraps(method)(lambda *args, **kw: convert(method(*args, **kw)))


def _gate_body(gate: GateConfig | dict[str, Any] | None, override_reason: str | None) -> dict[str, Any]:
    """The gate fields of a release request body (JSON-ready; the service validates them)."""
    body: dict[str, Any] = {}
    if gate is not None:
        body["gate"] = gate.model_dump() if isinstance(gate, GateConfig) else gate
    if override_reason is not None:
        body["override_reason"] = override_reason
    return body


class Client:
    """Typed access to datasets, versions, diffs, runs, releases and their reads, sample and dataset lineage, tokens."""

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        settings: Settings | None = None,
        service: Service | None = None,
        timeout: float = 60.0,
    ) -> None:
        self.url = url.rstrip("/") if url else None
        self._service = service
        self._settings = settings
        self._http = None
        if self.url is not None:
            import httpx  # start-up: keeps httpx out of an in-process client (and of the CLI's local commands)

            headers = {"Authorization": f"Bearer {token}"} if token else {}
            self._http = httpx.Client(base_url=f"{self.url}/api/v1", headers=headers, timeout=timeout)
        self.actor = "local"

    # -- plumbing -----------------------------------------------------------------------------
    @property
    def service(self) -> Service:
        if self._service is None:
            from lineage.service.core import Service  # start-up: an HTTP-only client never loads the service

            self._service = Service(self._settings)
        return self._service

    @property
    def local(self) -> bool:
        return self._http is None

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
        elif self._service is not None:
            self._service.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _request(self, method: str, path: str, *, params: dict[str, Any] | None = None, json: Any = None) -> Any:
        assert self._http is not None
        clean = {k: v for k, v in (params or {}).items() if v is not None}
        response = self._http.request(method, path, params=clean, json=json)
        if response.status_code >= 400:
            try:
                body = response.json()
            except ValueError:
                body = None
            body = body if isinstance(body, dict) else {}
            detail, code = body.get("detail", response.text), body.get("code")
            cls = errors.error_class(code if isinstance(code, str) else None, response.status_code)
            message = detail if isinstance(detail, str) else str(detail)
            if issubclass(cls, errors.GateFailed):  # the same failures list as in-process
                raise cls(message, body.get("failures") or [])
            raise cls(message)
        return response.json()

    def _call(self, local: Callable[[], R], method: str, path: str, model: type[R], **kw: Any) -> R:
        """The service's answer in-process; over HTTP, the JSON answer validated into the same model."""
        if self._http is None:
            return _translated(local)()
        return model.model_validate(self._request(method, path, **kw))  # type: ignore[attr-defined]

    # -- datasets -----------------------------------------------------------------------------
    def list_datasets(
        self, limit: int | None = None, offset: int = 0, *, tag: str | None = None, owner: str | None = None
    ) -> S.Page[S.DatasetOut]:
        return self._call(
            lambda: self.service.list_datasets(limit, offset, tag=tag, owner=owner),
            "GET",
            "/datasets",
            S.Page[S.DatasetOut],
            params={"limit": limit, "offset": offset, "tag": tag, "owner": owner},
        )

    def get_dataset(self, name: str) -> S.DatasetOut:
        return self._call(lambda: self.service.get_dataset(name), "GET", f"/datasets/{_q(name)}", S.DatasetOut)

    def update_dataset(
        self,
        name: str,
        *,
        description: str | None = None,
        owner: str | None = None,
        license: str | None = None,  # noqa: A002 (the field's name)
        tags: list[str] | None = None,
    ) -> S.DatasetOut:
        body = {
            k: v
            for k, v in {"description": description, "owner": owner, "license": license, "tags": tags}.items()
            if v is not None
        }
        return self._call(
            lambda: self.service.update_dataset(name, body), "PATCH", f"/datasets/{_q(name)}", S.DatasetOut, json=body
        )

    def list_versions(self, name: str, limit: int | None = None, offset: int = 0) -> S.Page[S.VersionOut]:
        return self._call(
            lambda: self.service.list_versions(name, limit, offset),
            "GET",
            f"/datasets/{_q(name)}/versions",
            S.Page[S.VersionOut],
            params={"limit": limit, "offset": offset},
        )

    def get_version(self, name: str, version: int) -> S.VersionOut:
        return self._call(
            lambda: self.service.get_version(name, version),
            "GET",
            f"/datasets/{_q(name)}/versions/{int(version)}",
            S.VersionOut,
        )

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
        """What each step of the run that made ``name`` v``version`` decided about each sample, by sample id
        (only ``operator``'s, only ``verdict``: kept, dropped or modified)."""
        return self._call(
            lambda: self.service.list_samples(name, version, limit, offset, operator=operator, verdict=verdict),
            "GET",
            f"/datasets/{_q(name)}/versions/{int(version)}/samples",
            S.Page[S.SampleVerdict],
            params={"limit": limit, "offset": offset, "operator": operator, "verdict": verdict},
        )

    def diff(self, base: str, target: str) -> S.Diff:
        """From ``base`` to ``target``; each is NAME@TAG, DATASET:vN or DATASET (latest)."""
        return self._call(
            lambda: self.service.diff(base, target), "GET", "/diff", S.Diff, params={"base": base, "target": target}
        )

    # -- runs ---------------------------------------------------------------------------------
    def list_runs(
        self, limit: int | None = None, offset: int = 0, *, dataset: str | None = None, status: str | None = None
    ) -> S.Page[S.RunOut]:
        return self._call(
            lambda: self.service.list_runs(limit, offset, dataset=dataset, status=status),
            "GET",
            "/runs",
            S.Page[S.RunOut],
            params={"limit": limit, "offset": offset, "dataset": dataset, "status": status},
        )

    def get_run(self, run_id: str) -> S.RunOut:
        return self._call(lambda: self.service.get_run(run_id), "GET", f"/runs/{_q(run_id)}", S.RunOut)

    def list_pipeline_runs(
        self, limit: int | None = None, offset: int = 0, *, pipeline: str | None = None, status: str | None = None
    ) -> S.Page[S.PipelineRunOut]:
        return self._call(
            lambda: self.service.list_pipeline_runs(limit, offset, pipeline=pipeline, status=status),
            "GET",
            "/pipeline-runs",
            S.Page[S.PipelineRunOut],
            params={"limit": limit, "offset": offset, "pipeline": pipeline, "status": status},
        )

    def get_pipeline_run(self, pipeline_run_id: str) -> S.PipelineRunOut:
        return self._call(
            lambda: self.service.get_pipeline_run(pipeline_run_id),
            "GET",
            f"/pipeline-runs/{_q(pipeline_run_id)}",
            S.PipelineRunOut,
        )

    # -- releases -----------------------------------------------------------------------------
    def list_releases(
        self, limit: int | None = None, offset: int = 0, *, name: str | None = None, state: str | None = None
    ) -> S.Page[S.ReleaseOut]:
        return self._call(
            lambda: self.service.list_releases(limit, offset, name=name, state=state),
            "GET",
            "/releases",
            S.Page[S.ReleaseOut],
            params={"limit": limit, "offset": offset, "name": name, "state": state},
        )

    @staticmethod
    def _split(ref: str) -> tuple[str, str]:
        try:
            return parse_release_ref(ref)
        except ValueError as exc:
            raise BadRequest(str(exc)) from exc

    def get_release(self, ref: str) -> S.ReleaseOut:
        name, tag = self._split(ref)
        return self._call(lambda: self.service.get_release(ref), "GET", f"/releases/{name}/{tag}", S.ReleaseOut)

    def create_release(
        self,
        ref: str,
        *,
        dataset: str | None = None,
        version: int | None = None,
        draft: bool = False,
        gate: GateConfig | dict[str, Any] | None = None,
        override_reason: str | None = None,
    ) -> S.ReleaseResult:
        """Publish ``ref`` (or record a draft). Same content again: ``changed`` is False; other content: Conflict.

        With ``gate``, failed conditions raise :class:`~lineage.errors.GateFailed` (``exc.failures``: each
        condition with its measured value and limit) unless ``override_reason`` says why to publish anyway."""
        name, tag = self._split(ref)
        body = {"name": name, "tag": tag, "dataset": dataset, "version": version, "draft": draft}
        body |= _gate_body(gate, override_reason)
        return self._call(
            lambda: self.service.create_release(body, actor=self.actor), "POST", "/releases", S.ReleaseResult, json=body
        )

    publish = create_release

    def publish_release(
        self, ref: str, *, gate: GateConfig | dict[str, Any] | None = None, override_reason: str | None = None
    ) -> S.ReleaseResult:
        """Publish a draft, through ``gate`` (default: the conditions recorded with the draft)."""
        name, tag = self._split(ref)
        body = _gate_body(gate, override_reason)
        return self._call(
            lambda: self.service.publish_release(ref, body, actor=self.actor),
            "POST",
            f"/releases/{name}/{tag}/publish",
            S.ReleaseResult,
            json=body or None,
        )

    def deprecate_release(self, ref: str, reason: str = "") -> S.ReleaseResult:
        name, tag = self._split(ref)
        return self._call(
            lambda: self.service.deprecate_release(ref, reason, actor=self.actor),
            "POST",
            f"/releases/{name}/{tag}/deprecate",
            S.ReleaseResult,
            json={"reason": reason},
        )

    def get_manifest(self, ref: str) -> S.Manifest:
        """The manifest (``.as_dict()``: as stored, the keys :func:`lineage.releases.content_digest` reads)."""
        name, tag = self._split(ref)
        return self._call(lambda: self.service.get_manifest(ref), "GET", f"/releases/{name}/{tag}/manifest", S.Manifest)

    def get_quality(self, ref: str) -> S.Quality:
        name, tag = self._split(ref)
        return self._call(lambda: self.service.get_quality(ref), "GET", f"/releases/{name}/{tag}/quality", S.Quality)

    def list_replicas(self, ref: str, *, state: str | None = None) -> list[S.ReplicaOut]:
        """The release's copies, one per tier (``state="verified"``: the ones a reader may use)."""
        name, tag = self._split(ref)
        if self._http is None:
            return _translated(self.service.list_replicas)(ref, state=state)
        data = self._request("GET", f"/releases/{name}/{tag}/replicas", params={"state": state})
        return [S.ReplicaOut.model_validate(r) for r in data]

    def record_read(
        self, ref: str, *, job: str, world_size: int, rank: int, host: str = "", override_reason: str | None = None
    ) -> S.ReleaseReadOut:
        """Record that one rank of a training job opened ``ref`` (a usage record; a withdrawn release only
        with ``override_reason``, which is kept)."""
        name, tag = self._split(ref)
        body = {"job": job, "world_size": world_size, "rank": rank, "host": host, "override_reason": override_reason}
        return self._call(
            lambda: self.service.record_read(ref, body, actor=self.actor),
            "POST",
            f"/releases/{name}/{tag}/reads",
            S.ReleaseReadOut,
            json=body,
        )

    def list_reads(
        self, ref: str, limit: int | None = None, offset: int = 0, *, job: str | None = None
    ) -> S.Page[S.ReleaseReadOut]:
        """Which training jobs opened ``ref`` (one record per rank), newest first."""
        name, tag = self._split(ref)
        return self._call(
            lambda: self.service.list_reads(ref, limit, offset, job=job),
            "GET",
            f"/releases/{name}/{tag}/reads",
            S.Page[S.ReleaseReadOut],
            params={"limit": limit, "offset": offset, "job": job},
        )

    # -- pins and placement -------------------------------------------------------------------
    def pin_release(self, ref: str, until: datetime, reason: str = "") -> S.PinOut:
        """Keep ``ref`` on the hot tier until ``until`` (in the future; a time without a zone is UTC)."""
        name, tag = self._split(ref)
        body = {"until": until.isoformat(), "reason": reason}
        return self._call(
            lambda: self.service.pin_release(ref, body, actor=self.actor),
            "POST",
            f"/releases/{name}/{tag}/pins",
            S.PinOut,
            json=body,
        )

    def list_pins(self, ref: str) -> list[S.PinOut]:
        """Every pin of ``ref``, oldest first (``active``: not expired yet)."""
        name, tag = self._split(ref)
        if self._http is None:
            return _translated(self.service.list_pins)(ref)
        return [S.PinOut.model_validate(p) for p in self._request("GET", f"/releases/{name}/{tag}/pins")]

    def plan_placement(self) -> list[S.PlannedMove]:
        """The moves the placement rules want now (pinned stay hot, idle or deprecated go cold)."""
        if self._http is None:
            return _translated(self.service.plan_placement)()
        return [S.PlannedMove.model_validate(m) for m in self._request("GET", "/placement/plan")]

    # -- data on the tiers: in-process only -----------------------------------------------------
    # -- eval sets ------------------------------------------------------------------------------
    def list_evalsets(
        self, limit: int | None = None, offset: int = 0, *, state: str | None = None
    ) -> S.Page[S.EvalSetOut]:
        return self._call(
            lambda: self.service.list_evalsets(limit, offset, state=state),
            "GET",
            "/evalsets",
            S.Page[S.EvalSetOut],
            params={"limit": limit, "offset": offset, "state": state},
        )

    def get_evalset(self, name: str) -> S.EvalSetOut:
        return self._call(lambda: self.service.get_evalset(name), "GET", f"/evalsets/{_q(name)}", S.EvalSetOut)

    def list_evalset_versions(self, name: str) -> list[S.EvalSetVersionOut]:
        if self._http is None:
            return _translated(self.service.list_evalset_versions)(name)
        return [S.EvalSetVersionOut.model_validate(v) for v in self._request("GET", f"/evalsets/{_q(name)}/versions")]

    def get_evalset_version(self, ref: str) -> S.EvalSetVersionOut:
        """``NAME:vN`` (``NAME``: its latest version)."""
        name, version = _evalset_ref(ref)
        if version is None:
            version = self.get_evalset(name).latest_version or 0
        return self._call(
            lambda: self.service.get_evalset_version(name, version),
            "GET",
            f"/evalsets/{_q(name)}/versions/{version}",
            S.EvalSetVersionOut,
        )

    def diff_evalset(self, base: str, target: str) -> S.EvalSetDiff:
        """From ``NAME:vA`` to ``NAME:vB`` (one eval set; ``NAME`` alone is its latest version)."""
        (name, b), (other, t) = _evalset_ref(base), _evalset_ref(target)
        if other != name:
            raise BadRequest(f"a diff compares two versions of one eval set, not {name!r} and {other!r}")
        if b is None or t is None:
            latest = self.get_evalset(name).latest_version or 0
            b, t = b or latest, t or latest
        return self._call(
            lambda: self.service.diff_evalset(name, b, t),
            "GET",
            f"/evalsets/{_q(name)}/diff",
            S.EvalSetDiff,
            params={"base": b, "target": t},
        )

    def deprecate_evalset(self, name: str, reason: str = "") -> S.EvalSetOut:
        return self._call(
            lambda: self.service.deprecate_evalset(name, reason, actor=self.actor),
            "POST",
            f"/evalsets/{_q(name)}/deprecate",
            S.EvalSetOut,
            json={"reason": reason},
        )

    def register_collection(
        self,
        name: str,
        members: list[str],
        *,
        version: int | None = None,
        task: str | None = None,
        split: str | None = None,
        language: str | None = None,
        license: str | None = None,  # noqa: A002 (the field's name)
        description: str | None = None,
    ) -> S.EvalSetRegistered:
        """A version of collection ``name`` pinning each member (``NAME:vN``; ``NAME``: its latest now)."""
        body = {"members": members, "version": version, "task": task, "split": split, "language": language}
        body |= {"license": license, "description": description}
        return self._call(
            lambda: self.service.register_collection(name, body, actor=self.actor),
            "POST",
            f"/evalsets/{_q(name)}/versions",
            S.EvalSetRegistered,
            json={k: v for k, v in body.items() if v is not None},
        )

    def record_eval_run(
        self,
        model: str,
        checkpoint: str,
        evalset: str,
        metrics: dict[str, float] | None = None,
        training_jobs: list[str] | None = None,
    ) -> S.EvalRunOut:
        body = {
            "model": model,
            "checkpoint": checkpoint,
            "evalset": evalset,
            "metrics": metrics or {},
            "training_jobs": training_jobs or [],
        }
        return self._call(
            lambda: self.service.record_eval_run(body, actor=self.actor), "POST", "/eval-runs", S.EvalRunOut, json=body
        )

    def get_eval_run(self, run_id: int) -> S.EvalRunProvenance:
        return self._call(
            lambda: self.service.get_eval_run(run_id), "GET", f"/eval-runs/{int(run_id)}", S.EvalRunProvenance
        )

    def release_evals(self, ref: str) -> S.ReleaseEvals:
        name, tag = self._split(ref)
        return self._call(
            lambda: self.service.release_evals(ref), "GET", f"/releases/{name}/{tag}/evals", S.ReleaseEvals
        )

    def evalset_item_samples(
        self,
        ref: str,
        item_id: str,
        *,
        release: str | None = None,
        dataset: str | None = None,
        dataset_version: int | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> S.ItemSamples:
        """Every sample of ``release`` (or ``dataset`` at ``dataset_version``) containing item ``item_id`` of
        eval set ``ref`` (``NAME:vN``; ``NAME``: its latest version), one page at a time."""
        name, version = _evalset_ref(ref)
        if version is None:
            version = self.get_evalset(name).latest_version or 0
        params = {"release": release, "dataset": dataset, "dataset_version": dataset_version}
        return self._call(
            lambda: self.service.evalset_item_samples(name, version, item_id, **params, limit=limit, offset=offset),
            "GET",
            f"/evalsets/{_q(name)}/versions/{version}/items/{_q(item_id)}/samples",
            S.ItemSamples,
            params={**params, "limit": limit, "offset": offset},
        )

    def check_evalset(self, ref: str, *, releases: list[str] | None = None, engine: str = "local") -> S.EvalSetCheck:
        """Check published releases (None: all) against eval set ``ref`` on ``engine`` (local, spark, ray),
        recording the result on each."""
        return self._in_process(
            "check_evalset", lambda: self.service.check_evalset(ref, releases=releases, engine=engine)
        )

    def register_evalset(
        self,
        name: str,
        path: str,
        *,
        version: int | None = None,
        text_fields: list[str] | tuple[str, ...] = ("text",),
        join: str = "\n",
        id_field: str | None = None,
        tier: str | None = None,
        fmt: str = "auto",
        engine: str = "local",
        base_dir: Path | None = None,
        progress: Progress | None = None,
        **meta: str,
    ) -> S.EvalSetRegistered:
        """Register items as ``name:v{version}`` (see ``lineage evalset register``); ``meta``: task, split,
        language, license, description."""
        return self._in_process(
            "register_evalset",
            lambda: self.service.register_evalset(
                name,
                path,
                version=version,
                text_fields=text_fields,
                join=join,
                id_field=id_field,
                tier=tier,
                fmt=fmt,
                engine=engine,
                base_dir=base_dir,
                progress=progress,
                actor=self.actor,
                **meta,
            ),
        )

    def _in_process(self, operation: str, local: Callable[[], R]) -> R:
        """An operation that reads or writes tier data runs where the data is: never through a server."""
        if self._http is not None:
            raise BadRequest(
                f"{operation} reads or writes data on the tiers and runs in-process only: "
                "use lineage.Client() (no URL) where the tiers are reachable"
            )
        return _translated(local)()

    def run_pipeline(
        self,
        spec: dict[str, Any] | Path,
        *,
        engine: str | None = None,
        progress: Progress | None = None,
        from_stage: str | None = None,
        force: bool = False,
    ) -> S.RunResult:
        """Run a pipeline (its TOML/YAML file, or the same as a dict) and commit its output as a new version;
        a pipeline of stages skips the unchanged ones unless ``from_stage`` or ``force`` say otherwise."""
        return self._in_process(
            "run_pipeline",
            lambda: self.service.run_pipeline(
                spec, engine=engine, progress=progress, from_stage=from_stage, force=force
            ),
        )

    def plan_pipeline(
        self, spec: dict[str, Any] | Path, *, from_stage: str | None = None, force: bool = False
    ) -> S.PipelinePlan:
        """Which stages a run would run or skip, and why; changes nothing (see ``lineage run --plan``)."""
        return self._in_process(
            "plan_pipeline", lambda: self.service.plan_pipeline(spec, from_stage=from_stage, force=force)
        )

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
        progress: Progress | None = None,
    ) -> S.RunResult:
        """Convert raw files into a new version of source dataset ``dataset`` (see ``lineage ingest``)."""
        return self._in_process(
            "ingest",
            lambda: self.service.ingest(
                path,
                dataset,
                tier=tier,
                fmt=fmt,
                text_field=text_field,
                id_field=id_field,
                text_mode=text_mode,
                engine=engine,
                base_dir=base_dir,
                progress=progress,
            ),
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
    ) -> S.ExportResult:
        """Write the release's samples as ``<out>/<name>-<tag>.{jsonl,parquet}``, or tokenized into
        Megatron (``fmt="megatron"``) or MDS (``"mds"``) shards with a tokenizer.json (see ``lineage export``)."""
        return self._in_process(
            "export_release",
            lambda: self.service.export_release(
                ref,
                out,
                fmt,
                progress,
                tokenizer=tokenizer,
                seq_len=seq_len,
                pack=pack,
                shard_size=shard_size,
                seed=seed,
                eod_token=eod_token,
                tier=tier,
                engine=engine,
                override_reason=override_reason,
                actor=self.actor,
            ),
        )

    # -- training exports -------------------------------------------------------------------
    def list_exports(
        self, limit: int | None = None, offset: int = 0, *, release: str | None = None
    ) -> S.Page[S.ExportOut]:
        return self._call(
            lambda: self.service.list_exports(limit, offset, release=release),
            "GET",
            "/exports",
            S.Page[S.ExportOut],
            params={"limit": limit, "offset": offset, "release": release},
        )

    def get_export(self, export_id: str) -> S.ExportOut:
        return self._call(lambda: self.service.get_export(export_id), "GET", f"/exports/{_q(export_id)}", S.ExportOut)

    def export_sequence(self, export_id: str, sequence: int) -> S.ExportSequence:
        """Which samples make up global sequence ``sequence`` of export ``export_id``, with token spans."""
        return self._call(
            lambda: self.service.export_sequence(export_id, sequence),
            "GET",
            f"/exports/{_q(export_id)}/sequences/{int(sequence)}",
            S.ExportSequence,
        )

    def sample_sequences(self, export_id: str, sample_id: str) -> S.SampleSequences:
        """Which sequences of export ``export_id`` hold sample ``sample_id``'s tokens."""
        return self._call(
            lambda: self.service.sample_sequences(export_id, sample_id),
            "GET",
            f"/exports/{_q(export_id)}/samples/{_q(sample_id)}/sequences",
            S.SampleSequences,
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
        """Which samples were in global step ``step`` of a Megatron job (GPTDataset's order) that read the export."""
        job = {
            "seed": seed,
            "sequence_length": sequence_length,
            "global_batch_size": global_batch_size,
            "train_samples": train_samples,
        }
        return self._call(
            lambda: self.service.training_step(export_id, step, **job),
            "GET",
            f"/exports/{_q(export_id)}/steps/{int(step)}",
            S.TrainingStep,
            params=job,
        )

    def reader_step(self, export_id: str, step: int, **job: int | bool | str) -> S.ReaderStep:
        """Which samples were in global step ``step`` of a job that read the export with our reader:
        ``job`` is its loaders' arguments, ``seed=``, ``world_size=``, ``batch_size=`` (per rank), and
        ``epoch=``, ``num_workers=``, ``drop_last=``, ``shuffle=``, ``remainder=``, ``window_blocks=``,
        ``block_sequences=`` where not the defaults (see ``S.ReaderJob``)."""
        recorded = S.ReaderJob.model_validate(job)
        return self._call(
            lambda: self.service.reader_step(export_id, step, recorded),
            "GET",
            f"/exports/{_q(export_id)}/reader-steps/{int(step)}",
            S.ReaderStep,
            params=recorded.model_dump(),
        )

    def verify_export(self, export_id: str) -> S.ExportVerification:
        """Read the export's files back from its tier against its manifest (in-process: it reads the tier)."""
        return self._in_process("verify_export", lambda: self.service.verify_export(export_id))

    def dedupe_files(
        self,
        inputs: list[Path],
        output: Path,
        *,
        minhash: dict[str, Any] | None = None,
        engine: str = "local",
        text_field: str = "text",
        id_field: str | None = None,
    ) -> S.DedupeResult:
        """Remove near-duplicates from files (see ``lineage dedupe``); ``minhash``: the operator's parameters."""
        return self._in_process(
            "dedupe_files",
            lambda: self.service.dedupe_files(
                inputs, output, minhash=minhash, engine=engine, text_field=text_field, id_field=id_field
            ),
        )

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
    ) -> S.ReplicaResult:
        """Make (or finish) a verified replica of ``ref`` on tier ``to``."""
        return self._in_process(
            "copy_release",
            lambda: self.service.copy_release(
                ref,
                to,
                workers=workers,
                bytes_per_s=bytes_per_s,
                on_bytes=on_bytes,
                engine=engine,
                override_reason=override_reason,
                actor=self.actor,
            ),
        )

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
        """Copy and verify ``ref`` on tier ``to``, then remove source files no other published release needs."""
        return self._in_process(
            "move_release",
            lambda: self.service.move_release(
                ref, to, workers=workers, bytes_per_s=bytes_per_s, on_bytes=on_bytes, engine=engine
            ),
        )

    def verify_release(self, ref: str, tier: str) -> S.ReplicaResult:
        """Read ``ref``'s replica on ``tier`` back and check it against the manifest (``problems``)."""
        return self._in_process("verify_release", lambda: self.service.verify_release(ref, tier))

    def apply_placement(
        self,
        *,
        workers: int = 4,
        engine: str = "local",
        on_move: Callable[[S.PlannedMove], None] | None = None,
        on_bytes: Callable[[int], None] | None = None,
    ) -> list[S.AppliedMove]:
        """Make the moves :meth:`plan_placement` lists."""
        return self._in_process(
            "apply_placement",
            lambda: self.service.apply_placement(workers=workers, engine=engine, on_move=on_move, on_bytes=on_bytes),
        )

    def collect_garbage(self, *, dry_run: bool = False) -> S.GcResult:
        """Delete the files of runs that never committed (``dry_run``: only list them)."""
        return self._in_process("collect_garbage", lambda: self.service.collect_garbage(dry_run=dry_run))

    # -- takedown ----------------------------------------------------------------------------------
    def create_takedown(
        self, selector: S.TakedownSelector | dict[str, Any], *, kind: str, reason: str
    ) -> S.TakedownOut:
        """Record a takedown request: ``selector`` is one of ``{"source": {"dataset", "path"?, "uri"?}}``,
        ``{"sample_ids": [...]}``, ``{"content_hashes": [...]}`` or ``{"where": {"field", "op", "value"}}``."""
        if isinstance(selector, S.TakedownSelector):
            selector = selector.model_dump(mode="json", exclude_none=True)
        body = {"selector": selector, "kind": kind, "reason": reason}
        return self._call(
            lambda: self.service.create_takedown(body, actor=self.actor), "POST", "/takedowns", S.TakedownOut, json=body
        )

    def list_takedowns(
        self, limit: int | None = None, offset: int = 0, *, state: str | None = None
    ) -> S.Page[S.TakedownOut]:
        return self._call(
            lambda: self.service.list_takedowns(limit, offset, state=state),
            "GET",
            "/takedowns",
            S.Page[S.TakedownOut],
            params={"limit": limit, "offset": offset, "state": state},
        )

    def get_takedown(self, request_id: int) -> S.TakedownOut:
        return self._call(
            lambda: self.service.get_takedown(request_id), "GET", f"/takedowns/{int(request_id)}", S.TakedownOut
        )

    def plan_takedown(self, request_id: int, *, sample_limit: int = 1000) -> S.TakedownPlan:
        """Which live releases hold what request ``request_id`` names, where, who read them; changes nothing."""
        return self._call(
            lambda: self.service.plan_takedown(request_id, sample_limit=sample_limit),
            "GET",
            f"/takedowns/{int(request_id)}/plan",
            S.TakedownPlan,
            params={"sample_limit": sample_limit},
        )

    def apply_takedown(
        self, request_id: int, *, tag_suffix: str | None = None, purge: bool = False, engine: str = "local"
    ) -> S.TakedownApplied:
        """Successor releases without the request's samples; the old ones withdrawn (rewrites tier data, on
        ``engine``); with ``purge``, then :meth:`purge_takedown`."""
        return self._in_process(
            "apply_takedown",
            lambda: self.service.apply_takedown(
                request_id, tag_suffix=tag_suffix, purge=purge, engine=engine, actor=self.actor
            ),
        )

    def purge_takedown(self, request_id: int) -> S.TakedownPurged:
        """Delete an applied request's samples' bytes on every tier (in-process: it deletes tier data)."""
        return self._in_process("purge_takedown", lambda: self.service.purge_takedown(request_id))

    # -- sample lineage -----------------------------------------------------------------------
    def sample_lineage(
        self, sample_id: str, *, dataset: str | None = None, include_text: bool = False
    ) -> S.SampleLineage:
        return self._call(
            lambda: self.service.sample_lineage(sample_id, dataset=dataset, include_text=include_text),
            "GET",
            f"/samples/{_q(sample_id)}/lineage",
            S.SampleLineage,
            params={"dataset": dataset, "include_text": include_text or None},
        )

    def why_not(self, sample_id: str, release: str) -> S.WhyNot:
        return self._call(
            lambda: self.service.why_not(sample_id, release),
            "GET",
            f"/samples/{_q(sample_id)}/why-not",
            S.WhyNot,
            params={"release": release},
        )

    def source_releases(
        self, *, uri: str | None = None, dataset: str | None = None, version: int | None = None
    ) -> S.SourceReleases:
        """Releases holding samples of a source file (``uri``) or of a dataset version, with counts."""
        if self._http is None:
            return _translated(self.service.source_releases)(uri=uri, dataset=dataset, version=version)
        if (uri is None) == (dataset is None):
            raise BadRequest("give exactly one source: uri (a file URI) or dataset (a dataset name, with version)")
        if uri is not None:
            return S.SourceReleases.model_validate(self._request("GET", "/sources/releases", params={"uri": uri}))
        assert dataset is not None
        number = version if version is not None else self.get_dataset(dataset).latest_version
        if number is None:
            raise NotFound(f"dataset {dataset!r} has no versions")
        return self.releases_containing_version(dataset, number)

    def releases_containing_version(self, name: str, version: int) -> S.SourceReleases:
        """Releases holding samples of dataset version ``name`` v``version``, with counts."""
        return self._call(
            lambda: self.service.source_releases(dataset=name, version=version),
            "GET",
            f"/datasets/{_q(name)}/versions/{int(version)}/releases",
            S.SourceReleases,
        )

    # -- dataset-level lineage ----------------------------------------------------------------
    def post_lineage_event(self, event: dict[str, Any]) -> S.EventAccepted:
        """Send an OpenLineage RunEvent (a dict in the OpenLineage JSON shape)."""
        return self._call(lambda: self.service.ingest_event(event), "POST", "/lineage", S.EventAccepted, json=event)

    def lineage_graph(self, node_id: str, depth: int = 20, as_of: datetime | None = None) -> S.Graph:
        """``node_id`` is ``dataset:NAMESPACE:NAME`` or ``job:NAMESPACE:NAME``; ``as_of``: the graph as it
        was then (naive: UTC)."""
        params: dict[str, Any] = {"nodeId": node_id, "depth": depth}
        if as_of is not None:
            params["asOf"] = as_of.isoformat()
        return self._call(
            lambda: self.service.lineage_graph(node_id, depth, as_of), "GET", "/lineage", S.Graph, params=params
        )

    # -- search ---------------------------------------------------------------------------------
    def search(self, query: str, *, limit: int = 20) -> S.SearchResults:
        """Datasets, releases, runs, a sample (by its exact id), sources and eval sets matching ``query``."""
        return self._call(
            lambda: self.service.search(query, limit=limit),
            "GET",
            "/search",
            S.SearchResults,
            params={"q": query, "limit": limit},
        )

    # -- tokens and health --------------------------------------------------------------------
    def create_token(self, name: str, role: str = "reader") -> S.TokenCreated:
        return self._call(
            lambda: self.service.create_token(name, role, actor=self.actor),
            "POST",
            "/tokens",
            S.TokenCreated,
            json={"name": name, "role": role},
        )

    def list_tokens(self) -> list[S.TokenOut]:
        if self._http is None:
            return _translated(self.service.list_tokens)()
        return [S.TokenOut.model_validate(t) for t in self._request("GET", "/tokens")]

    def revoke_token(self, token_id: int) -> S.TokenOut:
        return self._call(lambda: self.service.revoke_token(token_id), "DELETE", f"/tokens/{int(token_id)}", S.TokenOut)

    def health(self) -> S.Health:
        # in-process calls go through no auth at all
        return self._call(lambda: self.service.health(auth_required=False), "GET", "/health", S.Health)

    def iter_all(
        self, method: Callable[..., S.Page[T]], *args: object, page_size: int = 500, **kw: object
    ) -> Iterator[T]:
        """Every item of a paginated list, page after page: ``client.iter_all(client.list_datasets, tag="en")``,
        ``client.iter_all(client.list_versions, "debian-clean")``."""
        offset = 0
        while True:
            page = method(*args, limit=page_size, offset=offset, **kw)
            yield from page.items
            offset += len(page.items)
            if not page.items or offset >= page.total:
                return

    # the methods' former names (before their names became the API's operationIds), for one release
    datasets = _Renamed("list_datasets")
    dataset = _Renamed("get_dataset")
    versions = _Renamed("list_versions")
    version = _Renamed("get_version")
    runs = _Renamed("list_runs")
    run = _Renamed("get_run")
    releases = _Renamed("list_releases")
    release = _Renamed("get_release")
    manifest = _Renamed("get_manifest", S.Manifest.as_dict)  # a dict, as before
    quality = _Renamed("get_quality")
    replicas = _Renamed("list_replicas")
    reads = _Renamed("list_reads")
    tokens = _Renamed("list_tokens")
