"""Engine-independent pieces of running operators: step numbering and fused map segments.

Every engine calls these same functions inside its own tasks, so operator logic exists once.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa

from lineage.records import stamp
from operators.base import ClusterOperator, GroupOperator, MapOperator, Operator, OperatorOutput, SourceOperator


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


def run_maps(batch: pa.RecordBatch, maps: Sequence[Step], run_id: str) -> tuple[pa.RecordBatch, list[pa.RecordBatch]]:
    """Push one batch through fused map steps; return survivors and stamped lineage records."""
    lineage: list[pa.RecordBatch] = []
    for step in maps:
        if batch.num_rows == 0:
            break
        out = step.operator.apply(batch)  # type: ignore[attr-defined]
        lineage.append(stamp(out.lineage, run_id, step.index))
        batch = out.samples
    return batch, lineage


def run_source(source: SourceOperator, chunks: pa.RecordBatch, run_id: str) -> Iterator[OperatorOutput]:
    """Read chunks with the source operator (step 0), lineage stamped."""
    for out in source.read(chunks):
        yield OperatorOutput(out.samples, stamp(out.lineage, run_id, 0), out.quarantine, out.stats)


def decide_groups(step: Step, groups: pa.Table, run_id: str) -> pa.RecordBatch:
    """One group step's decisions over complete key groups, stamped."""
    op = step.operator
    assert isinstance(op, GroupOperator)
    return stamp(op.decide(groups), run_id, step.index)
