"""Where a dataset's Delta tables live on a tier. One place, so every component agrees."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from storage.names import check_name

if TYPE_CHECKING:
    from storage.tier import Tier

__all__ = ["DatasetTables", "check_name", "datasets_on", "run_prefix"]


@dataclass(frozen=True)
class DatasetTables:
    """Tier-relative paths of a dataset's Delta tables (signatures only when MinHash ran)."""

    data: str
    lineage: str
    quarantine: str
    signatures: str

    @classmethod
    def for_dataset(cls, name: str) -> DatasetTables:
        base = f"datasets/{check_name(name)}"
        return cls(f"{base}/data", f"{base}/lineage", f"{base}/quarantine", f"{base}/signatures")

    def all(self) -> tuple[str, str, str, str]:
        return (self.data, self.lineage, self.quarantine, self.signatures)


def run_prefix(run_id: str) -> str:
    """The subfolder of each table that holds one run's files."""
    return f"run-{run_id}"


STAGING = "_staging"  # a tier's folder of Spark and Ray runs' staging (pipelines.engines.distributed)


def staging_prefix(run_id: str) -> str:
    """A Spark or Ray run's staging folder on its output tier: its scratch and recorded partitions."""
    return f"{STAGING}/{run_prefix(run_id)}"


def run_of_staging(name: str) -> str | None:
    """The run id a folder of :data:`STAGING` is named for (``run-<id>``), or None."""
    return name.removeprefix("run-") if name.startswith("run-") else None


def datasets_on(tier: Tier) -> list[DatasetTables]:
    """The tables of every dataset folder on ``tier`` (committed or not): what gc and purge walk. A tier
    that cannot be listed raises (``OSError``)."""
    import pyarrow.fs as pafs  # start-up: the layout's names are used where pyarrow is not loaded

    selector = pafs.FileSelector(tier.path("datasets"), recursive=False, allow_not_found=True)
    infos = tier.filesystem.get_file_info(selector)
    return [
        DatasetTables.for_dataset(i.base_name)
        for i in sorted(infos, key=lambda i: i.base_name)
        if i.type == pafs.FileType.Directory
    ]
