"""Tasks of a cluster step (near-duplicate clustering) on the distributed engines.

The global step never runs on one machine. The engines (1) map every sample to the operator's
sketch, (2) explode each sketch's bucket keys and link the samples of every bucket as a star,
(3) find connected components of those candidate edges (see :mod:`pipelines.engines.connected_components`) and
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
import xxhash

from operators.base import ClusterOperator
from operators.lineage_records import LINEAGE_SCHEMA
from operators.schema import SAMPLE_SCHEMA
from pipelines.config import ExecutionConfig
from pipelines.engines import connected_components as components
from pipelines.engines.base import TableTarget
from pipelines.engines.tasks import MANIFEST_SCHEMA, Manifest, _batches
from pipelines.stages import ROW_KEY_FIELD, ROW_KEYS_SCHEMA, Step, decide_clusters, sketch, staged

COMPONENT = "component"
NODE_KEY = "_node"  # int64 key of a sample in the candidate graph (see node_keys)
# what sketches are made of; texts are attached by row key (sample_id gives their graph key)
TEXT_SCHEMA = pa.schema(
    [pa.field("sample_id", pa.string(), nullable=False), ROW_KEY_FIELD, pa.field("text", pa.string())]
)


def sketch_input_schema(op: ClusterOperator) -> pa.Schema:
    """What the sketch map reads of the staged samples: :data:`TEXT_SCHEMA`, plus any other sample
    column the operator's ``sketch`` reads (``source_dataset`` when sources have priorities)."""
    extra = [SAMPLE_SCHEMA.field(c) for c in op.sketch_columns if c not in TEXT_SCHEMA.names]
    return pa.schema([*TEXT_SCHEMA, *extra])


BUCKET_SCHEMA = pa.schema([pa.field(components.KEY, pa.int64()), pa.field(components.NODE, pa.int64())])
EDGE_SCHEMA = pa.schema([pa.field(components.SRC, pa.int64()), pa.field(components.DST, pa.int64())])
LABEL_SCHEMA = pa.schema([pa.field(NODE_KEY, pa.int64()), pa.field(COMPONENT, pa.int64())])
_HEX = np.full(256, -1, np.int64)
_HEX[np.frombuffer(b"0123456789", np.uint8)] = np.arange(10)
_HEX[np.frombuffer(b"abcdef", np.uint8)] = np.arange(10, 16)


def node_keys(ids: pa.Array | pa.ChunkedArray) -> pa.Array:
    """int64 graph keys of sample ids: the first 64 bits of the (xxh3-128 hex) id, else xxh64 of it.

    The candidate graph then moves 8-byte keys instead of 32-character strings. Two samples
    sharing a key only merge two candidate components, which changes no decision.
    """
    if isinstance(ids, pa.ChunkedArray):
        ids = ids.combine_chunks()
    ids = ids.cast(pa.string())
    n = len(ids)
    offsets = np.frombuffer(ids.buffers()[1], np.int32)[ids.offset : ids.offset + n + 1]
    data = np.frombuffer(ids.buffers()[2], np.uint8) if n else np.zeros(0, np.uint8)
    if n and ids.null_count == 0 and np.all(np.diff(offsets) == 32):
        digits = _HEX[data[offsets[0] : offsets[-1]].reshape(n, 32)[:, :16]]
        if (digits >= 0).all():
            value = np.zeros(n, np.uint64)
            for i in range(16):
                value = (value << np.uint64(4)) | digits[:, i].astype(np.uint64)
            return pa.array(value.view(np.int64))
    return pa.array([xxhash.xxh64_intdigest(str(v).encode()) for v in ids.to_pylist()], pa.uint64()).cast(
        pa.int64(), safe=False
    )


def with_node_key(table: pa.Table) -> pa.Table:
    """``table`` plus its samples' graph keys (to join component labels)."""
    return table.append_column(NODE_KEY, node_keys(table.column("sample_id")))


_BAND_SALT = np.uint64(0x9E3779B97F4A7C15)


def bucket_column(op: ClusterOperator) -> str:
    """The sketch column holding a list of bucket hashes, one per LSH band."""
    return op.bucket_column


@dataclass(frozen=True)
class Sketch:
    """Map staged samples (:func:`sketch_input_schema`) to the operator's sketch rows plus row keys, into staging."""

    config: ExecutionConfig
    step: Step
    sketches: TableTarget

    def __call__(self, batches: pa.Table | pa.RecordBatch) -> pa.Table:
        op = self.step.operator
        assert isinstance(op, ClusterOperator)
        out: Manifest | None = None
        for batch in _batches(batches):
            if batch.num_rows == 0:
                continue
            if out is None:
                out = Manifest(self.config, f"sketch-{batch.column('sample_id')[0].as_py()}")
            out.write(self.sketches, staged(op.sketch_schema), sketch(self.step, batch))
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
        nodes = node_keys(batch.column("sample_id")).take(pa.array(rows))
        return pa.table({components.KEY: pa.array(keys), components.NODE: nodes}, schema=BUCKET_SCHEMA)


@dataclass(frozen=True)
class ClusterGroups:
    """The operator's own clustering over one partition of complete candidate components."""

    run_id: str
    config: ExecutionConfig
    step: Step
    lineage: TableTarget
    dropped: TableTarget

    def __call__(self, batches: pa.Table | pa.RecordBatch) -> pa.Table:
        op = self.step.operator
        assert isinstance(op, ClusterOperator)
        table = pa.Table.from_batches(list(_batches(batches))) if not isinstance(batches, pa.Table) else batches
        if table.num_rows == 0:
            return MANIFEST_SCHEMA.empty_table()
        table = table.sort_by("sample_id")
        texts = table.column("text") if op.needs_texts else None
        out = Manifest(self.config, f"cluster{self.step.index}-{table.column('sample_id')[0].as_py()}")
        decided = decide_clusters(self.step, table, texts, self.run_id)
        out.write(self.lineage, LINEAGE_SCHEMA, decided.lineage)
        out.write(self.dropped, ROW_KEYS_SCHEMA, decided.dropped)
        return out.close()


@dataclass(frozen=True)
class WriteRows:
    """Write rows as they come into a staging table (e.g. sketches of kept samples)."""

    config: ExecutionConfig
    target: TableTarget
    schema: pa.Schema
    stage: str

    def __call__(self, batches: pa.Table | pa.RecordBatch) -> pa.Table:
        out: Manifest | None = None
        for batch in _batches(batches):
            if batch.num_rows == 0:
                continue
            if out is None:
                out = Manifest(self.config, f"{self.stage}-{batch.column('sample_id')[0].as_py()}")
            out.write(self.target, self.schema, batch.select(self.schema.names).cast(self.schema))
        return out.close() if out is not None else MANIFEST_SCHEMA.empty_table()
