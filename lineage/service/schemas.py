"""API schemas. Catalog resources are derived from the SQLAlchemy mapped dataclasses, so a new
column shows up in the API (and its OpenAPI document) without a second edit; only computed fields
and request bodies are written here by hand.
"""

from __future__ import annotations

import re
import typing
import warnings
from datetime import UTC, datetime
from typing import Annotated, Any, Generic, Literal, TypeVar

import sqlalchemy as sa
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)

from lineage.catalog import models
from lineage.errors import Invalid
from lineage.releases import usage
from lineage.releases.qc import GateConfig
from storage import names

T = TypeVar("T")


UtcDatetime = Annotated[datetime, AfterValidator(models.as_utc)]


def _python_type(annotation: Any) -> Any:
    if annotation is datetime:
        return UtcDatetime
    args = typing.get_args(annotation)
    if args and type(None) in args:
        inner = [a for a in args if a is not type(None)]
        return _python_type(inner[0]) | None if len(inner) == 1 else annotation
    return annotation


def derive(
    cls: type[models.Base],
    name: str,
    *,
    exclude: tuple[str, ...] = (),
    extra: dict[str, Any] | None = None,
    doc: str | None = None,
) -> type[BaseModel]:
    """A pydantic model with one field per mapped column of ``cls`` (types from its ``Mapped[...]``
    annotations), minus ``exclude``, plus ``extra`` computed fields (``name: (type, default)``)."""
    hints = typing.get_type_hints(cls, vars(models))
    fields: dict[str, Any] = {}
    for column in sa.inspect(cls).column_attrs:
        if column.key in exclude:
            continue
        (annotation,) = typing.get_args(hints[column.key])  # Mapped[X] -> X
        fields[column.key] = (_python_type(annotation), ...)
    fields.update(extra or {})
    with warnings.catch_warnings():  # a column named "schema" shadows BaseModel.schema (deprecated): harmless
        warnings.simplefilter("ignore", UserWarning)
        model = create_model(name, __config__=ConfigDict(from_attributes=True), **fields)
    model.__doc__ = doc or (cls.__doc__ or "").strip() or name
    return model


DatasetOut = derive(
    models.Dataset,
    "Dataset",
    extra={"latest_version": (int | None, None), "version_count": (int, 0)},
    doc="A dataset: owner, licence, description, tags, and its version count.",
)
VersionOut = derive(
    models.DatasetVersion,
    "DatasetVersion",
    exclude=("dataset_id",),
    extra={"dataset": (str, ...), "releases": (list[str], [])},
    doc="One immutable version of a dataset: the Delta versions it pins, row count and schema.",
)
RunOut = derive(models.Run, "Run")


class PinnedTable(BaseModel):
    """A Delta table of a release's dataset version, and the Delta version of it the release pins."""

    tier: str
    table: str = Field(description="The table's path on the tier.")
    delta_version: int


class GateResult(BaseModel):
    """One condition of the publish gate: what was measured, against which limit."""

    condition: str = Field(description="e.g. min_samples, max_drop_rate_per_source[SOURCE], required_rule_set[NAME]")
    measured: int | float | str
    limit: int | float | str
    passed: bool


class GateOverride(BaseModel):
    """Failed conditions published over: who (the authenticated caller), when and why."""

    by: str
    at: UtcDatetime
    reason: str


class GateRecord(BaseModel):
    """What a release records of its publish gate (on a draft: results not yet enforced)."""

    conditions: GateConfig
    results: list[GateResult]
    override: GateOverride | None = None


ReleaseOut = derive(
    models.Release,
    "Release",
    exclude=("manifest",),
    extra={
        "gate": (GateRecord | None, Field(default=None, description="The publish gate: conditions, results, override")),
        "ref": (str, ...),
        "dataset": (str, ...),
        "dataset_version": (int, ...),
        "row_count": (int, 0),
        "tables": (
            dict[str, PinnedTable],
            Field(default_factory=dict, description="data, lineage, quarantine (and signatures): what is pinned."),
        ),
    },
    doc="A release NAME@TAG pinned to one dataset version (its manifest is a sub-resource).",
)
ReplicaOut = derive(
    models.Replica,
    "Replica",
    exclude=("release_id",),
    extra={"release": (str, ...), "file_count": (int, 0)},
    doc="A copy of a release's data on one tier: table path, state, when verified, files proven so far.",
)
ReleaseReadOut = derive(
    models.ReleaseRead,
    "ReleaseRead",
    exclude=("release_id",),
    extra={"release": (str, ...)},
    doc="A usage record: one rank of a training job opened the release (who recorded it, from where, when).",
)
PinOut = derive(
    models.ReleasePin,
    "Pin",
    exclude=("release_id",),
    extra={"release": (str, ...), "active": (bool, Field(default=False, description="Not expired yet."))},
    doc="A pin: keeps a release on the hot tier until a time (who pinned it, why).",
)
TokenOut = derive(models.ApiToken, "Token", exclude=("token_hash",), doc="An API token (the secret is never shown).")
TokenCreated = create_model(
    "TokenCreated", __base__=TokenOut, token=(str, Field(description="The bearer token. Shown once; keep it."))
)


class Page(BaseModel, Generic[T]):
    """One page of a list; ask for the next with ``offset = offset + limit`` while ``offset < total``."""

    items: list[T]
    total: int
    limit: int
    offset: int


# -- request bodies ---------------------------------------------------------------------------
Text = Annotated[str, Field(pattern=names.NO_NUL_PATTERN)]
Name = Annotated[str, Field(pattern=names.NAME_PATTERN, max_length=names.NAME_MAX)]

M = TypeVar("M", bound=BaseModel)


def parse_input(model: type[M], body: M | dict[str, Any]) -> M:
    """A request body as ``model``; a body the model refuses is :class:`~lineage.errors.Invalid` (400).
    Only input models go through here: an output model refusing a row is a bug (500)."""
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise Invalid(str(exc)) from None


class DatasetUpdate(BaseModel):
    """Metadata users edit; fields left out are unchanged."""

    model_config = ConfigDict(extra="forbid")
    description: Text | None = Field(default=None, max_length=100_000)
    owner: Text | None = Field(default=None, max_length=200)
    license: Text | None = Field(default=None, max_length=200)
    tags: list[Annotated[Text, Field(max_length=200)]] | None = Field(default=None, max_length=100)


OverrideReason = Annotated[
    Text | None,
    Field(
        default=None,
        min_length=1,
        max_length=2000,
        description="Publish although gate conditions failed: why (recorded with who and when).",
    ),
]


class ReleaseCreate(BaseModel):
    """Pin a dataset version as NAME@TAG. ``draft`` records it without publishing."""

    model_config = ConfigDict(extra="forbid")
    name: Name
    tag: Name
    dataset: Name | None = Field(default=None, description="Dataset to release (default: name).")
    version: int | None = Field(default=None, ge=1, le=2**31 - 1, description="Dataset version (default: latest).")
    draft: bool = False
    gate: GateConfig | None = Field(
        default=None,
        description="Conditions to publish (a draft records their results; they apply when it is published).",
    )
    override_reason: OverrideReason = None


class ReleasePublish(BaseModel):
    """Publish a draft, through ``gate`` (default: the conditions recorded with the draft)."""

    model_config = ConfigDict(extra="forbid")
    gate: GateConfig | None = None
    override_reason: OverrideReason = None


class Deprecation(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: Text = Field(default="", max_length=2000)


class PinCreate(BaseModel):
    """Keep the release hot until ``until`` (a time in the future; without a zone: UTC)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"x-constraints": ["now < until"]})
    until: UtcDatetime
    reason: Text = Field(default="", max_length=2000, description="Why (e.g. the training job).")

    @field_validator("until")
    @classmethod
    def _in_range(cls, until: datetime) -> datetime:
        try:
            return until.astimezone(UTC)
        except OverflowError:  # e.g. 9999-12-31T23:59-14:00: after year 9999 in UTC
            raise ValueError("until is out of range") from None


class TokenCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Text = Field(min_length=1, max_length=200)
    role: Literal["reader", "writer", "admin"] = "reader"


class ReadCreate(BaseModel):
    """One rank of a training job opened a release. Across fields, ``rank`` < ``world_size`` (listed in
    ``x-constraints``, as JSON Schema has no keyword for it); a body that breaks it is refused with 422."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"x-constraints": ["rank < world_size"]})
    job: Text = Field(min_length=1, max_length=300, description="The training job (e.g. its run name).")
    world_size: int = Field(ge=1, le=2**31 - 1, description="How many ranks the job has.")
    rank: int = Field(ge=0, le=2**31 - 1, description="This rank: 0 .. world_size - 1 (less than world_size).")
    host: Text = Field(default="", max_length=200, description="The host the rank runs on.")

    @model_validator(mode="after")
    def _rank_below_world_size(self) -> ReadCreate:
        usage.check_rank(self.rank, self.world_size)
        return self


# -- the manifest ------------------------------------------------------------------------------
class ManifestTable(BaseModel):
    """A Delta table of the released version, and the Delta version pinned."""

    table: str
    delta_version: int


class ManifestFile(BaseModel):
    """One data file, its size and checksum as read back from storage at publish time."""

    path: str
    size: int
    rows: int
    xxh3_128: str


class ManifestQuality(BaseModel):
    """Per-step verdict counts and quarantine counts of the run that produced the version."""

    steps: list[dict[str, Any]] = []
    quarantine: dict[str, Any] = {}


class RuleCount(BaseModel):
    operator: str
    rule: str
    dropped: int
    modified: int
    failed: int


class LengthBin(BaseModel):
    """Texts whose length (characters) is in [from, to); ``to`` None: no upper bound."""

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)
    from_: int = Field(alias="from")
    to: int | None
    count: int


class SourceDrops(BaseModel):
    source: str
    kept: int
    dropped: int
    drop_rate: float


class QcReport(BaseModel):
    """The QC report computed at publish time (what the publish gate measures)."""

    samples: int
    rules: list[RuleCount]
    length_histogram: list[LengthBin]
    scripts: dict[str, float] = Field(description="Share of letters by script: han, latin, other.")
    sources: list[SourceDrops]
    exact_duplicate_rate: float
    operators: list[str]
    rule_sets: list[str]


class Manifest(BaseModel):
    """What a release pins: the tier, the Delta versions of its tables, the files with checksums, row
    count, bytes, schema, quality counts and the QC report. Keys a newer server adds are kept."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, serialize_by_alias=True)
    format: int
    dataset: str
    dataset_version: int
    tier: str
    data: ManifestTable
    lineage: ManifestTable
    quarantine: ManifestTable
    signatures: ManifestTable | None = None
    row_count: int
    bytes: int
    schema_: dict[str, Any] = Field(alias="schema", description="The data table's Arrow schema (fields).")
    files: list[ManifestFile]
    quality: ManifestQuality = ManifestQuality()
    run_id: str | None = None
    qc: QcReport | None = Field(default=None, description="None in releases published before QC reports.")

    def as_dict(self) -> dict[str, Any]:
        """The manifest as stored (JSON keys), e.g. for :func:`lineage.releases.content_digest`."""
        return self.model_dump(mode="json", by_alias=True)


class ReleaseResult(BaseModel):
    release: ReleaseOut  # type: ignore[valid-type]
    changed: bool = Field(description="False when the request was a no-op (same content already published).")


# -- computed answers -------------------------------------------------------------------------
class SchemaChange(BaseModel):
    field: str
    change: Literal["added", "removed", "type_changed", "nullability_changed"]
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None


class SourceDiff(BaseModel):
    source: str = Field(description="The samples' source dataset.")
    added: int
    removed: int
    changed: int = Field(description="Same sample id, different content hash.")


class VersionRef(BaseModel):
    ref: str
    dataset: str
    version: int
    release: str | None = None


class Diff(BaseModel):
    """What changed from ``base`` to ``target``: samples per source, and the schema."""

    base: VersionRef
    target: VersionRef
    added: int
    removed: int
    changed: int
    sources: list[SourceDiff]
    schema_changes: list[SchemaChange]


class Quality(BaseModel):
    """What the release's QC report shows: the manifest's per-step verdict counts and quarantine counts,
    its QC report and its publish gate."""

    release: str
    steps: list[dict[str, Any]]
    quarantine: dict[str, Any]
    report: QcReport | None = Field(default=None, description="None in releases published before QC reports.")
    gate: GateRecord | None = None


# -- what the in-process operations on tier data answer ------------------------------------------
class RunResult(BaseModel):
    """A committed run: the run (with its per-operator ``counts``) and the dataset version it made."""

    run: RunOut  # type: ignore[valid-type]
    dataset: str
    version: int
    row_count: int


class ExportFile(BaseModel):
    path: str = Field(description="Relative to the export's folder.")
    bytes: int
    xxh3_128: str


class ExportShard(BaseModel):
    index: int
    files: list[ExportFile] = Field(description="Megatron: .bin and .idx; MDS: the .mds file.")
    lineage: ExportFile = Field(description="The shard's sequence-lineage table (Parquet).")
    first_sequence: int = Field(description="The global index of the shard's first sequence.")
    sequences: int
    tokens: int
    tokens_by_source: dict[str, int]


class ExportResult(BaseModel):
    """What ``export_release`` wrote. For megatron and mds, the shards as ``manifest.json`` lists them."""

    release: str
    path: str = Field(description="The file written (jsonl, parquet) or the shard folder (megatron, mds).")
    rows: int = Field(description="Samples exported.")
    format: str = "jsonl"
    tier: str | None = Field(default=None, description="The shard folder's tier (megatron, mds).")
    export_id: str | None = Field(default=None, description="xxh3-128 of (release, tokenizer digest, options, seed).")
    tokenizer_digest: str | None = None
    sequences: int | None = None
    tokens: int | None = None
    tokens_by_source: dict[str, int] = {}
    shards: list[ExportShard] = []
    resumed_shards: int = Field(default=0, description="Shards a killed run had finished, kept as they were.")


ExportOut = derive(
    models.Export,
    "Export",
    exclude=("release_id",),
    extra={"release": (str, ...)},
    doc="A release tokenized into training shards: where, from what (tokenizer digest, options), and its manifest.",
)


class SequencePiece(BaseModel):
    """One sample's tokens inside one sequence: ``[seq_start, seq_end)`` of the sequence are
    ``[doc_start, doc_end)`` of the sample's tokens (its text's tokens followed by EOD)."""

    sample_id: str
    source_dataset: str
    seq_start: int
    seq_end: int
    doc_start: int
    doc_end: int


class ExportSequence(BaseModel):
    """Global sequence ``sequence`` of an export: its shard, its index there, and the samples in it."""

    export_id: str
    sequence: int
    shard: int
    shard_sequence: int = Field(description="Its index in the shard (what a shard reader returns).")
    files: list[ExportFile] = Field(description="The shard's files.")
    samples: list[SequencePiece]


class SampleSequence(BaseModel):
    sequence: int
    shard: int
    shard_sequence: int
    seq_start: int
    seq_end: int
    doc_start: int
    doc_end: int


class SampleSequences(BaseModel):
    """The sequences of an export that hold some of a sample's tokens, in order."""

    export_id: str
    sample_id: str
    source_dataset: str
    sequences: list[SampleSequence]


class StepSample(BaseModel):
    """One training sample of the step: its index in the reader's order and the sample pieces it is made of."""

    sample: int
    pieces: list[SequencePiece] = Field(description="seq_* count within this training sample's tokens.")


class TrainingStep(BaseModel):
    """The samples of global step ``step`` of a training job that read the export, in the job's order."""

    export_id: str
    step: int
    order: Literal["megatron-gpt"] = "megatron-gpt"
    seed: int
    sequence_length: int
    global_batch_size: int
    train_samples: int
    samples: list[StepSample]


class ExportVerification(BaseModel):
    export_id: str
    tier: str | None
    path: str
    files: int = Field(description="Files the manifest lists (shards and sequence-lineage tables).")
    problems: list[str] = Field(description="Empty when every file reads back as recorded.")


class DedupeResult(BaseModel):
    """What ``dedupe_files`` wrote: the kept records of each input, in its own format, and the report."""

    inputs: int = Field(description="Input files.")
    records: int = Field(description="Records read from them.")
    kept: int
    dropped: int = Field(description="Near-duplicates removed (one report row each).")
    quarantined: int = Field(description="Records that did not parse (in the quarantine file beside the report).")
    outputs: list[str] = Field(description="One output file per input.")
    report: str = Field(description="Parquet: id, cluster_id, kept_id, jaccard of every dropped record.")
    settings: str = Field(description="The near-duplicate settings used, the LSH layout resolved, on one line.")
    params: dict[str, Any] = Field(description="The same as the ``minhash_dedupe`` operator's parameters.")


class ReplicaResult(BaseModel):
    """What a tier copy, move or verify did to the release's replica on ``tier``."""

    release: str
    tier: str
    table_path: str
    state: str
    copied: int = 0
    skipped: int = Field(default=0, description="Files already verified there (a resumed copy).")
    bytes_copied: int = 0
    seconds: float = 0.0
    removed_from: str | None = Field(default=None, description="A move: the tier whose files it removed.")
    deleted_files: int = 0
    problems: dict[str, str] | None = Field(default=None, description="A verify: file -> what is wrong with it.")


class GcResult(BaseModel):
    """What ``gc`` found (and, unless a dry run, deleted)."""

    dry_run: bool
    abandoned_runs: list[str]
    deleted_files: list[str] = Field(description="Deleted, or with a dry run: would be deleted.")
    kept_files: int
    retention_set: list[str] = Field(description="Tables given their retention properties back.")


class PlannedMove(BaseModel):
    """A move the placement rules want: pinned releases stay hot, idle or deprecated ones go cold."""

    release: str
    from_tier: str
    to_tier: str
    reason: str


class AppliedMove(BaseModel):
    move: PlannedMove
    result: ReplicaResult


class SampleSource(BaseModel):
    dataset: str | None = None
    version: int | None = None
    uri: str | None = None
    path: str | None = None
    row: int | None = None
    offset: int | None = None


class LineageRecord(BaseModel):
    step: int
    operator: str
    operator_version: str
    verdict: str
    reason: str | None = None
    related_ids: list[str] | None = None
    detail: dict[str, Any] | None = None
    run_id: str


class SampleVerdict(BaseModel):
    """What one step of a run decided about one sample (a row of the version's lineage table)."""

    sample_id: str
    step: int = Field(description="The operator's position in the pipeline (0: convert).")
    operator: str
    verdict: Literal["kept", "dropped", "modified"]
    reason: str | None = None


class DuplicateInfo(BaseModel):
    method: str | None = None
    cluster_id: str | None = None
    kept_id: str | None = None
    jaccard: float | None = None
    cluster_size: int | None = None


class VersionLineage(BaseModel):
    dataset: str
    version: int
    run_id: str
    in_output: bool
    releases: list[str] = Field(description="Releases of this version (so: containing the sample if in_output).")
    records: list[LineageRecord]
    duplicate: DuplicateInfo | None = None


class SampleLineage(BaseModel):
    """A sample's whole history: source file and row, every operator's verdict, its duplicate cluster."""

    sample_id: str
    found: bool
    source: SampleSource | None = None
    duplicate: DuplicateInfo | None = Field(default=None, description="Its duplicate cluster and the kept sample.")
    versions: list[VersionLineage] = []
    sample: dict[str, Any] | None = Field(default=None, description="The sample row (text only if asked for).")


class WhyNot(BaseModel):
    """Why a sample is (not) in a release."""

    sample_id: str
    release: str
    in_release: bool
    cause: Literal["in_release", "dropped", "not_an_input", "unknown_sample"]
    explanation: str
    step: int | None = None
    operator: str | None = None
    reason: str | None = None
    duplicate: DuplicateInfo | None = None
    kept_in_release: bool | None = Field(default=None, description="For a duplicate: is the kept sample in it?")
    found_in: list[VersionRef] = Field(default=[], description="Dataset versions whose output does hold the sample.")


class SourceRelease(BaseModel):
    release: str
    state: str
    dataset: str
    version: int
    samples: int


class SourceReleases(BaseModel):
    """Which releases contain samples of a source (a file URI or a dataset version), and how many."""

    source: str
    releases: list[SourceRelease]


class EventAccepted(BaseModel):
    run_id: str
    event_type: str
    job: str
    inputs: int
    outputs: int


class GraphEdge(BaseModel):
    origin: str
    destination: str


class GraphNode(BaseModel):
    id: str
    type: Literal["DATASET", "JOB"]
    data: dict[str, Any]
    inEdges: list[GraphEdge]  # noqa: N815 (Marquez's field names)
    outEdges: list[GraphEdge]  # noqa: N815


class Graph(BaseModel):
    """Marquez's lineage graph shape."""

    graph: list[GraphNode]


class Health(BaseModel):
    status: str
    version: str
    database: str
    auth_required: bool = Field(
        description="Whether this caller must send a token: false only in single-user mode (the setting on, "
        "a loopback peer, no token created yet)."
    )


_NODE_ID = re.compile(r"^(dataset|job):(.+)$")
