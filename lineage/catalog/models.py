"""SQLAlchemy 2 models. They are mapped dataclasses, so API schemas derive from them directly."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy import JSON, BigInteger, DateTime, Float, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, MappedAsDataclass, mapped_column, relationship

# the values of each ``state`` column: the service refuses any other in a filter, and the HTTP API declares them
ReleaseState = Literal["draft", "published", "deprecated", "withdrawn"]
ReplicaState = Literal["copying", "verified", "removing", "removed", "corrupt"]
TakedownState = Literal["planned", "applied", "purged"]
EvalSetState = Literal["active", "deprecated"]


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(moment: datetime) -> datetime:
    """SQLite drops the zone of stored times; every time in the catalog is UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


class Base(MappedAsDataclass, DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON, datetime: DateTime(timezone=True)}


class Dataset(Base):
    __tablename__ = "datasets"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, init=False)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    tier: Mapped[str] = mapped_column(String(100))
    description: Mapped[str] = mapped_column(Text, default="")
    owner: Mapped[str] = mapped_column(String(200), default="")
    license: Mapped[str] = mapped_column(String(200), default="")
    tags: Mapped[list[Any]] = mapped_column(default_factory=list)
    created_at: Mapped[datetime] = mapped_column(default_factory=utcnow)
    versions: Mapped[list[DatasetVersion]] = relationship(
        back_populates="dataset", default_factory=list, repr=False, order_by="DatasetVersion.version"
    )


class Run(Base):
    """One pipeline execution. Its status flips to ``succeeded`` in the same transaction that
    records the output version: that transaction is the run's only commit point."""

    __tablename__ = "runs"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    pipeline: Mapped[str] = mapped_column(String(200))
    engine: Mapped[str] = mapped_column(String(20))
    output_dataset: Mapped[str] = mapped_column(String(200))
    spec: Mapped[dict[str, Any]] = mapped_column(default_factory=dict)  # the pipeline as run
    operators: Mapped[list[Any]] = mapped_column(default_factory=list)  # name, version, params
    inputs: Mapped[list[Any]] = mapped_column(default_factory=list)  # datasets/versions and raw sources
    code_version: Mapped[str] = mapped_column(String(100), default="")
    status: Mapped[str] = mapped_column(String(20), default="running")  # running|succeeded|failed
    started_at: Mapped[datetime] = mapped_column(default_factory=utcnow)
    ended_at: Mapped[datetime | None] = mapped_column(default=None)
    counts: Mapped[dict[str, Any]] = mapped_column(default_factory=dict)  # per-operator counts
    error: Mapped[str | None] = mapped_column(Text, default=None)
    host: Mapped[str] = mapped_column(String(200), default="")
    pid: Mapped[int | None] = mapped_column(Integer, default=None)
    staging_prefix: Mapped[str] = mapped_column(String(300), default="")  # table subfolder its files go to
    # a stage of a pipeline run (lineage.pipeline_runs): the group, the stage's name, its cache key
    # (no foreign key: SQLite cannot add one to an existing table without copying it)
    pipeline_run_id: Mapped[str | None] = mapped_column(String(36), default=None, index=True)
    stage: Mapped[str | None] = mapped_column(String(100), default=None)
    cache_key: Mapped[str | None] = mapped_column(String(64), default=None, index=True)  # RunKey.digest
    cache_parts: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)  # RunKey's parts


class PipelineRun(Base):
    """One run of a pipeline of stages: which stages ran and which were skipped (reusing the version
    of an earlier run with the same cache key). Each stage that ran is a :class:`Run` pointing here."""

    __tablename__ = "pipeline_runs"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    pipeline: Mapped[str] = mapped_column(String(200), index=True)
    engine: Mapped[str] = mapped_column(String(20))
    spec: Mapped[dict[str, Any]] = mapped_column(default_factory=dict)  # the pipeline file as run
    options: Mapped[dict[str, Any]] = mapped_column(default_factory=dict)  # from_stage, force
    status: Mapped[str] = mapped_column(String(20), default="running")  # running|succeeded|failed
    # per stage, in order as decided: {stage, action: run|skip, reason, changed, run_id, dataset, version}
    stages: Mapped[list[Any]] = mapped_column(default_factory=list)
    code_version: Mapped[str] = mapped_column(String(100), default="")
    started_at: Mapped[datetime] = mapped_column(default_factory=utcnow)
    ended_at: Mapped[datetime | None] = mapped_column(default=None)
    error: Mapped[str | None] = mapped_column(Text, default=None)
    host: Mapped[str] = mapped_column(String(200), default="")
    pid: Mapped[int | None] = mapped_column(Integer, default=None)


class DatasetVersion(Base):
    __tablename__ = "dataset_versions"
    __table_args__ = (UniqueConstraint("dataset_id", "version"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, init=False)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id"), init=False)
    version: Mapped[int] = mapped_column(Integer)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id"))
    tier: Mapped[str] = mapped_column(String(100))
    # tier-relative Delta table paths and the Delta versions this dataset version pins
    data_path: Mapped[str] = mapped_column(String(500))
    data_delta_version: Mapped[int] = mapped_column(Integer)
    lineage_path: Mapped[str] = mapped_column(String(500))
    lineage_delta_version: Mapped[int] = mapped_column(Integer)
    quarantine_path: Mapped[str] = mapped_column(String(500))
    quarantine_delta_version: Mapped[int] = mapped_column(Integer)
    row_count: Mapped[int] = mapped_column(BigInteger)
    bytes: Mapped[int] = mapped_column(BigInteger)
    quarantine_count: Mapped[int] = mapped_column(BigInteger, default=0)
    schema: Mapped[dict[str, Any]] = mapped_column(default_factory=dict)
    # MinHash signatures of the output samples (when the pipeline ran a cluster operator)
    signatures_path: Mapped[str | None] = mapped_column(String(500), default=None)
    signatures_delta_version: Mapped[int | None] = mapped_column(Integer, default=None)
    created_at: Mapped[datetime] = mapped_column(default_factory=utcnow)
    # set by a takedown's purge, which deleted this version's files holding the request's samples: a
    # tombstone, kept for its lineage and what was released from it, whose data can no longer be read
    purged_by: Mapped[int | None] = mapped_column(Integer, default=None)
    dataset: Mapped[Dataset] = relationship(back_populates="versions", default=None, repr=False)

    @property
    def ref(self) -> str:
        return f"{self.dataset.name}:v{self.version}"

    @property
    def pinned_tables(self) -> dict[str, tuple[str, int]]:
        """Each table this version pins (data, lineage, quarantine, signatures): its path and Delta version."""
        pinned = {
            "data": (self.data_path, self.data_delta_version),
            "lineage": (self.lineage_path, self.lineage_delta_version),
            "quarantine": (self.quarantine_path, self.quarantine_delta_version),
        }
        if self.signatures_path is not None and self.signatures_delta_version is not None:
            pinned["signatures"] = (self.signatures_path, self.signatures_delta_version)
        return pinned


class Release(Base):
    """``name@tag`` pinned to one dataset version. Immutable once published."""

    __tablename__ = "releases"
    __table_args__ = (UniqueConstraint("name", "tag"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, init=False)
    name: Mapped[str] = mapped_column(String(200))
    tag: Mapped[str] = mapped_column(String(200))
    dataset_version_id: Mapped[int] = mapped_column(ForeignKey("dataset_versions.id"))
    content_digest: Mapped[str] = mapped_column(String(64))
    manifest: Mapped[dict[str, Any]] = mapped_column(default_factory=dict)
    state: Mapped[str] = mapped_column(String(20), default="published")  # draft|published|deprecated|withdrawn
    # publish gate: conditions, measured results, and an admin override (who, when, why) if any
    gate: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    created_by: Mapped[str] = mapped_column(String(200), default="")
    published_at: Mapped[datetime] = mapped_column(default_factory=utcnow)  # creation time for a draft
    deprecated_at: Mapped[datetime | None] = mapped_column(default=None)
    deprecation_reason: Mapped[str | None] = mapped_column(Text, default=None)
    # eval set versions checked against the release after publishing (``lineage evalset check``), by NAME:vN;
    # the release's files and manifest are not changed
    contamination_checks: Mapped[dict[str, Any]] = mapped_column(JSON, default_factory=dict)
    dataset_version: Mapped[DatasetVersion] = relationship(default=None, repr=False)
    # a takedown withdrew it: when, which request, and the release that replaces it (NAME@TAG)
    withdrawn_at: Mapped[datetime | None] = mapped_column(default=None)
    withdrawn_by: Mapped[int | None] = mapped_column(Integer, default=None)
    successor: Mapped[str | None] = mapped_column(String(401), default=None)

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.tag}"


class ReleaseRead(Base):
    """A training job opening a release: which job, how many ranks, when (for "who used this").

    ``job``, ``rank`` and ``host`` are what the reader says about itself; ``recorded_by`` is who
    recorded it (the API token's name, or the OS user for direct catalog access), so usage records,
    which any reader-role token may add, stay attributable.
    """

    __tablename__ = "release_reads"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, init=False)
    release_id: Mapped[int] = mapped_column(ForeignKey("releases.id"), index=True)
    job: Mapped[str] = mapped_column(String(300))
    world_size: Mapped[int] = mapped_column(Integer)
    rank: Mapped[int] = mapped_column(Integer)
    host: Mapped[str] = mapped_column(String(200), default="")
    recorded_by: Mapped[str] = mapped_column(String(200), default="")
    opened_at: Mapped[datetime] = mapped_column(default_factory=utcnow)
    # why a withdrawn release was read anyway (a read of one needs a reason; see releases.check_servable)
    override_reason: Mapped[str | None] = mapped_column(Text, default=None)


class Replica(Base):
    """A copy of one release's data on one tier: where it is, what state it is in, what was proven.

    The release's original table is its ``primary`` replica. Other replicas are self-contained
    Delta tables (the release's files plus a log whose version 0 is exactly the release).
    ``files`` holds one row per file read back and verified, so an interrupted copy resumes without
    copying verified files again.
    """

    __tablename__ = "replicas"
    __table_args__ = (UniqueConstraint("release_id", "tier"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, init=False)
    release_id: Mapped[int] = mapped_column(ForeignKey("releases.id"))
    tier: Mapped[str] = mapped_column(String(100))
    table_path: Mapped[str] = mapped_column(String(500))
    delta_version: Mapped[int | None] = mapped_column(Integer, default=None)
    primary: Mapped[bool] = mapped_column(default=False)
    state: Mapped[str] = mapped_column(String(20), default="copying")  # copying|verified|removing|removed|corrupt
    created_at: Mapped[datetime] = mapped_column(default_factory=utcnow)
    verified_at: Mapped[datetime | None] = mapped_column(default=None)
    detail: Mapped[str | None] = mapped_column(Text, default=None)
    files: Mapped[list[ReplicaFile]] = relationship(
        default_factory=list, repr=False, cascade="all, delete-orphan", order_by="ReplicaFile.path", lazy="selectin"
    )


class ReplicaFile(Base):
    """One file of a replica, recorded once it was read back from the tier and matched."""

    __tablename__ = "replica_files"
    __table_args__ = (UniqueConstraint("replica_id", "path"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, init=False)
    replica_id: Mapped[int] = mapped_column(ForeignKey("replicas.id"), init=False)
    path: Mapped[str] = mapped_column(String(500))
    size: Mapped[int] = mapped_column(BigInteger)
    xxh3_128: Mapped[str] = mapped_column(String(32))
    verified_at: Mapped[datetime] = mapped_column(default_factory=utcnow)


class ReleasePin(Base):
    """A training job's claim that a release stays hot until ``until``."""

    __tablename__ = "release_pins"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, init=False)
    release_id: Mapped[int] = mapped_column(ForeignKey("releases.id"))
    until: Mapped[datetime]
    pinned_by: Mapped[str] = mapped_column(String(200), default="")
    reason: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(default_factory=utcnow)


class ApiToken(Base):
    """A bearer token for the HTTP service. Only the SHA-256 of the secret is stored."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, init=False)
    name: Mapped[str] = mapped_column(String(200))
    role: Mapped[str] = mapped_column(String(20))  # reader|writer|admin
    token_hash: Mapped[str] = mapped_column(String(64), unique=True, repr=False)
    prefix: Mapped[str] = mapped_column(String(16))  # first characters of the token, to recognise it
    created_by: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(default_factory=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(default=None)


class LineageEvent(Base):
    """An OpenLineage RunEvent as received (ours or any producer's), kept verbatim."""

    __tablename__ = "lineage_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, init=False)
    event_type: Mapped[str] = mapped_column(String(20))
    event_time: Mapped[datetime] = mapped_column()
    run_id: Mapped[str] = mapped_column(String(100), index=True)
    job_namespace: Mapped[str] = mapped_column(String(500))
    job_name: Mapped[str] = mapped_column(String(1000))
    producer: Mapped[str] = mapped_column(String(1000), default="")
    payload: Mapped[dict[str, Any]] = mapped_column(default_factory=dict, repr=False)
    received_at: Mapped[datetime] = mapped_column(default_factory=utcnow)


class LineageNode(Base):
    """A job or dataset of the dataset-level lineage graph (OpenLineage naming: namespace + name)."""

    __tablename__ = "lineage_nodes"
    __table_args__ = (UniqueConstraint("kind", "namespace", "name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, init=False)
    kind: Mapped[str] = mapped_column(String(10))  # DATASET|JOB
    namespace: Mapped[str] = mapped_column(String(500))
    name: Mapped[str] = mapped_column(String(1000))
    facets: Mapped[dict[str, Any]] = mapped_column(default_factory=dict, repr=False)  # latest seen
    latest_run_id: Mapped[str | None] = mapped_column(String(100), default=None)
    updated_at: Mapped[datetime] = mapped_column(default_factory=utcnow)


class LineageEdge(Base):
    """Job ``job_id`` reads (``in``) or writes (``out``) dataset ``dataset_id``."""

    __tablename__ = "lineage_edges"
    __table_args__ = (UniqueConstraint("job_id", "dataset_id", "direction"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, init=False)
    job_id: Mapped[int] = mapped_column(ForeignKey("lineage_nodes.id"), index=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("lineage_nodes.id"), index=True)
    direction: Mapped[str] = mapped_column(String(3))  # in|out
    updated_at: Mapped[datetime] = mapped_column(default_factory=utcnow)


class TakedownRequest(Base):
    """A request to remove samples from every release that holds them (opt-out, copyright, privacy, ...).

    ``selector`` says what goes, in exactly one form (``lineage.service.schemas.TakedownSelector``): a
    source (dataset, optionally a path glob or a source URI), sample ids, content hashes, or a predicate
    on a kept field. ``state`` moves planned → applied → purged."""

    __tablename__ = "takedown_requests"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, init=False)
    selector: Mapped[dict[str, Any]] = mapped_column(repr=False)
    kind: Mapped[str] = mapped_column(String(20))  # copyright|privacy|opt_out|quality|other
    reason: Mapped[str] = mapped_column(Text)
    requested_by: Mapped[str] = mapped_column(String(200))
    state: Mapped[str] = mapped_column(String(20), default="planned")  # planned|applied|purged
    created_at: Mapped[datetime] = mapped_column(default_factory=utcnow)
    applied_at: Mapped[datetime | None] = mapped_column(default=None)
    purged_at: Mapped[datetime | None] = mapped_column(default=None)
    purge_report: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)  # what purge deleted


class EvalSet(Base):
    """A benchmark kept as a versioned asset (issue #19): what it is (task, split, language, licence),
    which of its fields are checked for overlap and how they join, and whether it is a collection of
    other eval sets. Its items live in a dataset version (see :mod:`lineage.service.evalsets`)."""

    __tablename__ = "eval_sets"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, init=False)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    kind: Mapped[str] = mapped_column(String(20), default="items")  # items|collection
    task: Mapped[str] = mapped_column(String(40), default="other")
    split: Mapped[str] = mapped_column(String(100), default="test")
    language: Mapped[str] = mapped_column(String(40), default="")
    license: Mapped[str] = mapped_column(String(200), default="")
    description: Mapped[str] = mapped_column(Text, default="")
    state: Mapped[str] = mapped_column(String(20), default="active")  # active|deprecated
    deprecated_at: Mapped[datetime | None] = mapped_column(default=None)
    deprecation_reason: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(default_factory=utcnow)


class EvalSetVersion(Base):
    """One immutable version ``NAME:vN`` of an eval set: the dataset version holding its items (none
    for a collection, whose ``members`` are ``NAME:vN`` refs pinned at their versions), the text
    fields and join it was registered with, the digest that makes registering it again a no-op, and
    the bad-input report."""

    __tablename__ = "eval_set_versions"
    __table_args__ = (UniqueConstraint("eval_set_id", "version"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, init=False)
    eval_set_id: Mapped[int] = mapped_column(ForeignKey("eval_sets.id"), init=False)
    version: Mapped[int] = mapped_column(Integer)
    content_digest: Mapped[str] = mapped_column(String(64))
    dataset_version_id: Mapped[int | None] = mapped_column(ForeignKey("dataset_versions.id"), default=None)
    text_fields: Mapped[list[Any]] = mapped_column(default_factory=list)
    join: Mapped[str] = mapped_column(String(20), default="\n")
    id_field: Mapped[str | None] = mapped_column(String(200), default=None)
    members: Mapped[list[Any]] = mapped_column(default_factory=list)  # a collection's NAME:vN refs
    item_count: Mapped[int] = mapped_column(BigInteger, default=0)
    report: Mapped[dict[str, Any]] = mapped_column(default_factory=dict)  # bad-input counts
    created_by: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(default_factory=utcnow)
    eval_set: Mapped[EvalSet] = relationship(default=None, repr=False)
    dataset_version: Mapped[DatasetVersion | None] = relationship(default=None, repr=False)

    @property
    def ref(self) -> str:
        return f"{self.eval_set.name}:v{self.version}"


class EvalRun(Base):
    """A model evaluated on an eval set version (issue #19, item 3): the model (name and checkpoint), the
    metrics, and the training jobs that produced it, which the releases' usage records link to data."""

    __tablename__ = "eval_runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, init=False)
    model: Mapped[str] = mapped_column(String(300))
    checkpoint: Mapped[str] = mapped_column(String(300))
    eval_set_version_id: Mapped[int] = mapped_column(ForeignKey("eval_set_versions.id"), index=True)
    metrics: Mapped[dict[str, Any]] = mapped_column(default_factory=dict)
    training_jobs: Mapped[list[Any]] = mapped_column(default_factory=list)  # ReleaseRead.job values
    recorded_by: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(default_factory=utcnow)
    eval_set_version: Mapped[EvalSetVersion] = relationship(default=None, repr=False)


class ContaminationScan(Base):
    """One check of a dataset version (a release's) against one eval set version (issue #19: "each eval
    item gets the list of samples that contain it"): its rule and counts; its hits list every sample."""

    __tablename__ = "contamination_scans"
    __table_args__ = (UniqueConstraint("dataset_version_id", "eval_set_version_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, init=False)
    dataset_version_id: Mapped[int] = mapped_column(ForeignKey("dataset_versions.id"), index=True)
    eval_set_version_id: Mapped[int] = mapped_column(ForeignKey("eval_set_versions.id"), index=True)
    threshold: Mapped[float] = mapped_column(Float)
    coverage: Mapped[str] = mapped_column(String(20))
    checked_samples: Mapped[int] = mapped_column(BigInteger)
    contaminated_items: Mapped[int] = mapped_column(BigInteger)
    checked_at: Mapped[datetime] = mapped_column(default_factory=utcnow)


class ContaminationHit(Base):
    """A sample of a checked version containing an eval item above the check's threshold, with the
    item's and the sample's matched n-grams. Keyed for paging one item's samples in order."""

    __tablename__ = "contamination_hits"

    scan_id: Mapped[int] = mapped_column(ForeignKey("contamination_scans.id"), primary_key=True)
    item_id: Mapped[str] = mapped_column(String(300), primary_key=True)
    sample_id: Mapped[str] = mapped_column(String(300), primary_key=True)
    matched_item_ngrams: Mapped[int] = mapped_column(Integer)
    item_ngrams: Mapped[int] = mapped_column(Integer)
    matched_sample_ngrams: Mapped[int] = mapped_column(Integer)
    sample_ngrams: Mapped[int] = mapped_column(Integer)


class Export(Base):
    """A release tokenized into training shards (``lineage export --format megatron|mds``): where the shards
    are, what they are a function of (``export_id``: release, tokenizer digest, options, seed) and their
    manifest (shards and sequence-lineage tables with checksums, token counts per source). The same export
    written to two places is two rows with one ``export_id``."""

    __tablename__ = "exports"
    __table_args__ = (UniqueConstraint("export_id", "tier", "path"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, init=False)
    export_id: Mapped[str] = mapped_column(String(32), index=True)
    release_id: Mapped[int] = mapped_column(ForeignKey("releases.id"), index=True)
    format: Mapped[str] = mapped_column(String(20))
    tier: Mapped[str | None] = mapped_column(String(100))  # None: a local folder, ``path`` absolute
    path: Mapped[str] = mapped_column(String(1000))
    tokenizer_digest: Mapped[str] = mapped_column(String(80))
    options: Mapped[dict[str, Any]] = mapped_column(default_factory=dict)
    manifest: Mapped[dict[str, Any]] = mapped_column(default_factory=dict)
    samples: Mapped[int] = mapped_column(BigInteger, default=0)
    sequences: Mapped[int] = mapped_column(BigInteger, default=0)
    tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    created_by: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(default_factory=utcnow)
    purged_by: Mapped[int | None] = mapped_column(Integer, default=None)  # its shards deleted by a purge
    release: Mapped[Release] = relationship(default=None, repr=False)
