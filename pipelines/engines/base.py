"""The engine interface: what a run asks of in-process, Spark and Ray execution alike."""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

import pyarrow as pa

from operators.base import Operator
from operators.convert import ConvertOperator
from pipelines.config import ExecutionConfig
from storage.tier import Tier

ProgressFn = Callable[[str, int], None]  # (counter name, increment)


def _no_progress(_name: str, _n: int) -> None:
    return None


@dataclass(frozen=True)
class TableTarget:
    """Where one table's files go: ``<tier>/<table_path>/<prefix>/part-*.parquet``.

    Used for a job's outputs and for the distributed engines' staging tables alike.
    """

    tier: Tier
    table_path: str  # tier-relative table folder
    prefix: str  # subfolder of the table holding this run's parts


@dataclass(frozen=True)
class SourceInput:
    """Raw files, planned as chunk rows, read by a convert operator."""

    chunks: pa.Table
    convert: ConvertOperator
    position: int  # of the input in the pipeline (0-based), for errors that name an input


@dataclass(frozen=True)
class DatasetInput:
    """A catalog dataset version: one Delta version of a data table."""

    tier: Tier
    table_path: str
    delta_version: int
    position: int  # of the input in the pipeline (0-based), for errors that name an input


@dataclass(frozen=True)
class PublishedRelease:
    """A release whose stored MinHash signatures new samples are deduplicated against."""

    ref: str
    tier: Tier
    signatures_table: str
    signatures_version: int
    data_table: str
    data_version: int


@dataclass
class Job:
    run_id: str
    sources: list[SourceInput]
    datasets: list[DatasetInput]
    operators: list[Operator]
    data: TableTarget
    lineage: TableTarget
    quarantine: TableTarget
    config: ExecutionConfig
    progress: ProgressFn = _no_progress
    signatures: TableTarget | None = None  # where a cluster step's sketches of kept samples go
    published: list[PublishedRelease] = field(default_factory=list)


@dataclass
class JobResult:
    """Files written per output table (relative to each table folder) and extra counters."""

    data_files: list[str] = field(default_factory=list)
    lineage_files: list[str] = field(default_factory=list)
    quarantine_files: list[str] = field(default_factory=list)
    signature_files: list[str] = field(default_factory=list)
    stats: dict[str, int] = field(default_factory=dict)


class Engine(ABC):
    name: ClassVar[str]

    @abstractmethod
    def execute(self, job: Job) -> JobResult:
        """Run the job and write its files. Must not commit anything: the runner commits."""

    def close(self) -> None:  # noqa: B027  (engines with sessions override it)
        """Release engine resources (sessions, runtimes)."""


_ENGINES = {
    "local": "pipelines.engines.local:LocalEngine",
    "spark": "pipelines.engines.spark:SparkEngine",
    "ray": "pipelines.engines.ray:RayEngine",
}


def get_engine(name: str, config: ExecutionConfig) -> Engine:
    try:
        module, _, attr = _ENGINES[name].partition(":")
    except KeyError:
        raise ValueError(f"unknown engine {name!r}; choose one of {sorted(_ENGINES)}") from None
    return getattr(importlib.import_module(module), attr)(config)
