"""The training reader over an export (``open_release(ref, export=ID)``, the torch ``ReleaseDataset``):
the export's sequences as megatron-core's and streaming's own readers return them, deterministic,
sharded, resumable, split across real DataLoader workers; and "which samples were in global step t"
for our reader's order (``reader_step``), checked against iterating real DataLoaders, in-process, over
HTTP and in the CLI."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from tokenizers import Tokenizer

import lineage
from lineage import errors
from lineage.client import Client
from lineage.reader.torch import ReleaseDataLoader, ReleaseDataset
from lineage.service import schemas as S
from lineage.settings import Settings
from tests.support.api_world import ServerThread
from tests.support.cli import lineage as run_cli
from tests.support.training_export import EOD, publish_corpus_slice, streaming_dataset, train_tokenizer

REF = "deb@t"


@pytest.fixture(scope="module")
def tokenizer_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return train_tokenizer(tmp_path_factory.mktemp("tok") / "tokenizer.json")


@pytest.fixture
def local(settings: Settings, tmp_path: Path) -> Iterator[Client]:
    with Client(settings=settings) as c:
        publish_corpus_slice(c, tmp_path, REF)
        yield c


@pytest.fixture
def packed(local: Client, tokenizer_file: Path, tmp_path: Path) -> S.ExportResult:
    return local.export_release(
        REF, tmp_path / "out", "mds", tokenizer=tokenizer_file, seq_len=63, pack=True, shard_size=8 << 10
    )


def keep(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A collate function that keeps a batch's items (the export's last packed sequence is shorter)."""
    return items


def read(settings: Settings, export: str, **kw: Any) -> list[tuple[int, list[int]]]:
    return [
        (x["sequence"], x["tokens"].tolist()) for x in lineage.open_release(REF, export=export, settings=settings, **kw)
    ]


def test_the_reader_serves_the_exports_sequences_as_streaming_and_megatron_core_read_them(
    local: Client, packed: S.ExportResult, tokenizer_file: Path, tmp_path: Path, settings: Settings
) -> None:
    from megatron.core.datasets.indexed_dataset import IndexedDataset

    assert len(packed.shards) >= 3
    theirs = streaming_dataset(Path(packed.path), shuffle=False, batch_size=1)
    in_order = read(settings, packed.export_id, shuffle=False, block_sequences=5)
    assert [k for k, _ in in_order] == list(range(packed.sequences))
    assert [t for _, t in in_order] == [theirs[k]["tokens"].tolist() for k in range(packed.sequences)]

    mega = local.export_release(REF, tmp_path / "mega", "megatron", tokenizer=tokenizer_file, shard_size=8 << 10)
    assert len(mega.shards) >= 3
    expected = []
    for shard in mega.shards:
        indexed = IndexedDataset(str((Path(mega.path) / shard.files[0].path).with_suffix("")))
        expected += [indexed[i].tolist() for i in range(len(indexed))]
    shuffled = read(settings, mega.export_id, seed=3, block_sequences=4, window_blocks=2)
    assert sorted(k for k, _ in shuffled) == list(range(mega.sequences)) != [k for k, _ in shuffled]
    assert all(tokens == expected[k] for k, tokens in shuffled)
    assert shuffled == read(settings, mega.export_id, seed=3, block_sequences=4, window_blocks=2)  # deterministic
    (first,) = local.export_sequence(mega.export_id, shuffled[0][0]).samples  # the lineage of what was served
    tok = Tokenizer.from_file(str(tokenizer_file))
    assert tok.decode(shuffled[0][1][:-1]) and shuffled[0][1][-1] == tok.token_to_id(EOD) and first.doc_start == 0


def test_ranks_share_the_export_and_a_reader_resumes_exactly(packed: S.ExportResult, settings: Settings) -> None:
    whole = read(settings, packed.export_id, seed=1, epoch=2)
    shares = [read(settings, packed.export_id, seed=1, epoch=2, rank=r, world_size=3) for r in range(3)]
    assert [x for share in shares for x in share] == whole[: 3 * (len(whole) // 3)]  # contiguous slices

    reader = lineage.open_release(
        REF, export=packed.export_id, settings=settings, seed=1, epoch=2, rank=1, world_size=3
    )
    it = iter(reader)
    head = [next(it)["sequence"] for _ in range(7)]
    again = lineage.open_release(REF, export=packed.export_id, settings=settings, rank=1, world_size=3)
    again.load_state_dict(reader.state_dict())
    assert head + [x["sequence"] for x in again] == [k for k, _ in shares[1]]
    other = lineage.open_release(REF, export=packed.export_id, settings=settings, rank=1, world_size=2)
    with pytest.raises(errors.Invalid, match="world_size"):
        other.load_state_dict(reader.state_dict())
    with pytest.raises(errors.Invalid, match="is of release deb@t, not other@t"):
        lineage.open_release("other@t", export=packed.export_id, settings=settings)


def test_a_corrupt_shard_is_refused_before_it_is_served(packed: S.ExportResult, settings: Settings) -> None:
    shard = Path(packed.path) / packed.shards[1].files[0].path
    data = bytearray(shard.read_bytes())
    data[-1] ^= 0xFF
    shard.write_bytes(bytes(data))
    with pytest.raises(errors.Corrupt, match="the manifest says"):
        read(settings, packed.export_id, shuffle=False)


def test_the_torch_dataset_serves_tensors_through_workers_and_resumes(
    packed: S.ExportResult, settings: Settings
) -> None:
    def dataset() -> ReleaseDataset:
        return ReleaseDataset(REF, export=packed.export_id, rank=0, world_size=2, settings=settings, seed=7)

    def loader(ds: ReleaseDataset) -> ReleaseDataLoader:
        return ReleaseDataLoader(ds, batch_size=4, num_workers=2, collate_fn=keep)

    whole = [[(x["sequence"], x["tokens"]) for x in b] for b in loader(dataset())]
    flat = [k for b in whole for k, _ in b]
    assert sorted(flat) == sorted(k for k, _ in read(settings, packed.export_id, seed=7, world_size=2))
    assert all(isinstance(t, torch.Tensor) and t.dtype == torch.int64 for b in whole for _, t in b)
    ds = dataset()
    head = []
    for k, b in enumerate(loader(ds)):
        head.append([x["sequence"] for x in b])
        if k == 4:
            break
    again = dataset()
    again.load_state_dict(ds.state_dict())
    rest = [[x["sequence"] for x in b] for b in loader(again)]
    assert head + rest == [[k for k, _ in b] for b in whole]


def reader_job_batches(settings: Settings, export: str, job: dict[str, Any]) -> list[list[list[tuple[int, list[int]]]]]:
    """Per rank, the batches the job's real DataLoaders give: lists of (sequence, tokens)."""
    loader_args = {"batch_size", "num_workers", "drop_last"}
    ranks = []
    for rank in range(job["world_size"]):
        ds = ReleaseDataset(
            REF,
            export=export,
            rank=rank,
            settings=settings,
            **{k: v for k, v in job.items() if k not in loader_args},
        )
        loader = ReleaseDataLoader(ds, collate_fn=keep, **{k: v for k, v in job.items() if k in loader_args})
        ranks.append([[(x["sequence"], x["tokens"].tolist()) for x in b] for b in loader])
    return ranks


@pytest.mark.parametrize(
    "job",
    [
        {"seed": 5, "world_size": 2, "batch_size": 3, "num_workers": 2, "epoch": 1, "block_sequences": 8},
        {"seed": 0, "world_size": 3, "batch_size": 4, "num_workers": 3, "remainder": "pad", "drop_last": True},
        {"seed": 2, "world_size": 1, "batch_size": 5, "shuffle": False, "window_blocks": 1},
    ],
)
def test_which_samples_were_in_a_step_of_our_reader(
    local: Client, packed: S.ExportResult, settings: Settings, job: dict[str, Any]
) -> None:
    from api.app import create_app

    ranks = reader_job_batches(settings, packed.export_id, job)
    steps = len(ranks[0])
    assert steps > 3 and all(len(r) == steps for r in ranks)
    local.service.settings.single_user = True
    with ServerThread(create_app(local.service.settings, local.service)) as srv, Client(srv.url) as over_http:
        for step in (0, 1, steps // 2, steps - 1):
            answer = local.reader_step(packed.export_id, step, **job)
            assert answer == over_http.reader_step(packed.export_id, step, **job)
            assert [b.rank for b in answer.ranks] == list(range(job["world_size"]))
            for batch, served in zip(answer.ranks, (r[step] for r in ranks), strict=True):
                assert [q.sequence for q in batch.sequences] == [k for k, _ in served]
                for q, (_k, tokens) in zip(batch.sequences, served, strict=True):
                    assert q.samples[0].seq_start == 0 and q.samples[-1].seq_end == len(tokens)
                    assert q.samples == local.export_sequence(packed.export_id, q.sequence).samples
        with pytest.raises(errors.Invalid, match="beyond epoch"):
            over_http.reader_step(packed.export_id, steps, **job)
        with pytest.raises(errors.Invalid, match="more ranks than"):
            over_http.reader_step(packed.export_id, 0, **{**job, "world_size": packed.sequences + 1})
        with pytest.raises(errors.Invalid, match="too large to answer"):
            local.reader_step(packed.export_id, 0, **{**job, "world_size": 1 << 10, "batch_size": 1 << 11})


def test_the_reader_step_answers_in_the_cli(
    local: Client, packed: S.ExportResult, settings: Settings, home: Path
) -> None:
    job = {"seed": 5, "world_size": 2, "batch_size": 3, "num_workers": 2}
    args = ["--seed", "5", "--world-size", "2", "--batch-size", "3", "--num-workers", "2", "--json"]
    shown = S.ReaderStep.model_validate_json(run_cli(home, "reader-step", packed.export_id, "2", *args).stdout)
    assert shown == local.reader_step(packed.export_id, 2, **job)
    served = reader_job_batches(settings, packed.export_id, job)
    assert [q.sequence for q in shown.ranks[1].sequences] == [k for k, _ in served[1][2]]
    text = run_cli(home, "reader-step", packed.export_id, "2", *args[:-1]).stdout
    assert shown.ranks[0].sequences[0].samples[0].sample_id in text
    refused = run_cli(home, "reader-step", packed.export_id, "9999", *args, check=False)
    assert refused.returncode == 3 and "beyond epoch" in refused.stderr


def test_a_job_that_only_knows_the_service_reads_the_export_the_same(
    local: Client, packed: S.ExportResult, settings: Settings
) -> None:
    from api.app import create_app

    local.service.settings.single_user = True
    with ServerThread(create_app(local.service.settings, local.service)) as srv:
        over_http = [
            (x["sequence"], x["tokens"].tolist())
            for x in lineage.open_release(REF, export=packed.export_id, url=srv.url, seed=4)
        ]
    assert over_http == read(settings, packed.export_id, seed=4)
    assert local.list_reads(REF).total >= 2  # each open was recorded against the release
