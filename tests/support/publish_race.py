"""Force the race between concurrent publishes of one tag, instead of hoping for it.

Every publisher waits just before its ``INSERT INTO releases`` until all of them have got there,
so each has already looked for the tag and found nothing. In one process: :func:`insert_barrier`.
Across processes: ``python -m tests.support.publish_race ARGS`` is the ``lineage`` CLI with the same wait,
on a folder of marker files (``PUBLISH_BARRIER_DIR``, ``PUBLISH_BARRIER_PARTIES``).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine

TIMEOUT = 60.0


def _before_release_insert(wait: Callable[[], None]) -> Callable[..., None]:
    def hook(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.lstrip().upper().startswith("INSERT INTO RELEASES"):
            wait()

    return hook


@contextmanager
def insert_barrier(parties: int, target: Any = Engine) -> Iterator[threading.Barrier]:
    """Threads of this process (on ``target``: an engine, or every engine) meet before the insert."""
    barrier = threading.Barrier(parties, timeout=TIMEOUT)
    hook = _before_release_insert(barrier.wait)
    event.listen(target, "before_cursor_execute", hook)
    try:
        yield barrier
    finally:
        event.remove(target, "before_cursor_execute", hook)


def _wait_for_processes() -> None:
    folder, parties = Path(os.environ["PUBLISH_BARRIER_DIR"]), int(os.environ["PUBLISH_BARRIER_PARTIES"])
    (folder / str(os.getpid())).touch()
    deadline = time.monotonic() + TIMEOUT
    while sum(1 for _ in folder.iterdir()) < parties:
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {sum(1 for _ in folder.iterdir())} of {parties} publishers reached the insert")
        time.sleep(0.01)


if __name__ == "__main__":
    from lineage.cli.main import main

    event.listen(Engine, "before_cursor_execute", _before_release_insert(_wait_for_processes))
    main()
