"""The order in which megatron-core's ``GPTDataset`` reads a Megatron export: which documents (and which
of their tokens) make up each training sample, and so which samples a global step saw.

Reproduced from ``megatron/core/datasets/gpt_dataset.py`` and ``helpers.cpp`` (megatron-core 0.16), for
one ``.bin``/``.idx`` prefix read whole (``split="1,0,0"``), ``add_extra_token_to_sequence`` on and the
last partial sequence dropped (the training split's defaults). With ``numpy.random.RandomState(seed)``:

* **document index:** the document ids ``0..n-1`` repeated for ``num_epochs`` epochs and shuffled (when
  the final epoch would contribute less than 80% of an epoch's samples, the first ``num_epochs - 1`` epochs
  and the final one are shuffled separately, in that order). ``num_epochs`` is the least number of epochs
  whose tokens cover ``num_samples * seq_len + 1``.
* **sample index:** sample ``i`` is the ``seq_len + 1`` tokens from position ``i * seq_len`` of the
  documents concatenated in document-index order (consecutive samples share one token); entry ``i`` is
  (position in the document index, offset in that document) of that start. There are
  ``(num_epochs * tokens_per_epoch - 1) // seq_len`` samples.
* **shuffle index:** a permutation of the samples by the same random state (the final epoch's samples
  permuted separately when it was separated).

**A blend of prefixes.** An export of several shards is read with every shard's prefix on
``--data-path`` and no weights. megatron-core then builds each shard's GPTDataset over one epoch
(``num_samples=None``: ``(tokens - 1) // seq_len`` samples, the same seed for each) and a
``BlendedDataset`` over them, weighted by those sample counts, of ``min(train_samples, their sum)``
samples: ``helpers.build_blending_indices`` gives sample ``j`` to the dataset whose share lags most,
``argmax_d(weight_d * max(j, 1) - taken_d)`` (the first on ties), as that dataset's next sample.

Megatron's pretraining sampler reads the shuffled samples in order, so global step ``t`` is samples
``t * global_batch_size .. (t + 1) * global_batch_size - 1``; ranks split each global batch in order.
``tests/lineage/releases/test_megatron_order.py`` checks the three indices against megatron-core's own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FINAL_EPOCH_THRESHOLD = 0.80


@dataclass(frozen=True)
class GptOrder:
    document_index: np.ndarray
    sample_index: np.ndarray  # (samples + 1, 2)
    shuffle_index: np.ndarray


def num_epochs(tokens_per_epoch: int, num_samples: int, seq_len: int) -> int:
    wanted = num_samples * seq_len + 1
    return max(1, -(-wanted // tokens_per_epoch))


def gpt_order(sizes: np.ndarray, seed: int, seq_len: int, num_samples: int) -> GptOrder:
    """The three indices megatron-core's GPTDataset builds over documents of ``sizes`` tokens."""
    sizes = np.asarray(sizes, dtype=np.int64)
    tokens_per_epoch = int(sizes.sum())
    epochs = num_epochs(tokens_per_epoch, num_samples, seq_len)
    separate = False
    sans_final = 0
    if epochs > 1:
        sans_final = ((epochs - 1) * tokens_per_epoch - 1) // seq_len
        per_epoch = (tokens_per_epoch - 1) // seq_len
        separate = num_samples - sans_final < int(FINAL_EPOCH_THRESHOLD * per_epoch)
    rng = np.random.RandomState(seed)
    documents = np.arange(len(sizes), dtype=np.int32)

    def shuffled(n_epochs: int) -> np.ndarray:
        index = np.tile(documents, n_epochs).astype(np.int32)
        rng.shuffle(index)
        return index

    document_index = (
        np.concatenate((shuffled(epochs - 1), shuffled(1))) if separate and epochs > 1 else shuffled(epochs)
    )
    samples = (epochs * tokens_per_epoch - 1) // seq_len
    ends = np.cumsum(sizes[document_index])
    starts = np.arange(samples + 1, dtype=np.int64) * seq_len
    position = np.searchsorted(ends, starts, side="right")
    offset = starts - np.concatenate(([0], ends))[position]
    sample_index = np.stack((position, offset), axis=1)

    dtype = np.uint32 if samples < np.iinfo(np.uint32).max - 1 else np.int64
    first = np.arange(sans_final if separate else samples, dtype=dtype)
    rng.shuffle(first)
    if separate:
        last = np.arange(sans_final, samples, dtype=dtype)
        rng.shuffle(last)
        first = np.concatenate((first, last))
    return GptOrder(document_index, sample_index, first)


@dataclass(frozen=True)
class SamplePart:
    """Tokens ``[start, end)`` of document ``document`` are part of training sample ``sample``."""

    sample: int  # the index the sampler asked for (position in the shuffled order)
    document: int
    start: int
    end: int


def step_parts(order: GptOrder, sizes: np.ndarray, step: int, global_batch_size: int) -> list[SamplePart]:
    """The documents and token ranges of every training sample of global step ``step``."""
    return [
        part
        for j in range(step * global_batch_size, (step + 1) * global_batch_size)
        for part in sample_parts(order, sizes, j, j)
    ]


def sample_parts(order: GptOrder, sizes: np.ndarray, index: int, sample: int) -> list[SamplePart]:
    """The documents and token ranges of item ``index`` of a GPTDataset (``dataset[index]``), labelled
    as training sample ``sample``."""
    k = int(order.shuffle_index[index])
    (beg, beg_off), (end, end_off) = order.sample_index[k], order.sample_index[k + 1]
    parts = []
    for pos in range(int(beg), int(end) + 1):
        doc = int(order.document_index[pos])
        start = int(beg_off) if pos == beg else 0
        stop = int(end_off) + 1 if pos == end else int(sizes[doc])
        parts.append(SamplePart(sample, doc, start, stop))
    return parts


def one_epoch_samples(sizes: np.ndarray, seq_len: int) -> int:
    """The samples of a GPTDataset built with ``num_samples=None`` (one epoch), as in a blend."""
    return (int(np.asarray(sizes, dtype=np.int64).sum()) - 1) // seq_len


def blending_indices(weights: list[int], count: int) -> list[tuple[int, int]]:
    """(dataset, its sample) of the first ``count`` samples of a BlendedDataset over datasets of
    ``weights`` samples (``helpers.build_blending_indices`` with the normalized weights)."""
    total = float(sum(weights))
    shares = [w / total for w in weights]
    taken = [0] * len(weights)
    out = []
    for j in range(count):
        at = max(float(j), 1.0)
        best, error = 0, shares[0] * at - taken[0]
        for d in range(1, len(shares)):
            e = shares[d] * at - taken[d]
            if e > error:
                best, error = d, e
        out.append((best, taken[best]))
        taken[best] += 1
    return out
