"""Engine-independent pieces of running operators: step numbering, row keys, fused map segments, drops.

Every engine calls these same functions inside its own tasks, so operator logic, and the rule for
which rows leave the pipeline, exists once.

**Row keys.** Between steps a sample carries a ``_row`` column (:data:`STAGED_SCHEMA`), assigned
at ingest and unique per row whatever its ``sample_id``. Engines remove dropped rows, and attach
sketches and texts, by this key, so a drop can never take a second row with the same id with it.
Operators never see it: engines pass them the sample columns and map their decisions back to row
keys by position, which is why every operator returns exactly one lineage record per input row,
in input order (checked here).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from operators.base import ClusterOperator, GroupOperator, MapOperator, Operator, OperatorOutput, SourceOperator
from operators.batch_scope import one_pass
from operators.lineage_records import Verdict, stamp
from operators.schema import SAMPLE_SCHEMA
from pipelines.integrity import INGESTED_SCHEMA

ROW_KEY = "_row"
ROW_KEY_FIELD = pa.field(ROW_KEY, pa.int64(), nullable=False)
STAGED_SCHEMA = SAMPLE_SCHEMA.append(ROW_KEY_FIELD)  # samples between steps
ROW_KEYS_SCHEMA = pa.schema([ROW_KEY_FIELD])  # the rows a barrier step drops
_ITEM_BITS = 40  # a row key is (ingest work item << 40) | the row's ordinal within the item


def staged(schema: pa.Schema) -> pa.Schema:
    """``schema`` plus the row key, for staged rows derived from samples (e.g. sketches)."""
    return schema.append(ROW_KEY_FIELD)


@dataclass(frozen=True)
class Step:
    """An operator at its position in the pipeline (0 is the implicit convert)."""

    index: int
    operator: Operator


@dataclass(frozen=True)
class Segment:
    """Map steps that run fused, optionally preceded by one barrier step (group or cluster)."""

    group: Step | None
    maps: tuple[Step, ...]


@dataclass(frozen=True)
class Decided:
    """A barrier step's outcome for some rows: stamped lineage, and the row keys that leave."""

    lineage: pa.RecordBatch
    dropped: pa.RecordBatch  # ROW_KEYS_SCHEMA


def segments(operators: Sequence[Operator]) -> list[Segment]:
    """Split a pipeline at its group operators: [maps], (group, [maps]), (group, [maps]) ..."""
    out: list[Segment] = []
    group: Step | None = None
    maps: list[Step] = []
    for index, op in enumerate(operators, start=1):
        if isinstance(op, GroupOperator | ClusterOperator):
            out.append(Segment(group, tuple(maps)))
            group, maps = Step(index, op), []
        elif isinstance(op, MapOperator):
            maps.append(Step(index, op))
        elif isinstance(op, SourceOperator):
            raise TypeError(f"{op.name} is a source operator; it runs on raw inputs, not in the operator list")
        else:
            raise TypeError(f"{type(op).__name__} is not a map or group operator")
    out.append(Segment(group, tuple(maps)))
    return out


class Ingested:
    """Numbers the samples of one ingest work item and records their ids for the duplicate check.

    ``item`` must be unique per work item within the run (engines use the item's index), so row
    keys are unique across the run.
    """

    def __init__(self, item: int, position: int) -> None:
        if not 0 <= item < 1 << (63 - _ITEM_BITS):
            raise ValueError(f"ingest work item {item} out of range for row keys")
        self.base, self.position, self.rows = item << _ITEM_BITS, position, 0

    def __call__(self, samples: pa.RecordBatch) -> tuple[pa.RecordBatch, pa.RecordBatch]:
        """(the samples with row keys, their ids and origins in :data:`INGESTED_SCHEMA`)."""
        n = samples.num_rows
        if self.rows + n >= 1 << _ITEM_BITS:
            raise ValueError(f"an ingest work item holds more than 2**{_ITEM_BITS} rows")
        keys = pa.array(np.arange(self.base + self.rows, self.base + self.rows + n, dtype=np.int64))
        self.rows += n
        ids = pa.RecordBatch.from_arrays(
            [
                samples.column("sample_id"),
                pa.repeat(pa.scalar(self.position, pa.int32()), n),
                *(samples.column(c) for c in ("source_dataset", "source_path", "source_row")),
            ],
            schema=INGESTED_SCHEMA,
        )
        return pa.RecordBatch.from_arrays([*samples.columns, keys], schema=STAGED_SCHEMA), ids


def _aligned(step: Step, ids: pa.Array | pa.ChunkedArray, records: pa.RecordBatch, what: str) -> None:
    """An operator's records must be one per input row, in input order: row keys follow by position."""
    if isinstance(ids, pa.ChunkedArray):
        ids = ids.combine_chunks()
    if records.num_rows != len(ids) or (len(ids) and not pc.all(pc.equal(records.column("sample_id"), ids)).as_py()):
        raise RuntimeError(
            f"{step.operator.name} (step {step.index}) returned {what} that are not one per input row in input order"
        )


def _dropped(records: pa.RecordBatch) -> pa.Array:
    return pc.equal(records.column("verdict"), Verdict.DROPPED.value)


def run_maps(batch: pa.RecordBatch, maps: Sequence[Step], run_id: str) -> tuple[pa.RecordBatch, list[pa.RecordBatch]]:
    """Push one staged batch through fused map steps; return staged survivors and stamped lineage."""
    if not maps:
        return batch, []
    keys, samples = batch.column(ROW_KEY), batch.drop_columns([ROW_KEY])
    lineage: list[pa.RecordBatch] = []
    with one_pass():  # what a step kept of this batch for the next (the quality steps' tokens) goes after it
        for step in maps:
            if samples.num_rows == 0:
                break
            out = step.operator.apply(samples)  # type: ignore[attr-defined]
            _aligned(step, samples.column("sample_id"), out.lineage, "lineage records")
            keep = pc.invert(_dropped(out.lineage))
            _aligned(step, samples.column("sample_id").filter(keep), out.samples.select(["sample_id"]), "samples")
            lineage.append(stamp(out.lineage, run_id, step.index))
            samples, keys = out.samples, keys.filter(keep)
    return pa.RecordBatch.from_arrays([*samples.columns, keys], schema=STAGED_SCHEMA), lineage


def run_source(source: SourceOperator, chunks: pa.RecordBatch, run_id: str) -> Iterator[OperatorOutput]:
    """Read chunks with the source operator (step 0), lineage stamped."""
    for out in source.read(chunks):
        yield OperatorOutput(out.samples, stamp(out.lineage, run_id, 0), out.quarantine, out.stats)


def _decided(step: Step, rows: pa.Table, records: pa.RecordBatch, run_id: str) -> Decided:
    """The one drop sequence: records aligned with ``rows``, stamped; dropped rows by row key."""
    _aligned(step, rows.column("sample_id"), records, "lineage records")
    keys = rows.column(ROW_KEY).combine_chunks().filter(_dropped(records))
    return Decided(stamp(records, run_id, step.index), pa.RecordBatch.from_arrays([keys], schema=ROW_KEYS_SCHEMA))


def decide_groups(step: Step, rows: pa.Table, run_id: str) -> Decided:
    """A group step over complete key groups: ``rows`` hold the operator's (prepared) columns and row keys."""
    op = step.operator
    assert isinstance(op, GroupOperator)
    return _decided(step, rows, op.decide(rows.select(list(op.decided_columns))), run_id)


def prepared_schema(step: Step) -> pa.Schema:
    """The staged rows a group step's :func:`prepare_group` writes: its prepared columns plus the row key."""
    op = step.operator
    assert isinstance(op, GroupOperator) and op.prepared_schema is not None
    return staged(op.prepared_schema)


def prepare_group(step: Step, rows: pa.RecordBatch) -> pa.RecordBatch:
    """A group step's prepared rows of staged ``rows`` (its ``columns`` and row key), keyed alike."""
    op = step.operator
    assert isinstance(op, GroupOperator) and op.prepared_schema is not None
    out = op.prepare(rows.select(list(op.columns)))
    _aligned(step, rows.column("sample_id"), out, "prepared rows")
    if out.schema != op.prepared_schema:
        raise RuntimeError(f"{op.name} (step {step.index}) prepared rows that do not match its prepared_schema")
    return pa.RecordBatch.from_arrays([*out.columns, rows.column(ROW_KEY)], schema=prepared_schema(step))


def sketch(step: Step, rows: pa.RecordBatch) -> pa.RecordBatch:
    """A cluster step's sketch rows of staged ``rows`` (``sample_id``, ``text``, row key), keyed alike."""
    op = step.operator
    assert isinstance(op, ClusterOperator)
    out = op.sketch(rows)
    _aligned(step, rows.column("sample_id"), out, "sketches")
    return pa.RecordBatch.from_arrays([*out.columns, rows.column(ROW_KEY)], schema=staged(op.sketch_schema))


def decide_clusters(
    step: Step,
    rows: pa.Table,
    texts: pa.ChunkedArray | None,
    run_id: str,
    published: pa.Table | None = None,
    fetch_texts: Callable[[pa.Array], pa.ChunkedArray] | None = None,
) -> Decided:
    """A cluster step over staged sketch ``rows`` (complete candidate components); ``texts`` aligned."""
    op = step.operator
    assert isinstance(op, ClusterOperator)
    sketches = rows.select(op.sketch_schema.names).cast(op.sketch_schema)
    return _decided(step, rows, op.cluster(sketches, texts, published, fetch_texts), run_id)
