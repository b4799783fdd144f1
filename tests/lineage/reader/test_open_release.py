"""The training reader in process: sharding, shuffling, resuming, verified reads and corruption."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlalchemy import select

import lineage
from lineage.catalog import Catalog, ReleaseRead
from lineage.reader.release_reader import ReleaseReader
from lineage.settings import Settings
from storage.verified import SETTLE_NS, ChecksumMismatch
from tests.support.helpers import CORRUPTIONS, corrupted
from tests.support.reader_helpers import N, read_all


def release_files(ref: str, settings: Settings, catalog: Catalog) -> list[Path]:
    """The release's data files on the local tier, in manifest order."""
    from lineage.releases import get_release

    with catalog.session() as s:
        m = get_release(s, ref).manifest
    return [Path(settings.tier_config("local").root) / m["data"]["table"] / f["path"] for f in m["files"]]


def test_every_sample_once_equal_shares_and_order_independent_of_world_size(release: str, settings: Settings) -> None:
    reference = read_all(release, settings, seed=3, batch_size=50)
    assert len(reference) == N and len(set(reference)) == N
    for world in (2, 3, 7, 16, 64):
        shares = [read_all(release, settings, seed=3, rank=r, world_size=world, batch_size=13) for r in range(world)]
        per_rank = N // world
        assert all(len(s) == per_rank for s in shares)
        assert [sid for s in shares for sid in s] == reference[: per_rank * world]


def test_padding_repeats_fewer_than_world_size_samples(release: str, settings: Settings) -> None:
    reference = read_all(release, settings, seed=1)
    world = 8
    shares = [read_all(release, settings, seed=1, rank=r, world_size=world, remainder="pad") for r in range(world)]
    flat = [sid for s in shares for sid in s]
    assert len({len(s) for s in shares}) == 1 and len(flat) == 38 * world
    assert flat[:N] == reference and flat[N:] == reference[: len(flat) - N] and len(flat) - N < world


def test_each_epoch_is_a_new_shuffle_across_the_whole_release(release: str, settings: Settings) -> None:
    natural = read_all(release, settings, shuffle=False)
    assert natural == sorted(natural)  # files are sorted by sample_id
    e0 = read_all(release, settings, seed=5, epoch=0)
    e1 = read_all(release, settings, seed=5, epoch=1)
    assert e0 != e1 and sorted(e0) == sorted(e1) == natural
    assert read_all(release, settings, seed=5, epoch=0) == e0  # reproducible
    # samples are shuffled, not only blocks: neighbours in the epoch are rarely neighbours in storage
    position = {sid: i for i, sid in enumerate(natural)}
    adjacent = sum(abs(position[a] - position[b]) == 1 for a, b in zip(e0, e0[1:], strict=False))
    assert adjacent < N // 10


def test_resume_continues_with_exactly_the_next_sample(release: str, settings: Settings) -> None:
    full = read_all(release, settings, seed=9, rank=1, world_size=3, batch_size=7)
    reader = lineage.open_release(
        release, settings=settings, seed=9, rank=1, world_size=3, batch_size=7, columns=["sample_id"], as_dicts=True
    )
    it = iter(reader)
    seen = [next(it)["sample_id"] for _ in range(23)]
    state = reader.state_dict()
    assert state["samples_consumed"] == 23 and state["epoch"] == 0 and state["seed"] == 9

    resumed = lineage.open_release(
        release, settings=settings, seed=0, rank=1, world_size=3, batch_size=7, columns=["sample_id"], as_dicts=True
    )
    resumed.load_state_dict(state)
    rest = [row["sample_id"] for row in resumed]
    assert seen + rest == full

    other = lineage.open_release(release, settings=settings, rank=0, world_size=4)
    with pytest.raises(ValueError, match="different world size"):
        other.load_state_dict(state)


def test_batches_have_the_requested_size_and_columns(release: str, settings: Settings) -> None:
    reader = lineage.open_release(release, settings=settings, batch_size=64, columns=["sample_id", "text"])
    batches = list(reader)
    assert all(isinstance(b, pa.RecordBatch) and b.schema.names == ["sample_id", "text"] for b in batches)
    assert [b.num_rows for b in batches] == [64, 64, 64, 64, 45]


def test_an_epoch_left_early_does_not_disturb_the_next(release: str, settings: Settings) -> None:
    reader = lineage.open_release(release, settings=settings, seed=4, batch_size=16, columns=["sample_id"])
    for _ in zip(range(2), reader, strict=False):  # leave epoch 0 after two batches
        pass
    reader.set_epoch(1)
    again = [sid for batch in reader for sid in batch.column("sample_id").to_pylist()]
    assert again == read_all(release, settings, seed=4, epoch=1, batch_size=16)


def _sample_ids_into(reader: ReleaseReader, queue: multiprocessing.Queue) -> None:
    queue.put([sid for batch in reader for sid in batch.column("sample_id").to_pylist()])


def test_a_forked_process_reads_with_threads_of_its_own(release: str, settings: Settings) -> None:
    reader = lineage.open_release(release, settings=settings, seed=2, batch_size=16, columns=["sample_id"])
    expected = [sid for batch in reader for sid in batch.column("sample_id").to_pylist()]  # threads started
    reader.set_epoch(0)
    fork = multiprocessing.get_context("fork")
    queue = fork.Queue()
    child = fork.Process(target=_sample_ids_into, args=(reader, queue))
    child.start()
    try:
        assert queue.get(timeout=60) == expected  # the parent's pools would never run there
    finally:
        child.join(timeout=10)
        child.kill()


def test_unknown_columns_are_refused_not_dropped(release: str, settings: Settings) -> None:
    with pytest.raises(ValueError, match="has no column nope, txet; it has sample_id, text"):
        lineage.open_release(release, settings=settings, columns=["text", "txet", "nope"])


def test_decode_threads_do_not_change_what_is_read(release: str, settings: Settings) -> None:
    assert read_all(release, settings, seed=5, decode_threads=1) == read_all(
        release, settings, seed=5, decode_threads=3
    )


def settle(paths: list[Path]) -> None:
    """Wait until the files changed long enough ago to be remembered as verified (see
    :data:`storage.verified.SETTLE_NS`)."""
    newest = max(max(p.stat().st_mtime_ns, p.stat().st_ctime_ns) for p in paths)
    time.sleep(max(0, newest + SETTLE_NS - time.time_ns()) / 1e9 + 0.01)


def markers(settings: Settings) -> list[Path]:
    directory = Path(settings.home) / "verified"
    return sorted(directory.iterdir()) if directory.exists() else []


@pytest.mark.parametrize("how", CORRUPTIONS)
def test_a_file_changed_after_it_was_verified_is_hashed_again(
    how: str, release: str, settings: Settings, catalog: Catalog
) -> None:
    files = release_files(release, settings, catalog)
    settle(files)
    expected = read_all(release, settings)
    assert len(markers(settings)) == len(files)  # each file verified once: the next open trusts the markers
    victim = files[1]
    original = victim.read_bytes()
    victim.write_bytes(corrupted(original, how))
    with pytest.raises(ChecksumMismatch, match=rf"no good copy of \S*/{victim.name}: local: .*manifest says"):
        read_all(release, settings)
    victim.write_bytes(original)
    assert read_all(release, settings) == expected


def test_a_file_hashed_just_after_it_changed_is_hashed_again_next_time(
    release: str, settings: Settings, catalog: Catalog
) -> None:
    """A same-size rewrite in the same clock tick as the hash would keep the file's identity, so a
    file that changed just before it was hashed is not remembered (git's "racily clean" rule)."""
    files = release_files(release, settings, catalog)
    settle(files)
    files[0].write_bytes(files[0].read_bytes())  # a write: new timestamps, same bytes
    read_all(release, settings)
    assert len(markers(settings)) == len(files) - 1
    settle(files)
    read_all(release, settings)
    assert len(markers(settings)) == len(files)


def test_a_replica_tier_verify_found_corrupt_is_never_read(release: str, settings: Settings, catalog: Catalog) -> None:
    from typer.testing import CliRunner

    from lineage.cli.main import build_app

    files = release_files(release, settings, catalog)
    settle(files)
    expected = read_all(release, settings)
    assert len(markers(settings)) == len(files)
    victim = files[2]
    original = victim.read_bytes()
    victim.write_bytes(corrupted(original, "middle"))
    cli, app = CliRunner(), build_app()
    found = cli.invoke(app, ["tier", "verify", release, "--to", "local"])
    said = found.output.replace("\n", "")  # the console wraps long file names (named after their first key)
    assert found.exit_code == 11 and victim.name in said and "corrupt" in said  # Corrupt
    assert markers(settings) == []  # this host hashes every checked file again
    # the only replica is corrupt: no fallback to the manifest's table, even for the files that are intact
    refused = rf"no good copy of \S*/{files[0].name}: local: the replica is corrupt \(\S*/{victim.name}: .*\), not read"
    with pytest.raises(ChecksumMismatch, match=refused):
        read_all(release, settings)
    victim.write_bytes(original)  # repaired, but the catalog still says corrupt: still never read
    with pytest.raises(ChecksumMismatch, match=refused):
        read_all(release, settings)
    assert cli.invoke(app, ["tier", "verify", release, "--to", "local"]).exit_code == 0
    assert read_all(release, settings) == expected


def test_only_a_release_with_no_replica_recorded_is_read_from_its_manifests_table(
    release: str, settings: Settings, catalog: Catalog
) -> None:
    from lineage.catalog import Replica

    with catalog.session() as s:
        for replica in s.scalars(select(Replica)):
            s.delete(replica)
    reader = lineage.open_release(release, settings=settings)
    assert [(loc.tier, loc.state) for loc in reader.files.locations] == [("local", "unrecorded")]
    assert sum(b.num_rows for b in reader) == N


def test_each_open_is_recorded(release: str, settings: Settings, catalog: Catalog) -> None:
    for rank in range(2):
        lineage.open_release(release, settings=settings, rank=rank, world_size=2, job="train-42")
    with catalog.session() as s:
        reads = s.scalars(select(ReleaseRead)).all()
    assert [(r.job, r.world_size, r.rank) for r in reads] == [("train-42", 2, 0), ("train-42", 2, 1)]


def test_ranks_of_a_node_decode_each_window_once_and_leave_nothing_behind(
    release: str, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.reader_shared_dir = tmp_path / "shm"
    decoded: list[tuple[int, tuple]] = []
    original = ReleaseReader._read_window

    def counting(self: ReleaseReader, blocks: tuple) -> pa.Table:
        decoded.append((self.shard.rank // 4, blocks))
        return original(self, blocks)

    monkeypatch.setattr(ReleaseReader, "_read_window", counting)
    private = [read_all(release, settings, seed=2, rank=r, world_size=8, batch_size=5) for r in range(8)]
    assert len(decoded) > len(set(decoded))  # without sharing, edge windows are decoded by two ranks
    decoded.clear()
    shared = [
        read_all(release, settings, seed=2, rank=r, world_size=8, batch_size=5, local_world_size=4) for r in range(8)
    ]
    assert shared == private
    assert len(decoded) == len(set(decoded))  # two nodes of 4 ranks: each node decodes a window once
    assert not [p for p in (tmp_path / "shm").rglob("*") if p.is_file()]  # the last sharer deleted each window


def test_an_unreadable_shared_window_is_decoded_instead(release: str, settings: Settings, tmp_path: Path) -> None:
    settings.reader_shared_dir = tmp_path / "shm"
    expected = [read_all(release, settings, seed=4, rank=r, world_size=4, batch_size=8) for r in range(4)]
    first = lineage.open_release(release, settings=settings, seed=4, rank=0, world_size=4, local_world_size=4)
    sum(b.num_rows for b in first)  # publishes the window it shares with rank 1
    (published,) = (tmp_path / "shm").rglob("*.arrow")
    published.write_bytes(b"not arrow")
    got = [
        read_all(release, settings, seed=4, rank=r, world_size=4, batch_size=8, local_world_size=4) for r in (1, 2, 3)
    ]
    assert got == expected[1:]


def test_without_prefetch_windows_decode_in_the_consumers_thread(
    release: str, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[str] = []
    original = ReleaseReader._read_window

    def recording(self: ReleaseReader, blocks: tuple) -> pa.Table:
        threads.append(threading.current_thread().name)
        return original(self, blocks)

    monkeypatch.setattr(ReleaseReader, "_read_window", recording)
    expected = read_all(release, settings, seed=5, rank=1, world_size=3, batch_size=7)
    assert threads and all(name.startswith("prefetch") for name in threads)
    threads.clear()
    got = read_all(release, settings, seed=5, rank=1, world_size=3, batch_size=7, prefetch=False)
    assert got == expected
    assert threads and set(threads) == {threading.current_thread().name}


def test_strings_come_as_views_unless_asked_otherwise(release: str, settings: Settings) -> None:
    viewed = lineage.open_release(release, settings=settings, seed=1, batch_size=64, columns=["sample_id", "text"])
    plain = lineage.open_release(
        release, settings=settings, seed=1, batch_size=64, columns=["sample_id", "text"], string_views=False
    )
    a, b = list(viewed), list(plain)
    assert a[0].schema.field("text").type == pa.string_view() and b[0].schema.field("text").type == pa.string()
    assert [x.to_pylist() for x in a] == [y.to_pylist() for y in b]


def test_release_files_decode_straight_into_views_and_older_files_are_cast(
    release: str, settings: Settings, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lineage.reader import release_reader

    decoded: list[pa.DataType] = []
    original = release_reader.as_views

    def recording(table: pa.Table) -> pa.Table:
        decoded.append(table.schema.field("sample_id").type)
        return original(table)

    monkeypatch.setattr(release_reader, "as_views", recording)
    expected = read_all(release, settings, seed=3)
    assert decoded and set(decoded) == {pa.string_view()}  # no cast: the files leave the layout to us

    # a release written before its files left the Arrow schema out: the same samples, cast to views
    for path in release_files(release, settings, catalog):
        old = pq.ParquetFile(path)
        groups = [old.read_row_group(g) for g in range(old.metadata.num_row_groups)]
        with pq.ParquetWriter(path, old.schema_arrow, store_schema=True) as writer:
            for group in groups:
                writer.write_table(group, row_group_size=group.num_rows)
    decoded.clear()
    assert read_all(release, settings, seed=3, verify=False) == expected
    assert decoded and set(decoded) == {pa.string()}


def test_a_shared_folder_others_can_write_is_not_used(release: str, settings: Settings, tmp_path: Path) -> None:
    settings.reader_shared_dir = tmp_path / "shm"
    private = tmp_path / "shm" / f"uid-{os.getuid()}"
    private.mkdir(parents=True)
    private.chmod(0o777)  # as if someone else had made it first
    expected = [read_all(release, settings, seed=6, rank=r, world_size=4) for r in range(4)]
    got = [read_all(release, settings, seed=6, rank=r, world_size=4, local_world_size=4) for r in range(4)]
    assert got == expected and not list(private.iterdir())


def test_import_lineage_reader_stays_light() -> None:
    """A training job that reads releases over HTTP never needs the catalog's database driver, DuckDB,
    deltalake or the HTTP client of the SDK at import: those load only with the source that needs them."""
    code = (
        "import sys, lineage.reader; heavy = [m for m in ('sqlalchemy', 'duckdb', 'deltalake', 'httpx', 'fastapi') "
        "if m in sys.modules]; assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[3])
