"""lineage-ledger: versioned LLM training data with sample-level lineage.

Imports stay lazy so the CLI starts fast: ``lineage.Client`` and ``lineage.open_release`` load
their modules on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lineage.client import Client
    from lineage.reader import open_release

__all__ = ["Client", "open_release"]


def __getattr__(name: str) -> Any:
    if name == "Client":
        # start-up: keeps the SDK (SQLAlchemy, DuckDB, deltalake) out of `import lineage`
        from lineage.client import Client

        return Client
    if name == "open_release":
        from lineage.reader import open_release  # start-up: keeps the reader (pyarrow) out of `import lineage`

        return open_release
    raise AttributeError(f"module 'lineage' has no attribute {name!r}")
