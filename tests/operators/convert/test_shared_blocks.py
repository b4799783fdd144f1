"""Blocks handed to parser processes through shared memory (operators/convert/shared_blocks.py).

The columns that come back are the worker's own :func:`fast_columns`, and no segment outlives its block:
not after a whole file, not when the reader stops early, not when the parent is interrupted, and not when
it is killed (its workers exit, and the resource tracker unlinks what they left). A /dev/shm without room
for the blocks slows the parse down and nothing else.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import Future, wait
from datetime import timedelta
from multiprocessing.shared_memory import SharedMemory
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from operators.convert import jsonl_blocks, shared_blocks
from operators.convert.json_objects import BlockFields, fast_columns
from operators.convert.operator import _parsed
from operators.convert.readers import ReadOptions
from storage.tier import local_tier

ROOT = Path(__file__).resolve().parents[3]
SHM = Path("/dev/shm")


def segments() -> set[str]:
    """Names of the shared memory segments there are now (multiprocessing names them ``psm_*``)."""
    return {p.name for p in SHM.glob("psm_*")}


def gone(name: str) -> bool:
    try:
        SharedMemory(name).close()
    except FileNotFoundError:
        return True
    return False


line = st.one_of(
    st.builds(
        lambda text, n: json.dumps({"text": text, "id": n, "n": n}, ensure_ascii=n % 2 == 0).encode(),
        st.text(max_size=30),
        st.integers(0, 9),
    ),
    st.binary(max_size=20).map(lambda b: b.replace(b"\n", b" ")),
)


@settings(max_examples=60, deadline=timedelta(seconds=5), suppress_health_check=[HealthCheck.too_slow], database=None)
@given(lines=st.lists(line, max_size=12), id_field=st.sampled_from([None, "id"]))
def test_shared_columns_are_the_workers_columns_and_leave_no_segment(lines: list[bytes], id_field: str | None) -> None:
    """Blocks of nothing but bad lines, or of no line at all, give empty buffers (a segment cannot be empty)."""
    segment, handle = shared_blocks.share_lines(lines)
    try:
        shared = shared_blocks.parse_shared(handle, BlockFields("text", id_field, "d", "f.jsonl"), 3)
    finally:
        segment.close()
        segment.unlink()
    assert shared_blocks.take_columns(shared) == fast_columns(lines, BlockFields("text", id_field, "d", "f.jsonl"), 3)
    assert gone(handle.name) and gone(shared.name)


@pytest.fixture()
def blocks_file(tmp_path: Path) -> Path:
    lines = [json.dumps({"text": f"doc {i} é", "n": i}) for i in range(400)]
    lines[33] = '{"text": "cut'
    path = tmp_path / "f.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _items(path: Path) -> object:
    return jsonl_blocks.read_blocks(local_tier(path.parent).filesystem, str(path), ReadOptions(1 << 20, batch_rows=9))


def test_no_segment_outlives_a_file_or_a_reader_that_stops_early(blocks_file: Path) -> None:
    before = segments()
    made = [m for _, m in _parsed(_items(blocks_file), BlockFields("text", None, "d", "f"), 1, False)]
    assert sum(m is not None for m in made) == len(made) - 1 == 44  # every block but the first, by the worker
    assert segments() == before
    reader = _parsed(_items(blocks_file), BlockFields("text", None, "d", "f"), 1, False)
    for _ in range(3):  # blocks in flight in the worker, and columns it made that nobody takes
        next(reader)
    time.sleep(0.3)
    reader.close()
    assert segments() == before


_KILLED = """
import os, signal, sys
import multiprocessing
from operators.convert import jsonl_blocks
from operators.convert.json_objects import BlockFields
from operators.convert.operator import _parsed
from operators.convert.readers import ReadOptions
from storage.tier import local_tier

if __name__ == "__main__":
    path = sys.argv[1]
    items = jsonl_blocks.read_blocks(local_tier("/").filesystem, path, ReadOptions(1 << 20, batch_rows=9))
    for n, (_, made) in enumerate(_parsed(items, BlockFields("text", None, "d", "f"), 1, False)):
        if made is not None:
            print(" ".join(str(p.pid) for p in multiprocessing.active_children()), flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_parser_worker_exits_when_its_parent_is_killed(blocks_file: Path) -> None:
    """A worker blocked on its call queue never saw the parent go (it holds that pipe's write end too): it
    stayed, and so did the segments of the blocks it held, until someone killed it."""
    before = segments()
    done = subprocess.run([sys.executable, "-c", _KILLED, str(blocks_file)], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == -9, done.stderr
    workers = [int(pid) for pid in done.stdout.split()]
    assert workers
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (any(_alive(pid) for pid in workers) or segments() - before):
        time.sleep(0.1)
    assert not [pid for pid in workers if _alive(pid)], "a parser worker outlived its parent"
    assert segments() - before == set(), "a block's segment outlived the parse"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie has exited: nobody reaped it yet
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"


def test_without_room_in_dev_shm_a_block_is_parsed_here_and_columns_come_through_the_pipe(
    blocks_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No room for the parent's segment: the builder parses the block (None); none for the worker's: its
    columns come back as they are. Either way the same columns, and no segment left."""
    lines = [json.dumps({"text": f"doc {i}", "id": i}).encode() for i in range(5)]
    segment, handle = shared_blocks.share_lines(lines)

    def no_room(size: int) -> SharedMemory:
        raise shared_blocks.NoRoom(f"no room for {size}")

    monkeypatch.setattr(shared_blocks, "_segment", no_room)
    try:
        shared = shared_blocks.parse_shared(handle, BlockFields("text", "id", "d", "f.jsonl"), 0)
    finally:
        segment.close()
        segment.unlink()
    assert shared_blocks.take_columns(shared) == fast_columns(lines, BlockFields("text", "id", "d", "f.jsonl"), 0)
    before = segments()
    made = [m for _, m in _parsed(_items(blocks_file), BlockFields("text", None, "d", "f"), 1, False)]
    assert len(made) == 45 and all(m is None for m in made)
    assert segments() == before


_SMALL_SHM = """
import json, sys
from pathlib import Path
from operators.convert import jsonl_blocks
from operators.convert.json_objects import BlockFields, fast_columns
from operators.convert.operator import _parsed
from operators.convert.readers import ReadOptions
from storage.tier import local_tier

if __name__ == "__main__":
    path = sys.argv[1]
    items = jsonl_blocks.read_blocks(local_tier("/").filesystem, path, ReadOptions(1 << 20, batch_rows=9))
    here = same = 0
    for item, made in _parsed(items, BlockFields("text", None, "d", "f"), 2, False):
        if made is None:
            here += 1
        else:
            same += made == fast_columns(item.lines, BlockFields("text", None, "d", "f"), item.row)
    print(json.dumps({"here": here, "same": same, "left": sorted(p.name for p in Path("/dev/shm").iterdir())}))
"""


@pytest.mark.parametrize("options", ["size=1m", "size=1m,ro"])
def test_a_dev_shm_too_small_for_the_blocks_slows_the_parse_but_never_kills_it(tmp_path: Path, options: str) -> None:
    """A private 1 MiB /dev/shm (Docker's is 64 MB) and blocks of about 360 KB: tmpfs granted the segments
    and the process died of SIGBUS at the first page past the limit (exit 135, no exception); a read-only
    one failed the run with OSError. Now every block is parsed, by a worker or here, to the same columns,
    and no segment is left."""
    path = tmp_path / "big.jsonl"
    path.write_text("".join(json.dumps({"text": "w " * 20000 + str(i)}) + "\n" for i in range(90)))
    script = tmp_path / "small_shm.py"
    script.write_text(_SMALL_SHM)
    mount = f"mount -t tmpfs -o {options} tmpfs /dev/shm && exec {sys.executable} {script} {path}"
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", mount],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-3000:])
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["here"] + found["same"] == 10, found
    if options.endswith("ro"):
        assert found["here"] == 10, found
    else:  # the first block's segment fits; three of them do not
        assert found["same"] >= 1 and found["here"] >= 2, found
    assert found["left"] == [], found


def test_columns_made_while_the_parent_is_interrupted_are_not_left_behind(
    blocks_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while the parent waits for a block's columns: the worker still makes them (the pool is shut
    down waiting), and they were no longer among the blocks in flight, so their segment stayed."""
    real = Future.result
    interrupted: list[str] = []

    def result(self: Future, timeout: float | None = None) -> object:
        wait([self])
        if isinstance(real(self), shared_blocks.SharedColumns) and not interrupted:
            interrupted.append(real(self).name)
            raise KeyboardInterrupt
        return real(self, timeout)

    monkeypatch.setattr(Future, "result", result)
    before = segments()
    with pytest.raises(KeyboardInterrupt):
        for _ in _parsed(_items(blocks_file), BlockFields("text", None, "d", "f"), 1, False):
            pass
    assert interrupted and segments() == before
