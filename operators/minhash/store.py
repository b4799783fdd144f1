"""Signatures as Arrow rows, so a later run loads them (e.g. from Delta) instead of recomputing.

A row stores what deciding needs without the text: the signature, its band hashes and the text
length (for the ``longest``/``shortest`` survivor policies). ``sketch`` names everything that
makes signatures comparable (format version, n-gram, num_perm, seed, script choice); loading
refuses rows whose ``sketch`` differs from the run's. ``band_layout`` only says how ``bands`` was
cut: when a run uses another layout, bands are recomputed from the signatures, which is cheap.

Delta Lake has no unsigned integer types, so the uint32 signature is stored as ``binary``
(``num_perm`` little-endian uint32 values) and each uint64 band hash as the int64 with the same
bits.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from operators.minhash.lsh import band_hashes, band_layout
from operators.minhash.params import MinHashParams
from operators.minhash.signature import signatures
from storage.errors import Invalid

# Bump when shingling, normalisation, shingle hashing or the permutation scheme changes.
SIGNATURE_FORMAT_VERSION = 1

SIGNATURE_SCHEMA = pa.schema(
    [
        pa.field("sample_id", pa.string(), nullable=False),
        pa.field("text_length", pa.int64(), nullable=False),
        pa.field("sketch", pa.string(), nullable=False),
        pa.field("signature", pa.binary(), nullable=False),
        pa.field("band_layout", pa.string(), nullable=False),
        pa.field("bands", pa.list_(pa.int64()), nullable=False),
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


def _binary_column(sigs: np.ndarray) -> pa.BinaryArray:
    n, width = sigs.shape
    offsets = np.arange(0, (n + 1) * width * 4, width * 4, dtype=np.int32)
    data = np.ascontiguousarray(sigs, dtype="<u4").tobytes()
    return pa.BinaryArray.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _bands_column(bands: np.ndarray) -> pa.ListArray:
    n, width = bands.shape
    offsets = pa.array(np.arange(0, (n + 1) * width, width, dtype=np.int32))
    return pa.ListArray.from_arrays(offsets, pa.array(bands.view(np.int64).reshape(-1)))


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
            _binary_column(sigs),
            pa.repeat(pa.scalar(_layout_id(b, r)), n),
            _bands_column(band_hashes(sigs, b, r)),
        ],
        schema=SIGNATURE_SCHEMA,
    )


def _all_equal(values: pa.ChunkedArray | pa.Array, expected: object) -> bool:
    return bool(pc.all(pc.equal(values, expected)).as_py()) if len(values) else True


def _signature_matrix(column: pa.ChunkedArray, num_perm: int) -> np.ndarray:
    if not _all_equal(pc.binary_length(column), num_perm * 4):
        raise ValueError(f"signature: every row must hold {num_perm} uint32 values")
    array = column.combine_chunks()
    if not len(array):
        return np.zeros((0, num_perm), dtype=np.uint32)
    _, offsets_buf, data_buf = array.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int32)[array.offset : array.offset + len(array) + 1]
    data = np.frombuffer(data_buf, dtype=np.uint8)[offsets[0] : offsets[-1]]
    return data.view("<u4").reshape(len(array), num_perm)


def _band_matrix(column: pa.ChunkedArray, bands: int) -> np.ndarray:
    if not _all_equal(pc.list_value_length(column), bands):
        raise ValueError(f"bands: every row must hold {bands} values")
    values = column.combine_chunks().flatten().to_numpy()
    return values.view(np.uint64).reshape(len(column), bands)


def load_signatures(table: pa.Table, params: MinHashParams) -> tuple[np.ndarray, np.ndarray]:
    """``(signatures (n, num_perm) uint32, band hashes (n, bands) uint64)`` of stored rows."""
    expected = sketch_id(params)
    if not _all_equal(table.column("sketch"), expected):
        found = pc.unique(table.column("sketch")).to_pylist()
        raise Invalid(f"signatures were made with {found}, this run needs {expected!r}")
    sigs = _signature_matrix(table.column("signature"), params.num_perm)
    b, r = band_layout(params)
    if table.num_rows and _all_equal(table.column("band_layout"), _layout_id(b, r)):
        return sigs, _band_matrix(table.column("bands"), b)
    return sigs, band_hashes(sigs, b, r)
