from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from torch.utils.data import DataLoader

import lineage.reader.torch as reader_torch
from lineage.errors import Invalid
from lineage.reader.torch import ReleaseDataLoader, ReleaseDataset
from lineage.settings import Settings
from tests.support.reader_helpers import N, read_all


@pytest.mark.parametrize("remainder", ["drop", "pad"])
def test_dataloader_workers_deliver_each_sample_of_the_rank_share_exactly_once(
    release: str, settings: Settings, remainder: str
) -> None:
    """Regression: workers used to act as ranks of world_size * num_workers, so with drop one rank of
    N = 301 samples and 2 workers delivered 300 (and with 3 ranks of 3 workers, 297 of 300)."""
    ds = ReleaseDataset(release, settings=settings, columns=["sample_id"], seed=4, remainder=remainder)
    loader = DataLoader(ds, batch_size=None, num_workers=2)
    seen = [row["sample_id"] for row in loader]
    assert sorted(seen) == sorted(read_all(release, settings, seed=4)) and len(seen) == N
    for rank in range(3):
        ds = ReleaseDataset(
            release, rank=rank, world_size=3, settings=settings, columns=["sample_id"], seed=4, remainder=remainder
        )
        got = [r["sample_id"] for r in DataLoader(ds, batch_size=None, num_workers=3)]
        share = read_all(release, settings, seed=4, rank=rank, world_size=3, remainder=remainder)
        assert sorted(got) == sorted(share) and len(got) == len(share) == (100 if remainder == "drop" else 101)


@pytest.mark.parametrize(("workers", "batch", "drop_last", "stop"), [(2, 7, False, 5), (3, 8, True, 8)])
def test_state_dict_with_workers_resumes_exactly(
    release: str, settings: Settings, workers: int, batch: int, drop_last: bool, stop: int
) -> None:
    """Regression: state_dict() with num_workers > 0 raised "before iteration started". Through a
    ReleaseDataLoader it works, and the resumed loader gives exactly the batches the whole run would."""

    def loader(ds: ReleaseDataset) -> ReleaseDataLoader:
        return ReleaseDataLoader(ds, batch_size=batch, drop_last=drop_last, num_workers=workers)

    def dataset() -> ReleaseDataset:
        return ReleaseDataset(release, rank=1, world_size=2, settings=settings, columns=["sample_id"], seed=9)

    whole = [b["sample_id"] for b in loader(dataset())]
    ds = dataset()
    first = []
    for k, b in enumerate(loader(ds)):
        first.append(b["sample_id"])
        if k + 1 == stop:
            break
    state = ds.state_dict()
    assert state["num_workers"] == workers
    again = dataset()
    again.load_state_dict(state)
    resumed = loader(again)
    rest = []
    for k, b in enumerate(resumed):
        rest.append(b["sample_id"])
        if k == 2:  # and a second interruption, from the resumed loader's own state
            break
    third = dataset()
    third.load_state_dict(resumed.state_dict())
    rest += [b["sample_id"] for b in loader(third)]
    assert first + rest == whole
    flat = [s for b in whole for s in b]
    pieces = [150 // workers + (p < 150 % workers) for p in range(workers)]  # rank 1's 150 samples, split
    assert len(flat) == len(set(flat)) == sum(n - n % batch if drop_last else n for n in pieces)


def test_state_dict_of_a_plain_dataloader_with_workers_is_refused_clearly(release: str, settings: Settings) -> None:
    ds = ReleaseDataset(release, settings=settings, columns=["sample_id"])
    next(iter(DataLoader(ds, batch_size=4, num_workers=1)))
    with pytest.raises(Invalid, match="ReleaseDataLoader"):
        ds.state_dict()


def test_a_state_of_other_workers_is_refused(release: str, settings: Settings) -> None:
    ds = ReleaseDataset(release, settings=settings, columns=["sample_id"])
    next(iter(ReleaseDataLoader(ds, batch_size=4, num_workers=0)))
    again = ReleaseDataset(release, settings=settings, columns=["sample_id"])
    again.load_state_dict(ds.state_dict())
    with pytest.raises(Invalid, match="1 DataLoader worker"):
        iter(ReleaseDataLoader(again, batch_size=4, num_workers=2)).__next__()


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


def test_a_worker_reads_a_piece_of_its_rank_and_shares_the_cores_without_a_prefetch_thread(
    release: str,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")  # 4 ranks on this node, 2 DataLoader workers each
    monkeypatch.setattr(reader_torch, "get_worker_info", lambda: SimpleNamespace(num_workers=2, id=1))
    ds = ReleaseDataset(release, rank=5, world_size=8, settings=settings)
    iter(ds)
    reader = ds._reader
    assert reader is not None
    assert (reader.shard.rank, reader.shard.world_size, reader.shard.part, reader.shard.parts) == (5, 8, 1, 2)
    assert reader._node_ranks == range(4, 8)  # ranks 4-7 of the second node
    assert reader._prefetcher is None  # the worker process is the prefetcher
