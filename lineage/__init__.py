"""lineage-ledger: versioned LLM training data with sample-level lineage.

Imports stay lazy so the CLI starts fast: ``lineage.open_release`` loads the reader on first use.
"""

from __future__ import annotations

from typing import Any

__all__ = ["open_release"]


def __getattr__(name: str) -> Any:
    if name == "open_release":
        from lineage.reader import open_release

        return open_release
    raise AttributeError(f"module 'lineage' has no attribute {name!r}")
