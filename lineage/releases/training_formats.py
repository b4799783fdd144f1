"""The bytes of the two training formats we write: Megatron indexed datasets and MosaicML MDS shards.

Our own encoders, written from the readers' source (megatron-core ``datasets/indexed_dataset.py``,
streaming ``base/format/mds/{writer,encodings}.py`` and ``base/format/base/writer.py``); the tests
read what these write with the real libraries, which are test-only dependencies.

**Megatron** (``.bin`` + ``.idx``, one pair per shard). ``.bin`` is the tokens of every sequence back
to back in one dtype. ``.idx`` is, little-endian::

    b"MMIDIDX\\x00\\x00"  u64 version=1  u8 dtype code
    u64 sequence_count  u64 document_count (= documents + 1)
    i32 sequence_lengths[sequence_count]  i64 sequence_pointers[sequence_count] (byte offsets in .bin)
    i64 document_indices[document_count]  (0, then the sequence index where each document ends)

We write one sequence per document (what ``preprocess_data.py`` does without sentence splitting), so
``document_indices`` is ``0..n``.

**MDS** (``shard.NNNNN.mds`` + ``index.json``). A shard is ``u32 n``, ``u32 offsets[n + 1]`` (byte
offsets of each sample in the file, the last one its end), the writer's config as sorted JSON, then
the samples. A sample with one variable-size column is ``u32 size`` then the column's bytes; our one
column ``tokens`` is encoded ``ndarray:<dtype>`` (static dtype, dynamic shape): ``u8 (ndim << 2 |
shape dtype)``, the shape in that dtype, then the values.
"""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np

MEGATRON_HEADER = b"MMIDIDX\x00\x00"
MEGATRON_DTYPE_CODES = {"uint8": 1, "int8": 2, "int16": 3, "int32": 4, "int64": 5, "uint16": 8}
MDS_SHAPE_DTYPES = ((1 << 8, 0, np.uint8), (1 << 16, 1, np.uint16), (1 << 32, 2, np.uint32))
MDS_COLUMN = "tokens"


def token_dtype(vocab_size: int) -> np.dtype:
    """megatron-core's choice (``DType.optimal_dtype``): uint16 below 65,500 ids, else int32."""
    return np.dtype(np.uint16 if vocab_size < 65500 else np.int32)


# -- Megatron -----------------------------------------------------------------------------------
def megatron_index(lengths: np.ndarray, dtype: np.dtype) -> bytes:
    """The ``.idx`` for sequences of these lengths, one document each."""
    n = len(lengths)
    lengths = np.asarray(lengths, dtype=np.int64)
    pointers = np.zeros(n, dtype=np.int64)
    if n:
        pointers[1:] = np.cumsum(lengths[:-1]) * dtype.itemsize
    return b"".join(
        (
            MEGATRON_HEADER,
            struct.pack("<Q", 1),
            struct.pack("<B", MEGATRON_DTYPE_CODES[dtype.name]),
            struct.pack("<Q", n),
            struct.pack("<Q", n + 1),
            lengths.astype("<i4").tobytes(),
            pointers.astype("<i8").tobytes(),
            np.arange(n + 1, dtype="<i8").tobytes(),
        )
    )


def megatron_index_size(sequences: int) -> int:
    return len(MEGATRON_HEADER) + 8 + 1 + 8 + 8 + sequences * (4 + 8) + (sequences + 1) * 8


# -- MDS ----------------------------------------------------------------------------------------
def mds_config(dtype: np.dtype, size_limit: int) -> dict[str, Any]:
    """The writer config each shard embeds and ``index.json`` repeats."""
    return {
        "version": 2,
        "format": "mds",
        "compression": None,
        "hashes": [],
        "size_limit": size_limit,
        "column_names": [MDS_COLUMN],
        "column_encodings": [f"ndarray:{dtype.name}"],
        "column_sizes": [None],
    }


def mds_sample(tokens: np.ndarray) -> bytes:
    """One sample: its column's size, then the ndarray (static dtype, dynamic 1-d shape)."""
    n = len(tokens)
    code, shape_dtype = next((c, d) for bound, c, d in MDS_SHAPE_DTYPES if n < bound)
    body = bytes([(1 << 2) | code]) + np.array([n], dtype=shape_dtype).tobytes() + tokens.tobytes()
    return struct.pack("<I", len(body)) + body


def mds_sample_size(tokens: int, dtype: np.dtype) -> int:
    """``len(mds_sample(t))`` for ``tokens`` values of ``dtype``, without encoding them."""
    shape_bytes = next(np.dtype(d).itemsize for bound, _code, d in MDS_SHAPE_DTYPES if tokens < bound)
    return 4 + 1 + shape_bytes + tokens * dtype.itemsize


def mds_shard(samples: list[bytes], config_json: bytes) -> bytes:
    head = 4 + 4 * (len(samples) + 1) + len(config_json)
    offsets = np.zeros(len(samples) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(s) for s in samples])
    offsets += head
    if offsets[-1] >= 1 << 32:
        raise OverflowError("an MDS shard must stay below 4 GiB")  # guarded by the shard-size bound
    return struct.pack("<I", len(samples)) + offsets.astype("<u4").tobytes() + config_json + b"".join(samples)


def mds_shard_overhead(samples: int, config_json: bytes) -> int:
    return 4 + 4 * (samples + 1) + len(config_json)


def mds_config_json(config: dict[str, Any]) -> bytes:
    return json.dumps(config, sort_keys=True).encode()


def mds_index(shards: list[tuple[str, int, int]], config: dict[str, Any]) -> bytes:
    """``index.json`` for (basename, samples, bytes) shards."""
    entries = [
        {
            **config,
            "samples": samples,
            "raw_data": {"basename": basename, "bytes": size, "hashes": {}},
            "zip_data": None,
        }
        for basename, samples, size in shards
    ]
    return json.dumps({"version": 2, "shards": entries}, sort_keys=True).encode()
