"""The training reader tests' release size and how they read a release whole."""

from __future__ import annotations

import lineage
from lineage.settings import Settings

N = 301  # a prime: every world size leaves a remainder


def read_all(ref: str, settings: Settings, **kw) -> list[str]:
    reader = lineage.open_release(ref, settings=settings, columns=["sample_id"], **kw)
    return [sid for batch in reader for sid in batch.column("sample_id").to_pylist()]
