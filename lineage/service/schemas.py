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
from lineage.service.files import DedupeResult as DedupeResult  # the file operations' own
from lineage.service.model_base import Model
from storage import names
from storage.errors import validation_problems

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
        model = create_model(name, __config__=ConfigDict(from_attributes=True, defer_build=True), **fields)
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
PipelineRunOut = derive(
    models.PipelineRun,
    "PipelineRun",
    doc="A run of a pipeline of stages: per stage, whether it ran or was skipped (and why), and its version.",
)


class StagePlan(BaseModel):
    """What a run of a pipeline of stages does with one stage, and why (``lineage run --plan``)."""

    stage: str
    action: Literal["run", "skip"]
    reason: str
    changed: list[str] = Field(
        default_factory=list,
        description="The cache key's parts that differ from the stage's last succeeded run: "
        "inputs, operators, params, code_version, mixture, output.",
    )
    last_run_id: str | None = None
    dataset: str
    version: int | None = Field(default=None, description="The version a skipped stage reuses.")
    cache_key: str | None = Field(default=None, description="None when an upstream stage runs first.")


class PipelinePlan(BaseModel):
    pipeline: str
    stages: list[StagePlan]


class PinnedTable(Model):
    """A Delta table of a release's dataset version, and the Delta version of it the release pins."""

    tier: str
    table: str = Field(description="The table's path on the tier.")
    delta_version: int


class GateResult(Model):
    """One condition of the publish gate: what was measured, against which limit."""

    condition: str = Field(description="e.g. min_samples, max_drop_rate_per_source[SOURCE], required_rule_set[NAME]")
    measured: int | float | str
    limit: int | float | str
    passed: bool


class GateOverride(Model):
    """Failed conditions published over: who (the authenticated caller), when and why."""

    by: str
    at: UtcDatetime
    reason: str


class GateRecord(Model):
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


class Page(Model, Generic[T]):
    """One page of a list; ask for the next with ``offset = offset + limit`` while ``offset < total``."""

    items: list[T]
    total: int
    limit: int
    offset: int


# -- request bodies ---------------------------------------------------------------------------
Text = Annotated[str, Field(pattern=names.NO_NUL_PATTERN)]
Name = Annotated[str, Field(pattern=names.NAME_PATTERN, max_length=names.NAME_MAX)]

M = TypeVar("M", bound=BaseModel)


# the values a ``state`` filter takes (the catalog's columns'), for the HTTP API's query parameters
ReleaseState, ReplicaState = models.ReleaseState, models.ReplicaState
TakedownState, EvalSetState = models.TakedownState, models.EvalSetState


def checked_state(state: str | None, vocabulary: Any) -> str | None:
    """A ``state`` filter's value; one the column never holds is :class:`~lineage.errors.Invalid` (it would
    match nothing, and a misspelt state answered "none" where there were some)."""
    allowed = typing.get_args(vocabulary)
    if state is not None and state not in allowed:
        raise Invalid(f"state must be one of {', '.join(allowed)}, got {state!r}")
    return state


def parse_input(model: type[M], body: M | dict[str, Any]) -> M:
    """A request body as ``model``; a body the model refuses is :class:`~lineage.errors.Invalid` (400).
    Only input models go through here: an output model refusing a row is a bug (500)."""
    try:
        return model.model_validate(body)
    except ValidationError as exc:  # one line, as every refusal is (pydantic's own text runs to several)
        raise Invalid(f"{model.__name__}: {validation_problems(exc)}") from None


class DatasetUpdate(Model):
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


class ReleaseCreate(Model):
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


class ReleasePublish(Model):
    """Publish a draft, through ``gate`` (default: the conditions recorded with the draft)."""

    model_config = ConfigDict(extra="forbid")
    gate: GateConfig | None = None
    override_reason: OverrideReason = None


class Deprecation(Model):
    model_config = ConfigDict(extra="forbid")
    reason: Text = Field(default="", max_length=2000)


class PinCreate(Model):
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


class TokenCreate(Model):
    model_config = ConfigDict(extra="forbid")
    name: Text = Field(min_length=1, max_length=200)
    role: Literal["reader", "writer", "admin"] = "reader"


class ReadCreate(Model):
    """One rank of a training job opened a release. Across fields, ``rank`` < ``world_size`` (listed in
    ``x-constraints``, as JSON Schema has no keyword for it); a body that breaks it is refused with 422."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"x-constraints": ["rank < world_size"]})
    job: Text = Field(min_length=1, max_length=300, description="The training job (e.g. its run name).")
    world_size: int = Field(ge=1, le=2**31 - 1, description="How many ranks the job has.")
    rank: int = Field(ge=0, le=2**31 - 1, description="This rank: 0 .. world_size - 1 (less than world_size).")
    host: Text = Field(default="", max_length=200, description="The host the rank runs on.")
    override_reason: Text | None = Field(
        default=None, min_length=1, max_length=2000, description="Why a withdrawn release is read anyway (recorded)."
    )

    @model_validator(mode="after")
    def _rank_below_world_size(self) -> ReadCreate:
        usage.check_rank(self.rank, self.world_size)
        return self


# -- the manifest ------------------------------------------------------------------------------
class ManifestTable(Model):
    """A Delta table of the released version, and the Delta version pinned."""

    table: str
    delta_version: int


class ManifestFile(Model):
    """One data file, its size and checksum as read back from storage at publish time."""

    path: str
    size: int
    rows: int
    xxh3_128: str


class ManifestQuality(Model):
    """Per-step verdict counts and quarantine counts of the run that produced the version."""

    steps: list[dict[str, Any]] = []
    quarantine: dict[str, Any] = {}


class RuleCount(Model):
    operator: str
    rule: str
    dropped: int
    modified: int
    failed: int


class LengthBin(Model):
    """Texts whose length (characters) is in [from, to); ``to`` None: no upper bound."""

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)
    from_: int = Field(alias="from")
    to: int | None
    count: int


class SourceDrops(Model):
    source: str
    kept: int
    dropped: int
    drop_rate: float


class MixtureRequested(Model):
    """What the pipeline asked of a source: its weight, share of the mixture, target (in the unit), caps."""

    weight: float
    share: float
    target: float
    max_share: float | None = None
    max_epochs: float | None = None


class MixtureAchieved(Model):
    """What the run achieved for a source, in every unit (samples, bytes, words, tokens when configured):
    available (after the operators, or before them with apply = "before"), selected (stored once each),
    served (× repeats), the share of everything served, and epochs (served / available in the unit)."""

    available: dict[str, float]
    selected: dict[str, float]
    served: dict[str, float]
    share: dict[str, float]
    epochs: float


class RepeatRuleOut(Model):
    """A source's repeat rule: ``passes`` copies, one more for samples at or before (cut_key, cut_id)
    in the order by xxh3-64(seed, sample_id) (its top 53 bits)."""

    passes: int
    cut_key: int | None = None
    cut_id: str | None = None


class MixtureSource(Model):
    members: list[str] = Field(description="The source datasets (a sample's source_dataset) of this input.")
    requested: MixtureRequested
    achieved: MixtureAchieved
    rule: RepeatRuleOut


class Mixture(Model):
    """A release's mixture: the unit, the total asked for (None: everything at these shares), the seed,
    the tokenizer of the tokens unit, and per input source what was requested and achieved."""

    unit: str
    total: float | None = None
    seed: int
    tokenizer: dict[str, str] | None = None
    sources: dict[str, MixtureSource]
    served: dict[str, float]


class QcMixtureSource(Model):
    source: str
    weight: float
    requested_share: float
    target: float
    available: float
    selected: float
    served: float
    achieved_share: float
    epochs: float
    shares: dict[str, float] = Field(description="The achieved share in every unit.")


class QcMixture(Model):
    """The QC report's mixture: requested against achieved per source, in the mixture's unit."""

    unit: str
    total: float | None = None
    seed: int
    sources: list[QcMixtureSource]


class QcReport(Model):
    """The QC report computed at publish time (what the publish gate measures)."""

    samples: int
    rules: list[RuleCount]
    length_histogram: list[LengthBin]
    scripts: dict[str, float] = Field(description="Share of letters by script: han, latin, other.")
    script_letters: dict[str, int] | None = Field(
        default=None, description="The letters counted by script (reports since issue #22; None before)."
    )
    sources: list[SourceDrops]
    exact_duplicate_rate: float
    operators: list[str]
    rule_sets: list[str]
    mixture: QcMixture | None = Field(default=None, description="None for a release without a mixture.")


class EvalSetContamination(Model):
    """One eval set version against a release: items contaminated (with the samples holding each, up to
    100 listed), the samples involved, and the share of the set."""

    items: int
    contaminated_items: int
    share: float
    samples: int
    item_samples: dict[str, list[str]] = Field(default_factory=dict)


class ContaminationReport(Model):
    """A release's texts checked for the n-grams of eval items (exact; see operators/contamination)."""

    checked_samples: int
    threshold: float = 0.0
    coverage: str = "item"
    ngrams: dict[str, int] = Field(default_factory=dict)
    evalsets: dict[str, EvalSetContamination] = Field(default_factory=dict)
    checked_at: UtcDatetime | None = None


class Manifest(Model):
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
    contamination: ContaminationReport | None = Field(
        default=None, description="The release checked against eval sets at publish (None before issue #19)."
    )
    mixture: Mixture | None = Field(default=None, description="None for a release without a mixture (issue #20).")

    def as_dict(self) -> dict[str, Any]:
        """The manifest as stored (JSON keys), e.g. for :func:`lineage.releases.content_digest`."""
        out = self.model_dump(mode="json", by_alias=True)
        if out.get("mixture") is None:  # stored only with a mixture
            out.pop("mixture", None)
        return out


class ReleaseResult(Model):
    release: ReleaseOut  # type: ignore[valid-type]
    changed: bool = Field(description="False when the request was a no-op (same content already published).")


# -- computed answers -------------------------------------------------------------------------
class SchemaChange(Model):
    field: str
    change: Literal["added", "removed", "type_changed", "nullability_changed"]
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None


class SourceDiff(Model):
    source: str = Field(description="The samples' source dataset.")
    added: int
    removed: int
    changed: int = Field(description="Same sample id, different content hash.")


class VersionRef(Model):
    ref: str
    dataset: str
    version: int
    release: str | None = None


class MixtureSourceDiff(Model):
    """One mixture source in two versions (None where it is not a source), each in its own unit."""

    source: str
    base_weight: float | None = None
    target_weight: float | None = None
    base_share: float | None = Field(default=None, description="Achieved share of what base serves.")
    target_share: float | None = None
    base_served: float | None = None
    target_served: float | None = None
    base_epochs: float | None = None
    target_epochs: float | None = None


class MixtureDiff(Model):
    """How the mixture changed: units (None: that version has no mixture), seeds and per source."""

    base_unit: str | None = None
    target_unit: str | None = None
    base_seed: int | None = None
    target_seed: int | None = None
    sources: list[MixtureSourceDiff]


class Diff(Model):
    """What changed from ``base`` to ``target``: samples per source, the schema, and the mixture."""

    base: VersionRef
    target: VersionRef
    added: int
    removed: int
    changed: int
    sources: list[SourceDiff]
    schema_changes: list[SchemaChange]
    mixture: MixtureDiff | None = Field(default=None, description="None when neither version has a mixture.")


class Quality(Model):
    """What the release's QC report shows: the manifest's per-step verdict counts and quarantine counts,
    its QC report and its publish gate."""

    release: str
    steps: list[dict[str, Any]]
    quarantine: dict[str, Any]
    report: QcReport | None = Field(default=None, description="None in releases published before QC reports.")
    gate: GateRecord | None = None


# -- what the in-process operations on tier data answer ------------------------------------------
class RunResult(Model):
    """A committed run: the run (with its per-operator ``counts``) and the dataset version it made."""

    run: RunOut  # type: ignore[valid-type]
    dataset: str
    version: int
    row_count: int
    pipeline_run: PipelineRunOut | None = None  # type: ignore[valid-type]  # a pipeline of stages: the last stage's


class ExportFile(Model):
    path: str = Field(description="Relative to the export's folder.")
    bytes: int
    xxh3_128: str


class ExportShard(Model):
    index: int
    files: list[ExportFile] = Field(description="Megatron: .bin and .idx; MDS: the .mds file.")
    lineage: ExportFile = Field(description="The shard's sequence-lineage table (Parquet).")
    first_sequence: int = Field(description="The global index of the shard's first sequence.")
    sequences: int
    tokens: int
    tokens_by_source: dict[str, int]


class ExportResult(Model):
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


class SequencePiece(Model):
    """One sample's tokens inside one sequence: ``[seq_start, seq_end)`` of the sequence are
    ``[doc_start, doc_end)`` of the sample's tokens (its text's tokens followed by EOD)."""

    sample_id: str
    source_dataset: str
    seq_start: int
    seq_end: int
    doc_start: int
    doc_end: int


class ExportSequence(Model):
    """Global sequence ``sequence`` of an export: its shard, its index there, and the samples in it."""

    export_id: str
    sequence: int
    shard: int
    shard_sequence: int = Field(description="Its index in the shard (what a shard reader returns).")
    files: list[ExportFile] = Field(description="The shard's files.")
    samples: list[SequencePiece]


class SampleSequence(Model):
    sequence: int
    shard: int
    shard_sequence: int
    seq_start: int
    seq_end: int
    doc_start: int
    doc_end: int


class SampleSequences(Model):
    """The sequences of an export that hold some of a sample's tokens, in order."""

    export_id: str
    sample_id: str
    source_dataset: str
    sequences: list[SampleSequence]


class StepSample(Model):
    """One training sample of the step: its index in the reader's order and the sample pieces it is made of."""

    sample: int
    pieces: list[SequencePiece] = Field(description="seq_* count within this training sample's tokens.")


class TrainingStep(Model):
    """The samples of global step ``step`` of a training job that read the export, in the job's order."""

    export_id: str
    step: int
    order: Literal["megatron-gpt"] = "megatron-gpt"
    seed: int
    sequence_length: int
    global_batch_size: int
    train_samples: int
    samples: list[StepSample]


class ReaderJob(Model):
    """How a training job read an export with our reader: each rank ``r`` iterated
    ``ReleaseDataLoader(ReleaseDataset(ref, export=ID, rank=r, world_size=..., seed=..., epoch=...,
    remainder=..., shuffle=..., window_blocks=..., block_sequences=...), batch_size=..., num_workers=...,
    drop_last=...)`` (or ``open_release(ref, export=ID, ...)`` in batches, ``num_workers=0``)."""

    seed: int = Field(ge=0)
    world_size: int = Field(ge=1)
    batch_size: int = Field(ge=1, description="Per rank: the DataLoader's batch size.")
    epoch: int = Field(0, ge=0)
    num_workers: int = Field(0, ge=0, le=1024)
    drop_last: bool = False
    shuffle: bool = True
    remainder: Literal["drop", "pad"] = "drop"
    window_blocks: int = Field(4, ge=1)
    block_sequences: int = Field(256, ge=1)


class RankBatch(Model):
    """One rank's batch of the step: the export's sequences in batch order, and the samples in each."""

    rank: int
    sequences: list[ExportSequenceSamples]


class ExportSequenceSamples(Model):
    sequence: int = Field(description="The global sequence index (what the reader yields as ``sequence``).")
    samples: list[SequencePiece]


class ReaderStep(Model):
    """The samples of global step ``step`` (of epoch ``job.epoch``) of a job that read the export with our
    reader: batch ``step`` of every rank."""

    export_id: str
    step: int
    order: Literal["lineage-reader"] = "lineage-reader"
    job: ReaderJob
    ranks: list[RankBatch]


class ExportVerification(Model):
    export_id: str
    tier: str | None
    path: str
    files: int = Field(description="Files the manifest lists (shards and sequence-lineage tables).")
    problems: list[str] = Field(description="Empty when every file reads back as recorded.")


class ReplicaResult(Model):
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


class GcResult(Model):
    """What ``gc`` found (and, unless a dry run, deleted)."""

    dry_run: bool
    abandoned_runs: list[str]
    deleted_files: list[str] = Field(description="Deleted, or with a dry run: would be deleted.")
    kept_files: int
    retention_set: list[str] = Field(description="Tables given their retention properties back.")


class PlannedMove(Model):
    """A move the placement rules want: pinned releases stay hot, idle or deprecated ones go cold."""

    release: str
    from_tier: str
    to_tier: str
    reason: str


class AppliedMove(Model):
    move: PlannedMove
    result: ReplicaResult


class SampleSource(Model):
    dataset: str | None = None
    version: int | None = None
    uri: str | None = None
    path: str | None = None
    row: int | None = None
    offset: int | None = None


class LineageRecord(Model):
    step: int
    operator: str
    operator_version: str
    verdict: str
    reason: str | None = None
    related_ids: list[str] | None = None
    detail: dict[str, Any] | None = None
    run_id: str


class SampleVerdict(Model):
    """What one step of a run decided about one sample (a row of the version's lineage table)."""

    sample_id: str
    step: int = Field(description="The operator's position in the pipeline (0: convert).")
    operator: str
    verdict: Literal["kept", "dropped", "modified"]
    reason: str | None = None


class DuplicateInfo(Model):
    method: str | None = None
    cluster_id: str | None = None
    kept_id: str | None = None
    jaccard: float | None = None
    cluster_size: int | None = None


class VersionLineage(Model):
    dataset: str
    version: int
    run_id: str
    in_output: bool
    releases: list[str] = Field(description="Releases of this version (so: containing the sample if in_output).")
    records: list[LineageRecord]
    duplicate: DuplicateInfo | None = None
    purged_by: int | None = Field(
        default=None,
        description="The takedown request whose purge deleted this version's data: its lineage is kept, its "
        "samples' rows (and so in_output) are not known any more.",
    )


class SampleLineage(Model):
    """A sample's whole history: source file and row, every operator's verdict, its duplicate cluster."""

    sample_id: str
    found: bool
    source: SampleSource | None = None
    duplicate: DuplicateInfo | None = Field(default=None, description="Its duplicate cluster and the kept sample.")
    versions: list[VersionLineage] = []
    sample: dict[str, Any] | None = Field(default=None, description="The sample row (text only if asked for).")


class WhyNot(Model):
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


class SourceRelease(Model):
    release: str
    state: str
    dataset: str
    version: int
    samples: int


class SourceReleases(Model):
    """Which releases contain samples of a source (a file URI or a dataset version), and how many."""

    source: str
    releases: list[SourceRelease]


class EventAccepted(Model):
    run_id: str
    event_type: str
    job: str
    inputs: int
    outputs: int


class GraphEdge(Model):
    origin: str
    destination: str


class GraphNode(Model):
    id: str
    type: Literal["DATASET", "JOB", "VERSION", "RUN", "RELEASE", "EXPORT", "MODEL", "EVALSET", "EVALSET_VERSION"]
    data: dict[str, Any]
    inEdges: list[GraphEdge]  # noqa: N815 (Marquez's field names)
    outEdges: list[GraphEdge]  # noqa: N815
    upstream: int = Field(0, description="Nodes with an edge into this one in the whole graph (as of the date asked).")
    downstream: int = Field(0, description="Nodes this one has an edge to in the whole graph (as of the date asked).")


class Graph(Model):
    """Marquez's lineage graph shape."""

    graph: list[GraphNode]


class SearchHit(Model):
    kind: Literal["dataset", "release", "run", "sample", "source", "evalset"]
    id: str = Field(
        description="What to ask for next: a dataset or eval set name, NAME@TAG, a run or sample id, a "
        "graph node id (dataset:NAMESPACE:NAME) for a source."
    )
    label: str
    detail: str = ""


class SearchGroup(Model):
    kind: str
    total: int = Field(description="Hits of this kind in all (``hits`` holds at most the limit asked for).")
    hits: list[SearchHit]


class SearchResults(Model):
    """What one search text found, grouped by kind (kinds with no hit are left out)."""

    query: str
    groups: list[SearchGroup]


class Health(Model):
    status: str
    version: str
    database: str
    auth_required: bool = Field(
        description="Whether this caller must send a token: false only in single-user mode (the setting on, "
        "a loopback peer, no token created yet)."
    )
    namespace: str = Field(
        "lineage-ledger", description="The OpenLineage namespace of this catalog's datasets and jobs in the graph."
    )


_NODE_ID = re.compile(r"^(dataset|job):(.+)$")


# -- takedown --------------------------------------------------------------------------------------
TAKEDOWN_KINDS = ("copyright", "privacy", "opt_out", "quality", "other")
SampleIdText = Annotated[str, Field(pattern=names.SAMPLE_ID_PATTERN)]


class SourceSelector(Model):
    """Samples read from one source dataset: all of them, or those whose ``source_path`` matches a glob
    (``*`` and ``?`` stay within a folder, ``**`` crosses folders) and/or that were read from one file URI
    (a trailing ``/``: every file under that folder)."""

    model_config = ConfigDict(extra="forbid")
    dataset: Annotated[str, Field(pattern=names.NAME_PATTERN, max_length=names.NAME_MAX)]
    path: Text | None = Field(default=None, min_length=1, max_length=4096, description="A glob on source_path.")
    uri: Text | None = Field(default=None, min_length=1, max_length=4096, description="A source file's URI.")


_PREDICATE_FIELD = r"^(meta\.[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}|source_dataset|source_uri|source_path)$"
PredicateField = Annotated[str, Field(pattern=_PREDICATE_FIELD, examples=["meta.url", "meta.license", "source_uri"])]


class FieldMatch(Model):
    """A condition on a field every sample keeps: ``meta.KEY`` (the record's other fields, compared as
    text) or one of the source columns. ``glob`` and ``regex`` (RE2) match the whole value."""

    model_config = ConfigDict(extra="forbid")
    field: PredicateField
    op: Literal["eq", "glob", "regex"]
    value: Text


class FieldIn(Model):
    """The field's value is one of ``value``."""

    model_config = ConfigDict(extra="forbid")
    field: PredicateField
    op: Literal["in"]
    value: list[Text] = Field(min_length=1, max_length=100_000)


FieldPredicate = Annotated[FieldMatch | FieldIn, Field(discriminator="op")]


def _unset(value: object) -> bool:
    return value is None


def _one_property(schema: dict[str, Any]) -> None:
    """Exactly one of the properties, none of them null (their Python default is not part of the API)."""
    schema.update(minProperties=1, maxProperties=1)
    for prop in schema.get("properties", {}).values():
        prop.pop("default", None)


class TakedownSelector(Model):
    """What a takedown removes, in exactly one form: the object has exactly one of these properties
    (``minProperties``/``maxProperties`` 1 in its schema)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_one_property)
    # absent, never null (see the schema): typed without None, and left out of answers when unset
    source: SourceSelector = Field(default=None, exclude_if=_unset)  # type: ignore[assignment]
    sample_ids: list[SampleIdText] = Field(  # type: ignore[assignment]
        default=None, min_length=1, max_length=1_000_000, exclude_if=_unset
    )
    content_hashes: list[Annotated[str, Field(pattern=r"^[0-9a-f]{32}$")]] = Field(  # type: ignore[assignment]
        default=None, min_length=1, max_length=1_000_000, exclude_if=_unset
    )
    where: FieldPredicate = Field(default=None, exclude_if=_unset)  # type: ignore[assignment]

    @model_validator(mode="after")
    def _exactly_one(self) -> TakedownSelector:
        given = [k for k in ("source", "sample_ids", "content_hashes", "where") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                f"give exactly one of source, sample_ids, content_hashes, where (got {', '.join(given) or 'none'})"
            )
        return self


class TakedownCreate(Model):
    model_config = ConfigDict(extra="forbid")
    selector: TakedownSelector
    kind: Literal["copyright", "privacy", "opt_out", "quality", "other"]
    reason: Text = Field(min_length=1, max_length=10_000, description="Why, as the requester put it.")


class TakedownOut(Model):
    """A takedown request: what goes, who asked, why and when, and how far it got."""

    model_config = ConfigDict(from_attributes=True)
    id: int
    selector: TakedownSelector
    kind: str
    reason: str
    requested_by: str
    state: TakedownState
    created_at: UtcDatetime
    applied_at: UtcDatetime | None = None
    purged_at: UtcDatetime | None = None


class AffectedFile(Model):
    path: str = Field(description="Relative to the release's data table, as in its manifest.")
    rows: int
    bytes: int
    affected: int = Field(description="Samples of this file the takedown removes.")


class ReplicaImpact(Model):
    """Where the affected files' bytes live: every copy of the release."""

    tier: str
    state: str
    table_path: str
    primary: bool


class JobImpact(Model):
    """A training job that read the release (from its recorded reads)."""

    job: str
    ranks: int = Field(description="Ranks recorded.")
    world_size: int
    last_opened: UtcDatetime


class ReleaseImpact(Model):
    release: str
    state: str
    dataset: str
    version: int
    samples: int = Field(description="Affected samples in the release.")
    sample_ids: list[str] = Field(description="The first of them by id (``sample_limit``).")
    files: list[AffectedFile]
    replicas: list[ReplicaImpact]
    jobs: list[JobImpact]


class DownstreamVersion(Model):
    """A dataset version built (through dataset inputs, at any depth) from a version an affected release
    pins."""

    dataset: str
    version: int
    built_from: str = Field(description="The input version it was built from, as DATASET:vN.")
    run_id: str


class TakedownPlan(Model):
    """What applying the request would touch; computing it changes nothing."""

    request: TakedownOut
    releases: list[ReleaseImpact] = Field(description="Live releases (published or deprecated) holding samples.")
    releases_checked: int
    downstream: list[DownstreamVersion]
    read_text: bool = Field(
        description="Whether answering read record fields (``where`` on meta scans each version's meta once); "
        "never the texts."
    )


class Successor(Model):
    """A release a takedown withdrew, and the one that replaces it."""

    release: str = Field(description="The withdrawn release.")
    successor: str = Field(description="Its successor: the same data without the request's samples.")
    dataset: str
    version: int = Field(description="The successor's dataset version.")
    samples_removed: int
    files_rewritten: int = Field(description="Files holding removed samples; every other file is shared.")


class TakedownPurged(Model):
    """What a purge deleted. Run again after a kill, it reports what that run deleted."""

    request: TakedownOut
    files_deleted: dict[str, int] = Field(description="Per tier: data, replica, side-table and export files.")
    bytes_deleted: dict[str, int] = Field(description="Per tier.")
    samples: int = Field(description="Distinct affected samples found in any data file, committed or staged.")
    quarantine_rows: int = Field(description="Quarantined records of the request's source removed.")
    signature_rows: int = Field(description="MinHash signature rows of the samples removed.")
    versions_tombstoned: list[str] = Field(description="Dataset versions whose data can no longer be read.")
    exports_purged: list[str] = Field(description="Training exports of their releases, deleted.")
    log_files_rewritten: int = Field(description="Delta log files stripped of free-text statistics.")
    successors_verified: list[str] = Field(description="TIER:RELEASE checks passed before anything was deleted.")


class TakedownApplied(Model):
    request: TakedownOut
    successors: list[Successor]
    purge: TakedownPurged | None = Field(default=None, description="With ``purge``: what it deleted.")


# -- eval sets (issue #19) ----------------------------------------------------------------------
EvalSetOut = derive(
    models.EvalSet,
    "EvalSet",
    extra={"versions": (list[int], []), "latest_version": (int | None, None)},
    doc="An eval set (or a collection of them): task, split, language, licence, state, its version numbers.",
)


class EvalSetReport(Model):
    """What registering a version accepted but counted: items with an empty checked field (per field),
    duplicate items (copies of an earlier item's text), items with fewer units than the n-gram size
    (each counts as one n-gram), and the rows quarantined, by reason."""

    items: int = 0
    empty_fields: dict[str, int] = Field(default_factory=dict)
    duplicate_items: int = 0
    shorter_than_n: int = 0
    word_ngram: int | None = None
    char_ngram: int | None = None
    quarantined: dict[str, int] = Field(default_factory=dict)


EvalSetVersionOut = derive(
    models.EvalSetVersion,
    "EvalSetVersion",
    exclude=("eval_set_id", "dataset_version_id", "report"),
    extra={
        "name": (str, ...),
        "ref": (str, ...),
        "kind": (str, ...),
        "state": (str, ...),
        "items": (str | None, Field(default=None, description="The dataset version holding the items (NAME:vN)")),
        "report": (EvalSetReport, ...),
    },
    doc="One immutable version NAME:vN of an eval set: its items' dataset version (or a collection's members), "
    "the fields checked and their join, and the bad-input report.",
)


class EvalSetRegistered(Model):
    """The version registered; ``changed`` is False when the same content was already that version."""

    evalset: EvalSetVersionOut  # type: ignore[valid-type]
    changed: bool


class EvalSetDiff(Model):
    """Items added, removed and changed (same id, other text) from ``base`` to ``target`` (ids: the first 1000
    of each); for collections, the members added and removed."""

    base: str
    target: str
    added: int
    removed: int
    changed: int
    added_items: list[str]
    removed_items: list[str]
    changed_items: list[str]
    added_members: list[str] = Field(default_factory=list)
    removed_members: list[str] = Field(default_factory=list)


class CollectionCreate(Model):
    """A collection version: its members as NAME:vN (NAME alone: that set's latest version, pinned now)."""

    model_config = ConfigDict(extra="forbid")
    members: list[Annotated[str, Field(pattern=names.VERSION_REF_PATTERN, max_length=300)]] = Field(
        min_length=1, max_length=1000
    )
    version: int | None = Field(default=None, ge=1)
    task: Literal["mcq", "qa", "code", "function_call", "agent_trajectory", "other"] | None = None
    split: Name | None = None
    language: Annotated[Text, Field(max_length=40)] | None = None
    license: Annotated[Text, Field(max_length=200)] | None = None
    description: Annotated[Text, Field(max_length=100_000)] | None = None


class EvalSetDeprecate(Model):
    model_config = ConfigDict(extra="forbid")
    reason: Annotated[Text, Field(max_length=10_000)] = ""


class ReleaseCheck(Model):
    """One release checked against an eval set's versions, as recorded on the release."""

    release: str
    evalsets: dict[str, EvalSetContamination]


class EvalSetCheck(Model):
    """``lineage evalset check``: the releases checked against ``evalset`` (each member of a collection)."""

    evalset: str
    releases: list[ReleaseCheck]


class ItemSample(Model):
    """A sample containing the eval item: the item's n-grams it holds and its own n-grams that are the item's."""

    sample_id: str
    matched_item_ngrams: int
    item_ngrams: int
    matched_sample_ngrams: int
    sample_ngrams: int


class ItemSamples(Model):
    """Every sample of a checked dataset version (a release's) that contains eval item ``item_id`` above the
    check's threshold, in sample id order, one page at a time (``offset = offset + limit`` while
    ``offset < total``), with the check it comes from."""

    evalset: str  # NAME:vN
    item_id: str
    dataset: str
    version: int
    release: str | None
    checked_at: UtcDatetime
    threshold: float
    coverage: str
    checked_samples: int
    items: list[ItemSample]
    total: int
    limit: int
    offset: int


# -- eval runs: eval results traced to data (issue #19, item 3) --------------------------------------------
class EvalRunCreate(Model):
    """A model evaluated on an eval set version, and the training jobs that produced it (the ``job`` of
    their releases' usage records)."""

    model_config = ConfigDict(extra="forbid")
    model: Annotated[Text, Field(min_length=1, max_length=300)]
    checkpoint: Annotated[Text, Field(min_length=1, max_length=300)]
    evalset: Annotated[str, Field(pattern=names.VERSION_REF_PATTERN, max_length=300)]
    metrics: dict[Annotated[str, Field(max_length=200)], float] = Field(default_factory=dict, max_length=1000)
    training_jobs: list[Annotated[Text, Field(min_length=1, max_length=300)]] = Field(
        default_factory=list, max_length=1000
    )


EvalRunOut = derive(
    models.EvalRun,
    "EvalRun",
    exclude=("eval_set_version_id",),
    extra={"evalset": (str, ...)},
    doc="A recorded evaluation: model and checkpoint, the eval set version, metrics, the training jobs.",
)


class ReleaseContamination(Model):
    """What is known of one eval set version in one release: None when it was never checked."""

    evalset: str
    checked: bool
    contaminated_items: int | None = None
    items: list[str] = Field(default_factory=list)


class TrainedOn(Model):
    release: str
    jobs: list[str]
    contamination: list[ReleaseContamination]


class EvalRunProvenance(Model):
    """For an eval run: the releases its model trained on (through its jobs' recorded reads), and whether
    any of them held items of the eval set version (and which)."""

    eval_run: EvalRunOut  # type: ignore[valid-type]
    releases: list[TrainedOn]
    contaminated: bool | None = Field(description="None when some release was never checked against the set")


class ReleaseEval(Model):
    job: str
    eval_run: EvalRunOut  # type: ignore[valid-type]


class ReleaseEvals(Model):
    """For a release: the models trained on it (jobs that read it) and their eval results."""

    release: str
    jobs: list[str]
    evals: list[ReleaseEval]


def build_all() -> None:
    """Build every deferred schema of this module now, and stop deferring. The HTTP app calls it before
    it declares a route: FastAPI wraps a body model in a ``TypeAdapter`` when the route is declared, and an
    adapter over a deferring model builds later, outside FastAPI's context (pydantic then warns that the
    body's alias has no effect). A server pays for all of them once, at start."""
    for value in list(globals().values()):
        if isinstance(value, type) and issubclass(value, BaseModel) and value is not BaseModel:
            value.model_config["defer_build"] = False
            value.model_rebuild()
