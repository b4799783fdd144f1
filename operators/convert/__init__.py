"""Convert raw files (JSONL, Parquet, CSV, text) into samples, quarantining bad records.

The names below load their modules on first use: a parser worker process imports
:mod:`operators.convert.json_objects` alone, and this package's own import must not bring pyarrow in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from operators.convert.operator import ConvertOperator, ConvertParams
    from operators.convert.plan import CHUNK_SCHEMA, SourceSpec, plan_chunks

__all__ = ["CHUNK_SCHEMA", "ConvertOperator", "ConvertParams", "SourceSpec", "plan_chunks"]


def __getattr__(name: str) -> Any:
    if name in ("ConvertOperator", "ConvertParams"):
        from operators.convert import operator  # start-up: pyarrow, not in a parser worker

        return getattr(operator, name)
    if name in ("CHUNK_SCHEMA", "SourceSpec", "plan_chunks"):
        from operators.convert import plan  # start-up: pyarrow, not in a parser worker

        return getattr(plan, name)
    raise AttributeError(f"module 'operators.convert' has no attribute {name!r}")
