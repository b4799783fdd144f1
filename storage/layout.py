"""Where a dataset's Delta tables live on a tier. One place, so every component agrees."""

from __future__ import annotations

from dataclasses import dataclass

from storage.names import check_name

__all__ = ["DatasetTables", "check_name", "run_prefix"]


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
