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

from typing import TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from operators.minhash.lsh import ABSENT, band_layout, sketch_bands
from operators.minhash.params import MinHashParams
from operators.minhash.shingle import concat_releasing, value_buffers, word_half_share
from operators.minhash.signature import signatures
from operators.minhash.verify import ShingleSets, sorted_sets
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

# Columns an in-memory engine's held sketch may carry (:func:`with_shingle_sets`), never stored: each
# row's sorted shingle-hash set (little-endian uint32 values) and whether it has a CJK character.
SHINGLE_SET, SHINGLE_CJK = "shingle_set", "shingle_cjk"
# ... or, for ``script="mixed"``, each row's folded text as verification reads it (:func:`with_folded_texts`)
FOLDED_TEXT = "folded_text"


def sketch_id(params: MinHashParams) -> str:
    """Identity of the signature space: equal strings <=> comparable signatures."""
    kind = f"cjk_ratio={params.cjk_ratio}"
    if params.script == "mixed":
        # a word half of ``ngram`` words is the space stored before ``word_ngram`` existed: the same id
        words = "" if params.word_ngram == params.ngram else f"word_ngram={params.word_ngram} "
        kind = f"{words}word_half_share={word_half_share(params)}"
    return (
        f"minhash-v{SIGNATURE_FORMAT_VERSION} affine32 ngram={params.ngram} num_perm={params.num_perm} "
        f"seed={params.seed} script={params.script} {kind}"
    )


def _layout_id(bands: int, rows: int) -> str:
    return f"{bands}x{rows}"


def _fill_rows(out: np.ndarray, stored: np.ndarray, full: np.ndarray) -> np.ndarray:
    """``out``'s rows from ``stored`` values in row order: whole where ``full``, else the first half and
    :data:`~operators.minhash.lsh.ABSENT` after it (the band matrix of rows stored as in :func:`_bands_column`)."""
    if full.all():
        out[:] = stored.reshape(out.shape)
    else:
        out[:] = ABSENT
        out[_halves(len(out), out.shape[1], full)] = stored
    return out


def _halves(n: int, width: int, full: np.ndarray) -> np.ndarray:
    """Mask of the stored values of an ``(n, width)`` matrix whose rows are whole where ``full`` and
    only their first half elsewhere (a ``script="mixed"`` document without a character half)."""
    mask = np.ones((n, width), dtype=bool)
    mask[~full, width // 2 :] = False
    return mask


def _binary_column(sigs: np.ndarray, full: np.ndarray | None) -> pa.BinaryArray:
    n, width = sigs.shape
    if full is None:
        offsets = np.arange(0, (n + 1) * width * 4, width * 4, dtype=np.int32)
        data = np.ascontiguousarray(sigs, dtype="<u4").tobytes()
    else:
        widths = np.where(full, width, width // 2) * 4
        offsets = np.concatenate([[0], np.cumsum(widths)]).astype(np.int32)
        data = np.ascontiguousarray(sigs, dtype="<u4")[_halves(n, width, full)].tobytes()
    return pa.BinaryArray.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _bands_column(bands: np.ndarray, full: np.ndarray | None) -> pa.ListArray:
    """The ``bands`` list column of a band matrix (of each row not ``full``, its first half), its values
    copied into Arrow's pool: NumPy's memory (a few MB a batch) stayed with glibc once freed, so a run holding
    every sketch kept the bands' pages after it had joined them into one matrix (:func:`_band_rows`)."""
    n, width = bands.shape
    widths = np.full(n, width, np.int32) if full is None else np.where(full, width, width // 2).astype(np.int32)
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(widths, out=offsets[1:])
    values = pa.allocate_buffer(8 * int(offsets[-1]))
    flat = np.frombuffer(values, np.uint64)
    if full is None:
        flat[:] = bands.reshape(-1)
    else:
        np.compress(_halves(n, width, full).reshape(-1), bands.reshape(-1), out=flat)
    return pa.ListArray.from_arrays(pa.array(offsets), pa.Array.from_buffers(pa.int64(), len(flat), [None, values]))


def signature_batch(
    sample_ids: pa.Array | pa.ChunkedArray, texts: pa.Array | pa.ChunkedArray, params: MinHashParams
) -> pa.RecordBatch:
    """The map step: one batch of samples -> one :data:`SIGNATURE_SCHEMA` batch."""
    return sketch_rows(sample_ids, texts, signatures(texts, params), params)


def sketch_rows(
    sample_ids: pa.Array | pa.ChunkedArray, texts: pa.Array | pa.ChunkedArray, sigs: np.ndarray, params: MinHashParams
) -> pa.RecordBatch:
    """The :data:`SIGNATURE_SCHEMA` batch of samples whose signatures are ``sigs``."""
    if isinstance(sample_ids, pa.ChunkedArray):
        sample_ids = sample_ids.combine_chunks()
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    b, r = band_layout(params)
    n = len(sigs)
    bands = sketch_bands(sigs, b, r, params.num_perm)
    # a mixed-script document without a CJK character stores only its stream half
    full = (bands[:, b:] != ABSENT).any(axis=1) if params.script == "mixed" else None
    return pa.RecordBatch.from_arrays(
        [
            sample_ids.cast(pa.string()),
            pc.utf8_length(pc.fill_null(texts, "")).cast(pa.int64()),
            pa.repeat(pa.scalar(sketch_id(params)), n),
            _binary_column(sigs, full),
            pa.repeat(pa.scalar(_layout_id(b, r)), n),
            _bands_column(bands, full),
        ],
        schema=SIGNATURE_SCHEMA,
    )


def with_shingle_sets(batch: pa.RecordBatch, shingles: tuple[np.ndarray, np.ndarray, np.ndarray]) -> pa.RecordBatch:
    """``batch`` with the sorted sets of its rows' ``shingles`` (``shingle_hashes``'s triple), for an engine
    that holds every sketch for one in-memory ``cluster`` call: exact verification then compares these
    instead of shingling the candidates' texts again (two threads' 1.2 s at 254,724 documents)."""
    hashes, offsets, cjk = shingles
    sets, set_offsets = sorted_sets(hashes, offsets)
    values = pa.py_buffer(np.ascontiguousarray(sets, dtype="<u4"))
    column = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), len(cjk), [None, pa.py_buffer(np.asarray(set_offsets, np.int64) * 4), values]
    )
    return batch.append_column(SHINGLE_SET, column).append_column(SHINGLE_CJK, pa.array(cjk, pa.bool_()))


def with_folded_texts(batch: pa.RecordBatch, folded: pa.Array) -> pa.RecordBatch:
    """``batch`` with its rows' texts as ``script="mixed"`` verification reads them (``characters.py``): as
    ``normalize.fold`` made them for the signatures, less the code points that metric deletes
    (``characters.compared_texts``). For an engine that holds every sketch for one in-memory ``cluster``
    call: it need not hold the raw texts, nor fold the candidates' texts again."""
    return batch.append_column(FOLDED_TEXT, folded.cast(pa.large_string()))


def folded_texts(table: pa.Table) -> pa.ChunkedArray | None:
    """The texts :func:`with_folded_texts` put in ``table``, or None when it has none."""
    return table.column(FOLDED_TEXT) if FOLDED_TEXT in table.column_names else None


# the large columns of a held sketch: what verification compares (the texts, or every shingle) and the bands
HELD_COLUMNS = (FOLDED_TEXT, SHINGLE_SET, "bands")


def held_apart(batch: pa.RecordBatch) -> tuple[pa.RecordBatch, dict[str, pa.Array]]:
    """A held sketch without its :data:`HELD_COLUMNS`, and those columns by name. An engine holding every
    sketch keeps their pieces apart, to put each back as one chunk (:func:`with_held`) without holding two
    copies of it."""
    names = [name for name in HELD_COLUMNS if name in batch.schema.names]
    return batch.drop_columns(names), {name: batch.column(name) for name in names}


def with_held(table: pa.Table, name: str, pieces: list[pa.Array]) -> pa.Table:
    """``table`` with a column :func:`held_apart` took out of its batches, as one chunk whose buffers the
    cluster step reads where they are: ``pieces`` are copied into it one at a time and each released once
    copied, where ``combine_chunks`` held them all and their copy at once. Texts and shingle sets join as
    ``shingle.concat_releasing`` joins them; the bands join as the band matrix itself (:func:`_band_rows`)."""
    column = _band_rows(pieces) if name == "bands" else concat_releasing(pieces)
    return table.append_column(name, pa.chunked_array([column]))


def _band_rows(pieces: list[pa.Array]) -> pa.ListArray:
    """Held ``bands`` pieces as one list column of equal rows whose values are the ``(n, width)`` band matrix
    :func:`load_signatures` makes (``script="mixed"``: a row without a character half padded with
    :data:`ABSENT`, as the matrix has it), so it loads without a copy: the column and its matrix were both
    held through the cluster step. Each piece is released once copied; ``pieces`` is emptied."""
    lengths = [pc.list_value_length(piece).to_numpy() for piece in pieces]
    width = max((int(length.max()) for length in lengths if len(length)), default=0)
    rows = sum(len(piece) for piece in pieces)
    if rows * width >= 2**31:
        raise ValueError(f"{rows:,} rows of {width} band hashes: more than a list column's 2^31 values")
    values = pa.allocate_buffer(8 * rows * width)
    matrix = np.frombuffer(values, np.uint64).reshape(rows, width)
    at = 0
    pieces.reverse()  # popped from the end, so in order
    lengths.reverse()
    while pieces:
        piece, length = pieces.pop(), lengths.pop()
        stored = piece.flatten().to_numpy().view(np.uint64)
        _fill_rows(matrix[at : at + len(piece)], stored, length == width)
        at += len(piece)
        del piece, stored
    offsets = np.arange(0, (rows + 1) * width, width, dtype=np.int32) if width else np.zeros(rows + 1, np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), pa.Array.from_buffers(pa.int64(), rows * width, [None, values]))


def contiguous(column: pa.ChunkedArray) -> pa.Array:
    """``column`` as one array: its only chunk as it is (``combine_chunks`` copies even that one)."""
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def shingle_sets(table: pa.Table) -> ShingleSets | None:
    """The sets :func:`with_shingle_sets` put in ``table`` (one copy of them), or None when it has none."""
    if SHINGLE_SET not in table.column_names:
        return None
    data, offsets = value_buffers(contiguous(table.column(SHINGLE_SET)))
    sets = data[offsets[0] : offsets[-1]].view("<u4")
    cjk = table.column(SHINGLE_CJK).to_numpy().astype(bool)
    return ShingleSets(sets, (offsets - offsets[0]) // 4, cjk)


def _all_equal(values: pa.ChunkedArray | pa.Array, expected: object) -> bool:
    return bool(pc.all(pc.equal(values, expected)).as_py()) if len(values) else True


def _check_signatures(column: pa.ChunkedArray | pa.Array, num_perm: int, mixed: bool) -> None:
    lengths = pc.binary_length(column)
    if not (_all_equal(lengths, num_perm * 4) or (mixed and _all_in(lengths, (num_perm * 4, num_perm * 8)))):
        halves = " or 2x that" if mixed else ""
        raise ValueError(f"signature: every row must hold {num_perm} uint32 values{halves}")


def _signature_matrix(column: pa.ChunkedArray, num_perm: int, mixed: bool) -> np.ndarray:
    _check_signatures(column, num_perm, mixed)
    array = column.combine_chunks()
    width = 2 * num_perm if mixed else num_perm
    if not len(array):
        return np.zeros((0, width), dtype=np.uint32)
    data, offsets = value_buffers(array)
    data = data[offsets[0] : offsets[-1]].view("<u4")
    if not mixed or len(data) == len(array) * num_perm:  # no text with a character half: no room for one
        return data.reshape(len(array), num_perm)
    out = np.full((len(array), width), 0xFFFFFFFF, dtype=np.uint32)
    out[_halves(len(array), width, np.diff(offsets) == num_perm * 8)] = data
    return out


def _band_matrix(column: pa.ChunkedArray, bands: int, mixed: bool) -> np.ndarray:
    lengths = pc.list_value_length(column)
    if not (_all_equal(lengths, bands) or (mixed and _all_in(lengths, (bands, 2 * bands)))):
        raise ValueError(f"bands: every row must hold {bands} values{' or 2x that' if mixed else ''}")
    values = contiguous(column).flatten().to_numpy().view(np.uint64)
    if not mixed or len(values) == len(column) * bands:
        return values.reshape(len(column), bands)
    if len(values) == len(column) * 2 * bands:  # every row whole (or padded whole: a held sketch's _band_rows)
        return values.reshape(len(column), 2 * bands)
    return _fill_rows(np.empty((len(column), 2 * bands), np.uint64), values, lengths.to_numpy() == 2 * bands)


def _all_in(values: pa.ChunkedArray | pa.Array, allowed: tuple[int, int]) -> bool:
    return bool(pc.all(pc.is_in(values, pa.array(allowed, values.type))).as_py()) if len(values) else True


def widen(sigs: np.ndarray, bands: np.ndarray, num_perm: int) -> tuple[np.ndarray, np.ndarray]:
    """``script="mixed"`` matrices at their full width (an empty character half, :data:`ABSENT` bands),
    so two loaded tables line up whether or not either holds a text with a CJK character."""
    if sigs.shape[1] == 2 * num_perm:
        return sigs, bands
    empty = np.full_like(sigs, 0xFFFFFFFF)
    return np.hstack([sigs, empty]), np.hstack([bands, np.zeros_like(bands)])


Rows = TypeVar("Rows", pa.Table, pa.RecordBatch)


def _check_sketch(table: pa.Table | pa.RecordBatch, params: MinHashParams) -> None:
    expected = sketch_id(params)
    if not _all_equal(table.column("sketch"), expected):
        found = pc.unique(table.column("sketch")).to_pylist()
        raise Invalid(f"signatures were made with {found}, this run needs {expected!r}")


def _bands_stored(table: pa.Table | pa.RecordBatch, params: MinHashParams) -> bool:
    return bool(table.num_rows) and _all_equal(table.column("band_layout"), _layout_id(*band_layout(params)))


def without_signatures(table: Rows, params: MinHashParams) -> Rows:
    """``table`` (or a batch) checked as :func:`load_signatures` checks it, without its ``signature``
    column (and the ``sketch`` and ``band_layout`` strings it was checked by) when its stored bands
    are the run's: exact verification never reads a signature, and held until the end of a
    254k-document run they, a sorted copy and their ``(n, 2 * num_perm)`` matrix were 0.45 GB of its
    1.6 GB peak. :func:`load_signatures` of the result gives zero-width signatures. A table without
    signatures is returned as it is."""
    if "signature" not in table.column_names:
        return table
    _check_sketch(table, params)
    _check_signatures(table.column("signature"), params.num_perm, params.script == "mixed")
    if not _bands_stored(table, params):
        return table
    return table.drop_columns(["signature", "sketch", "band_layout"])


def load_signatures(table: pa.Table, params: MinHashParams) -> tuple[np.ndarray, np.ndarray]:
    """``(signatures, band hashes)`` of stored rows, as ``signatures`` and ``sketch_bands`` make them:
    ``(n, num_perm)`` uint32 and ``(n, bands)`` uint64; for ``script="mixed"`` twice as wide, unless
    no row has a character half (an English corpus then costs no more memory; :func:`widen`).
    Of a table :func:`without_signatures` dropped them from, the signatures are ``(n, 0)``."""
    mixed = params.script == "mixed"
    b, r = band_layout(params)
    if "signature" not in table.column_names:  # checked by without_signatures
        return np.zeros((table.num_rows, 0), np.uint32), _band_matrix(table.column("bands"), b, mixed)
    _check_sketch(table, params)
    sigs = _signature_matrix(table.column("signature"), params.num_perm, mixed)
    if _bands_stored(table, params):
        return sigs, _band_matrix(table.column("bands"), b, mixed)
    return sigs, sketch_bands(sigs, b, r, params.num_perm)
