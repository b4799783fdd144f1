"""Process entry points for concurrent-writer tests (importable by ``spawn`` children).

They live in tests/support, not in a test module, so a spawned child can import them whatever
pytest's import mode is. deltalake must not be used after ``fork``: use the ``spawn`` context.
"""

from __future__ import annotations

import time
from typing import Any

import pyarrow as pa
from deltalake import write_deltalake


def append_rows(uri: str, options: dict[str, str], writer: int, rows: int, barrier: Any, results: Any) -> None:
    """Wait at ``barrier`` for the other writers, then append ``rows`` rows tagged ``writer``."""
    table = pa.table(
        {
            "writer": pa.array([writer] * rows, pa.int32()),
            "seq": pa.array(range(rows), pa.int32()),
        }
    )
    barrier.wait(timeout=60)
    started = time.time()
    write_deltalake(uri, table, mode="append", storage_options=options)
    results.put((writer, started, time.time()))
