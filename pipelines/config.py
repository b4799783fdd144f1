"""Engine and execution configuration: what a run's engine and its tasks are given.

:class:`EngineConfig` says where Spark and Ray run. :class:`ExecutionConfig` is everything an
engine and its tasks read while they run (batch sizes, memory limits, file sizes, scratch space):
a frozen value built by :meth:`lineage.settings.Settings.execution`. Distributed tasks pickle it
to their executors in place of the whole settings, so the catalog URL (which may hold a password)
and the service token never leave the driver, and an executor needs no ``LINEAGE_*`` environment.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field


class EngineConfig(BaseModel):
    spark_master: str = "local[*]"
    spark_conf: dict[str, str] = Field(default_factory=dict)
    ray_address: str | None = None  # None starts a local runtime
    ray_num_cpus: int | None = None  # local runtime only; None = all cores
    ray_temp_dir: str | None = None  # local runtime only; None = /tmp/lineage-ray-<uid> (short: socket paths)
    ray_runtime_env: dict[str, Any] = Field(default_factory=dict)  # e.g. {"working_dir": ...} for a cluster


@dataclass(frozen=True)
class ExecutionConfig:
    """The knobs of a run's engine and tasks. The defaults live in :class:`lineage.settings.Settings`
    (with their ``LINEAGE_*`` names); this is built from them, never by hand in library code."""

    batch_rows: int
    duckdb_memory_limit: str
    parquet_row_group_rows: int
    parquet_row_group_bytes: int
    parquet_file_rows: int
    group_partition_rows: int  # rows of key columns a group step holds in memory at once
    sort_bucket_bytes: int  # final sorts run per sample-id bucket of about this size
    staging_dir: Path  # scratch space for runs (local disk); never holds anything a reader needs
    engine: EngineConfig
    cores: int  # cores an in-process run may keep busy (threads, worker processes); the machine's by default
