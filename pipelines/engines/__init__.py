"""Engines run a :class:`~pipelines.engines.base.Job`; they hold no operator logic."""

from pipelines.engines.base import (
    DatasetInput,
    Engine,
    Job,
    JobResult,
    PublishedRelease,
    SourceInput,
    TableTarget,
    check_engine,
    engine_module,
    get_engine,
)

__all__ = [
    "DatasetInput",
    "Engine",
    "Job",
    "JobResult",
    "PublishedRelease",
    "SourceInput",
    "TableTarget",
    "check_engine",
    "engine_module",
    "get_engine",
]
