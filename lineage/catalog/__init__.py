"""The SQL catalog: the few small, transactional facts (datasets, versions, runs, releases)."""

from lineage.catalog.db import Catalog
from lineage.catalog.models import (
    Dataset,
    DatasetVersion,
    Release,
    ReleasePin,
    ReleaseRead,
    Replica,
    ReplicaFile,
    Run,
)

__all__ = [
    "Catalog",
    "Dataset",
    "DatasetVersion",
    "Release",
    "ReleasePin",
    "ReleaseRead",
    "Replica",
    "ReplicaFile",
    "Run",
]
