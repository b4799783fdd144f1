"""The SQL catalog: the few small, transactional facts (datasets, versions, runs, releases)."""

from lineage.catalog.db import Catalog
from lineage.catalog.models import (
    ApiToken,
    Dataset,
    DatasetVersion,
    EvalRun,
    EvalSet,
    EvalSetVersion,
    Export,
    LineageEdge,
    LineageEvent,
    LineageNode,
    Release,
    ReleasePin,
    ReleaseRead,
    Replica,
    ReplicaFile,
    Run,
    TakedownRequest,
)

__all__ = [
    "ApiToken",
    "Catalog",
    "Dataset",
    "DatasetVersion",
    "EvalRun",
    "EvalSet",
    "EvalSetVersion",
    "Export",
    "LineageEdge",
    "LineageEvent",
    "LineageNode",
    "Release",
    "ReleasePin",
    "ReleaseRead",
    "Replica",
    "ReplicaFile",
    "Run",
    "TakedownRequest",
]
