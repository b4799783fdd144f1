"""lineage-ledger. ``lineage.Client`` is imported lazily: ``import lineage`` stays cheap for the CLI."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lineage.client import Client

__all__ = ["Client"]


def __getattr__(name: str) -> Any:
    if name == "Client":
        from lineage.client import Client

        return Client
    raise AttributeError(f"module 'lineage' has no attribute {name!r}")
