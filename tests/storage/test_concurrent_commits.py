"""Concurrent Delta commits to the Ceph tier lose nothing.

delta-rs commits a version by PUTting ``_delta_log/<n>.json`` with ``If-None-Match: *``; RGW
refuses the second writer of the same version (HTTP 412), which then rebases and retries. Here
several *processes* (spawned: deltalake panics after fork) are released at once by a barrier.
"""

from __future__ import annotations

import multiprocessing as mp

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from storage.tier import Tier
from tests.support.delta_writers import append_rows

WRITERS = 6
ROWS_PER_WRITER = 50
MAX_ROUNDS = 3  # a round without any collision proves nothing about conditional PUTs: run another


def _run_round(uri: str, options: dict[str, str], first_writer: int) -> None:
    """Release WRITERS spawned processes at once; each appends its own rows in one commit."""
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(WRITERS), ctx.Queue()
    writers = range(first_writer, first_writer + WRITERS)
    procs = [
        ctx.Process(target=append_rows, args=(uri, options, w, ROWS_PER_WRITER, barrier, results)) for w in writers
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    exit_codes = [p.exitcode for p in procs]
    for p in procs:
        if p.is_alive():
            p.kill()
    assert exit_codes == [0] * WRITERS, f"writer processes failed: {exit_codes}"
    assert sorted(results.get(timeout=5)[0] for _ in writers) == list(writers)


def test_concurrent_appends_lose_nothing(ceph_tier: Tier) -> None:
    uri, options = ceph_tier.uri("releases/concurrent"), ceph_tier.storage_options
    schema = pa.schema([("writer", pa.int32()), ("seq", pa.int32())])
    write_deltalake(uri, schema.empty_table(), storage_options=options)  # version 0

    retries = 0
    for round_no in range(MAX_ROUNDS):
        _run_round(uri, options, round_no * WRITERS)
        commits = (round_no + 1) * WRITERS
        table = DeltaTable(uri, storage_options=options)
        assert table.version() == commits
        history = sorted(table.history(), key=lambda h: h["version"])
        assert [h["version"] for h in history] == list(range(commits + 1)), "versions must be contiguous"
        appends = history[1:]
        assert all(h["operationParameters"]["mode"] == "Append" for h in appends)
        assert [h["operationMetrics"]["num_added_rows"] for h in appends] == [ROWS_PER_WRITER] * commits

        data = table.to_pyarrow_dataset(filesystem=ceph_tier.subtree("releases/concurrent")).to_table()
        got = sorted(zip(data.column("writer").to_pylist(), data.column("seq").to_pylist(), strict=True))
        assert got == [(w, s) for w in range(commits) for s in range(ROWS_PER_WRITER)], "an append was lost"

        # Did writers really collide? Losers of a version get HTTP 412 from RGW and retry.
        retries = sum(h["operationMetrics"].get("num_retries", 0) for h in appends)
        if retries:
            break
    assert retries > 0, f"no commit conflict in {MAX_ROUNDS} rounds: conditional PUTs were not exercised"


@pytest.mark.parametrize("mode", ["error"])
def test_second_create_of_same_table_is_refused(ceph_tier: Tier, mode: str) -> None:
    """Creating a table that exists fails instead of silently overwriting its version 0."""
    uri, options = ceph_tier.uri("releases/once"), ceph_tier.storage_options
    write_deltalake(uri, pa.table({"a": [1]}), storage_options=options, mode=mode)
    with pytest.raises(Exception, match="(?i)exist"):
        write_deltalake(uri, pa.table({"a": [2]}), storage_options=options, mode=mode)
    assert DeltaTable(uri, storage_options=options).version() == 0
