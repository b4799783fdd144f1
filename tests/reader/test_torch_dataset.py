from __future__ import annotations

import torch
from torch.utils.data import DataLoader

from lineage.reader.torch import ReleaseDataset
from lineage.settings import Settings
from tests.reader.test_open_release import N, read_all, release  # noqa: F401  (fixture)


def test_dataloader_workers_split_the_rank_share_without_overlap(release: str, settings: Settings) -> None:  # noqa: F811
    ds = ReleaseDataset(release, rank=0, world_size=1, settings=settings, columns=["sample_id"], seed=4)
    loader = DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context="spawn")
    seen = [row["sample_id"] for row in loader]
    assert len(seen) == len(set(seen)) >= N - 1  # 2 workers: at most one sample of remainder dropped
    assert set(seen) <= set(read_all(release, settings, seed=4))


def test_resume_in_process(release: str, settings: Settings) -> None:  # noqa: F811
    ds = ReleaseDataset(release, settings=settings, columns=["sample_id"], seed=2)
    it = iter(ds)
    first = [next(it)["sample_id"] for _ in range(10)]
    state = ds.state_dict()
    again = ReleaseDataset(release, settings=settings, columns=["sample_id"], seed=2)
    again.load_state_dict(state)
    rest = [row["sample_id"] for row in again]
    assert first + rest == read_all(release, settings, seed=2)
    assert torch.tensor([len(rest)]).item() == N - 10
