"""Signatures as Arrow rows, so a later run loads them (e.g. from Delta) instead of recomputing.

A row stores what deciding needs without the text: the signature, its band hashes and the text
length (for the ``longest``/``shortest`` survivor policies). ``sketch`` names everything that
makes signatures comparable (format version, n-gram, num_perm, seed, script choice); loading
refuses rows whose ``sketch`` differs from the run's. ``band_layout`` only says how ``bands`` was
cut: when a run uses another layout, bands are recomputed from the signatures, which is cheap.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from operators.minhash.lsh import band_hashes, band_layout
from operators.minhash.params import MinHashParams
from operators.minhash.signature import signatures

# Bump when shingling, normalisation, shingle hashing or the permutation scheme changes.
SIGNATURE_FORMAT_VERSION = 1

SIGNATURE_SCHEMA = pa.schema(
    [
        pa.field("sample_id", pa.string(), nullable=False),
        pa.field("text_length", pa.int64(), nullable=False),
        pa.field("sketch", pa.string(), nullable=False),
        pa.field("signature", pa.list_(pa.uint32()), nullable=False),
        pa.field("band_layout", pa.string(), nullable=False),
        pa.field("bands", pa.list_(pa.uint64()), nullable=False),
    ]
)


def sketch_id(params: MinHashParams) -> str:
    """Identity of the signature space: equal strings <=> comparable signatures."""
    return (
        f"minhash-v{SIGNATURE_FORMAT_VERSION} affine32 ngram={params.ngram} num_perm={params.num_perm} "
        f"seed={params.seed} script={params.script} cjk_ratio={params.cjk_ratio}"
    )


def _layout_id(bands: int, rows: int) -> str:
    return f"{bands}x{rows}"


def _list_column(matrix: np.ndarray, typ: pa.DataType) -> pa.ListArray:
    n, width = matrix.shape
    offsets = pa.array(np.arange(0, (n + 1) * width, width, dtype=np.int32))
    return pa.ListArray.from_arrays(offsets, pa.array(matrix.reshape(-1), type=typ))


def signature_batch(
    sample_ids: pa.Array | pa.ChunkedArray, texts: pa.Array | pa.ChunkedArray, params: MinHashParams
) -> pa.RecordBatch:
    """The map step: one batch of samples -> one :data:`SIGNATURE_SCHEMA` batch."""
    if isinstance(sample_ids, pa.ChunkedArray):
        sample_ids = sample_ids.combine_chunks()
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    sigs = signatures(texts, params)
    b, r = band_layout(params)
    n = len(sigs)
    return pa.RecordBatch.from_arrays(
        [
            sample_ids.cast(pa.string()),
            pc.utf8_length(pc.fill_null(texts, "")).cast(pa.int64()),
            pa.repeat(pa.scalar(sketch_id(params)), n),
            _list_column(sigs, pa.uint32()),
            pa.repeat(pa.scalar(_layout_id(b, r)), n),
            _list_column(band_hashes(sigs, b, r), pa.uint64()),
        ],
        schema=SIGNATURE_SCHEMA,
    )


def _fixed_width(column: pa.ChunkedArray | pa.Array, width: int, dtype: type, what: str) -> np.ndarray:
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    n = len(column)
    if n and not pc.all(pc.equal(pc.list_value_length(column), width)).as_py():
        raise ValueError(f"{what}: every row must hold {width} values")
    return column.flatten().to_numpy(zero_copy_only=False).astype(dtype, copy=False).reshape(n, width)


def load_signatures(table: pa.Table, params: MinHashParams) -> tuple[np.ndarray, np.ndarray]:
    """``(signatures (n, num_perm) uint32, band hashes (n, bands) uint64)`` of stored rows."""
    expected = sketch_id(params)
    if table.num_rows and not pc.all(pc.equal(table.column("sketch"), expected)).as_py():
        found = pc.unique(table.column("sketch")).to_pylist()
        raise ValueError(f"signatures were made with {found}, this run needs {expected!r}")
    sigs = _fixed_width(table.column("signature"), params.num_perm, np.uint32, "signature")
    b, r = band_layout(params)
    layout = _layout_id(b, r)
    if table.num_rows and pc.all(pc.equal(table.column("band_layout"), layout)).as_py():
        return sigs, _fixed_width(table.column("bands"), b, np.uint64, "bands")
    return sigs, band_hashes(sigs, b, r)
