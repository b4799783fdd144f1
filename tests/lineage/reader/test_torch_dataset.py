from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from torch.utils.data import DataLoader

import lineage.reader.torch as reader_torch
from lineage.reader.torch import ReleaseDataset
from lineage.settings import Settings
from tests.support.reader_helpers import N, read_all


def test_dataloader_workers_split_the_rank_share_without_overlap(release: str, settings: Settings) -> None:
    ds = ReleaseDataset(release, rank=0, world_size=1, settings=settings, columns=["sample_id"], seed=4)
    loader = DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context="spawn")
    seen = [row["sample_id"] for row in loader]
    assert len(seen) == len(set(seen)) >= N - 1  # 2 workers: at most one sample of remainder dropped
    assert set(seen) <= set(read_all(release, settings, seed=4))


def test_resume_in_process(release: str, settings: Settings) -> None:
    ds = ReleaseDataset(release, settings=settings, columns=["sample_id"], seed=2)
    it = iter(ds)
    first = [next(it)["sample_id"] for _ in range(10)]
    state = ds.state_dict()
    again = ReleaseDataset(release, settings=settings, columns=["sample_id"], seed=2)
    again.load_state_dict(state)
    rest = [row["sample_id"] for row in again]
    assert first + rest == read_all(release, settings, seed=2)
    assert torch.tensor([len(rest)]).item() == N - 10


def test_a_worker_reads_as_one_of_its_nodes_ranks_times_workers_without_a_prefetch_thread(
    release: str,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")  # 4 ranks on this node, 2 DataLoader workers each
    monkeypatch.setattr(reader_torch, "get_worker_info", lambda: SimpleNamespace(num_workers=2, id=1))
    reader = ReleaseDataset(release, rank=5, world_size=8, settings=settings)._open()
    assert (reader.shard.rank, reader.shard.world_size) == (11, 16)
    assert reader._node_ranks == range(8, 16)  # ranks 4-7 of the second node, two workers each
    assert reader._prefetcher is None  # the worker process is the prefetcher
