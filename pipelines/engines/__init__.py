"""Engines run a :class:`~pipelines.engines.base.Job`; they hold no operator logic."""

from pipelines.engines.base import (
    DatasetInput,
    Engine,
    Job,
    JobResult,
    PublishedRelease,
    SourceInput,
    TableTarget,
    get_engine,
)

__all__ = ["DatasetInput", "Engine", "Job", "JobResult", "PublishedRelease", "SourceInput", "TableTarget", "get_engine"]
