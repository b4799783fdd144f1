"""The engine interface: what a run asks of in-process, Spark and Ray execution alike, and the registry.

:data:`ENGINES` names every engine, the module holding it and the install extra it needs; Spark and
Ray are extras (``lineage-ledger[spark]``, ``[ray]``), the in-process engine is always there. Their
modules are imported only through the registry, so the base install never loads pyspark or ray, and
choosing one without its extra raises :class:`~storage.errors.MissingExtra` naming the fix.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from types import ModuleType
from typing import ClassVar

import pyarrow as pa

from operators.base import Operator
from operators.convert import ConvertOperator
from pipelines.config import ExecutionConfig
from pipelines.progress import ProgressFn
from pipelines.progress import no_progress as _no_progress
from storage.errors import Invalid, MissingExtra
from storage.tier import Tier


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
    partitions: int = 0  # ingest partitions (pipelines.partitions); only engines that record them count
    reused_partitions: list[int] = field(default_factory=list)  # of those, the ones an earlier attempt recorded


class Engine(ABC):
    name: ClassVar[str]

    @abstractmethod
    def execute(self, job: Job) -> JobResult:
        """Run the job and write its files. Must not commit anything: the runner commits."""

    def close(self) -> None:  # noqa: B027  (engines with sessions override it)
        """Release engine resources (sessions, runtimes)."""


@dataclass(frozen=True)
class EngineEntry:
    """One engine of the registry: where its class lives and the install extra it needs, if any.

    ``module`` also holds the engine's session helpers (``spark_session``, ``ray_runtime``), which
    tier copies use through :func:`engine_module`.
    """

    module: str
    cls: str
    extra: str | None = None  # ``pip install 'lineage-ledger[<extra>]'`` brings ...
    needs: str | None = None  # ... this top-level package, imported to prove it is there


# THE engine registry: runs (lineage.runs), replicas and tier copies (lineage.releases) choose here.
ENGINES: dict[str, EngineEntry] = {
    "local": EngineEntry("pipelines.engines.local", "LocalEngine"),
    "spark": EngineEntry("pipelines.engines.spark", "SparkEngine", extra="spark", needs="pyspark"),
    "ray": EngineEntry("pipelines.engines.ray", "RayEngine", extra="ray", needs="ray"),
}


def engine_entry(name: str) -> EngineEntry:
    """The registry entry of ``name``, installed or not (what a pipeline file may name)."""
    try:
        return ENGINES[name]
    except KeyError:
        raise Invalid(f"unknown engine {name!r}; choose one of {', '.join(ENGINES)}") from None


def check_engine(name: str) -> EngineEntry:
    """``name``'s entry, once its extra is installed: call it before any work, so that choosing an
    engine without its extra fails at once with the ``pip install`` that fixes it (:class:`MissingExtra`)."""
    entry = engine_entry(name)
    if entry.extra is not None and entry.needs is not None:
        MissingExtra.require(entry.needs, entry.extra, f"the {name} engine")
    return entry


def engine_module(name: str) -> ModuleType:
    """The module of engine ``name`` (checked first), for its session helpers."""
    return importlib.import_module(check_engine(name).module)


def get_engine(name: str, config: ExecutionConfig) -> Engine:
    entry = check_engine(name)
    return getattr(importlib.import_module(entry.module), entry.cls)(config)
