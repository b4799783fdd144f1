"""Tasks of a cluster step (near-duplicate clustering) on the distributed engines.

The global step never runs on one machine. The engines (1) map every sample to the operator's
sketch, (2) explode each sketch's bucket keys and link the samples of every bucket as a star,
(3) find connected components of those candidate edges (see :mod:`pipelines.components`) and
(4) call the operator's own ``cluster`` once per partition holding *complete* candidate
components. Two samples sharing a bucket are always in one candidate component, so every bucket,
edge and cluster the operator sees is the same as in a single in-process call: the decisions are
identical, and no task holds all sketches or all pairs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lineage.records import LINEAGE_SCHEMA, Verdict, stamp
from lineage.settings import Settings
from operators.base import ClusterOperator
from pipelines import components
from pipelines.engines.tasks import DROPPED_SCHEMA, MANIFEST_SCHEMA, Manifest, Table, _batches
from pipelines.stages import Step

COMPONENT = "component"
TEXT_SCHEMA = pa.schema([pa.field("sample_id", pa.string(), nullable=False), pa.field("text", pa.string())])
BUCKET_SCHEMA = pa.schema([pa.field(components.KEY, pa.int64()), pa.field(components.NODE, pa.string())])
EDGE_SCHEMA = pa.schema([pa.field(components.SRC, pa.string()), pa.field(components.DST, pa.string())])
_BAND_SALT = np.uint64(0x9E3779B97F4A7C15)


def bucket_column(op: ClusterOperator) -> str:
    """The sketch column holding a list of bucket hashes, one per LSH band."""
    return getattr(op, "bucket_column", "bands")


def with_component(schema: pa.Schema) -> pa.Schema:
    return schema.append(pa.field(COMPONENT, pa.string()))


@dataclass(frozen=True)
class Sketch:
    """Map samples (``sample_id``, ``text``) to the operator's sketch rows, into staging."""

    settings: Settings
    step: Step
    sketches: Table

    def __call__(self, batches: pa.Table | pa.RecordBatch) -> pa.Table:
        op = self.step.operator
        assert isinstance(op, ClusterOperator)
        out: Manifest | None = None
        for batch in _batches(batches):
            if batch.num_rows == 0:
                continue
            if out is None:
                out = Manifest(self.settings, f"sketch-{batch.column('sample_id')[0].as_py()}")
            out.write(self.sketches, op.sketch_schema, op.sketch(batch))
        return out.close() if out is not None else MANIFEST_SCHEMA.empty_table()


@dataclass(frozen=True)
class Buckets:
    """Explode sketches to ``(bucket key, sample_id)`` rows; a key folds the band in with its hash.

    Distinct buckets may share a key only by a 64-bit collision, which merges two candidate
    components: harmless, since the operator still sees complete buckets.
    """

    column: str

    def __call__(self, batch: pa.Table | pa.RecordBatch) -> pa.Table:
        bands = batch.column(self.column)
        if isinstance(bands, pa.ChunkedArray):
            bands = bands.combine_chunks()
        lengths = pc.list_value_length(bands).to_numpy(zero_copy_only=False).astype(np.int64)
        hashes = pc.list_flatten(bands).to_numpy(zero_copy_only=False).astype(np.int64).view(np.uint64)
        starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
        band = (np.arange(len(hashes), dtype=np.int64) - starts).astype(np.uint64)
        with np.errstate(over="ignore"):
            keys = (hashes ^ ((band + np.uint64(1)) * _BAND_SALT)).view(np.int64)
        rows = np.repeat(np.arange(len(lengths)), lengths)
        nodes = batch.column("sample_id").take(pa.array(rows))
        return pa.table({components.KEY: pa.array(keys), components.NODE: nodes}, schema=BUCKET_SCHEMA)


@dataclass(frozen=True)
class ClusterGroups:
    """The operator's own clustering over one partition of complete candidate components."""

    run_id: str
    settings: Settings
    step: Step
    lineage: Table
    dropped: Table

    def __call__(self, batches: pa.Table | pa.RecordBatch) -> pa.Table:
        op = self.step.operator
        assert isinstance(op, ClusterOperator)
        table = pa.Table.from_batches(list(_batches(batches))) if not isinstance(batches, pa.Table) else batches
        if table.num_rows == 0:
            return MANIFEST_SCHEMA.empty_table()
        table = table.sort_by("sample_id")
        texts = table.column("text") if op.needs_texts else None
        sketches = table.select(op.sketch_schema.names).cast(op.sketch_schema)
        out = Manifest(self.settings, f"cluster{self.step.index}-{table.column('sample_id')[0].as_py()}")
        decisions = stamp(op.cluster(sketches, texts), self.run_id, self.step.index)
        out.write(self.lineage, LINEAGE_SCHEMA, decisions)
        dropped = decisions.filter(pc.equal(decisions.column("verdict"), Verdict.DROPPED.value))
        out.write(self.dropped, DROPPED_SCHEMA, dropped.select(["sample_id"]))
        return out.close()


@dataclass(frozen=True)
class WriteRows:
    """Write rows as they come into a staging table (e.g. sketches of kept samples)."""

    settings: Settings
    target: Table
    schema: pa.Schema
    stage: str

    def __call__(self, batches: pa.Table | pa.RecordBatch) -> pa.Table:
        out: Manifest | None = None
        for batch in _batches(batches):
            if batch.num_rows == 0:
                continue
            if out is None:
                out = Manifest(self.settings, f"{self.stage}-{batch.column('sample_id')[0].as_py()}")
            out.write(self.target, self.schema, batch.select(self.schema.names).cast(self.schema))
        return out.close() if out is not None else MANIFEST_SCHEMA.empty_table()
