"""The SQL catalog: the few small, transactional facts (datasets, versions, runs, releases)."""

from lineage.catalog.db import Catalog
from lineage.catalog.models import (
    ApiToken,
    Dataset,
    DatasetVersion,
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
)

__all__ = [
    "ApiToken",
    "Catalog",
    "Dataset",
    "DatasetVersion",
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
]
