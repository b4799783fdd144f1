"""Our reproduction of megatron-core's GPTDataset order (:mod:`lineage.releases.megatron_order`) against
megatron-core's own GPTDataset, built over a shard we wrote: the document, sample and shuffle indices are
equal, and each training sample's tokens are the document ranges we name."""

from __future__ import annotations

import logging
import types
from pathlib import Path

import numpy as np
import pytest

from lineage.releases import training_formats as F
from lineage.releases.megatron_order import gpt_order, step_parts


def megatron_gpt(prefix: Path, seed: int, seq_len: int, num_samples: int):  # type: ignore[no-untyped-def]
    from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig
    from megatron.core.datasets.indexed_dataset import IndexedDataset
    from megatron.core.datasets.utils import Split

    # GPTDataset reads vocab_size, eod and pad of its tokenizer; the token ids here are already written
    tokenizer = types.SimpleNamespace(vocab_size=1000, eod=0, pad=1, unique_identifiers={"test": 1})
    config = GPTDatasetConfig(
        random_seed=seed,
        sequence_length=seq_len,
        split="1,0,0",
        reset_position_ids=False,
        reset_attention_mask=False,
        eod_mask_loss=False,
        tokenizer=tokenizer,
        path_to_cache=None,
    )
    indexed = IndexedDataset(str(prefix))
    return GPTDataset(indexed, str(prefix), np.arange(len(indexed), dtype=np.int32), num_samples, Split.train, config)


@pytest.mark.parametrize(
    ("seed", "seq_len", "num_samples"),
    [(1234, 16, 20), (7, 16, 400), (3, 31, 130), (0, 8, 2000)],  # one epoch, several, a separated final one
)
def test_the_indices_and_samples_are_megatron_cores(
    tmp_path: Path, seed: int, seq_len: int, num_samples: int, caplog: pytest.LogCaptureFixture
) -> None:
    rng = np.random.default_rng(seed)
    docs = [np.append(rng.integers(2, 999, size=n - 1), 0).astype(np.uint16) for n in rng.integers(2, 70, size=60)]
    (tmp_path / "s.bin").write_bytes(b"".join(d.tobytes() for d in docs))
    sizes = np.array([len(d) for d in docs])
    (tmp_path / "s.idx").write_bytes(F.megatron_index(sizes, np.dtype(np.uint16)))

    with caplog.at_level(logging.ERROR):
        theirs = megatron_gpt(tmp_path / "s", seed, seq_len, num_samples)
    ours = gpt_order(sizes, seed, seq_len, num_samples)
    assert np.array_equal(ours.document_index, theirs.document_index)
    assert np.array_equal(ours.sample_index, theirs.sample_index)
    assert np.array_equal(ours.shuffle_index, theirs.shuffle_index)

    batch = 4
    for step in (0, 1, num_samples // batch - 1):
        parts = step_parts(ours, sizes, step, batch)
        for j in range(step * batch, (step + 1) * batch):
            text, document_ids = theirs._query_document_sample_shuffle_indices(j)
            mine = [p for p in parts if p.sample == j]
            assert [p.document for p in mine] == list(document_ids)
            assert np.concatenate([docs[p.document][p.start : p.end] for p in mine]).tolist() == text.tolist()
            assert len(text) == seq_len + 1
