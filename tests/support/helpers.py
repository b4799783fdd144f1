"""Helpers shared by tests across packages: writing JSONL, publishing a release from records, a
sample's lineage, corrupting a file."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from lineage.catalog import Catalog
from lineage.settings import Settings


def lineage_of(settings: Settings, sample_id: str, dataset: str | None = None):  # type: ignore[no-untyped-def]
    """A sample's lineage through the service layer (what the CLI, SDK and HTTP API return)."""
    from lineage.client import Client

    client = Client(settings=settings)
    try:
        return client.sample_lineage(sample_id, dataset=dataset, include_text=True)
    finally:
        client.close()


def write_jsonl(path: Path, records: list[dict], compress: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()
    if compress:
        path.write_bytes(gzip.compress(data))
    else:
        path.write_bytes(data)
    return path


def publish_records(tmp_path: Path, settings: Settings, catalog: Catalog, records: list[dict], ref: str) -> str:
    """Run the default pipeline over ``records`` into dataset ``name`` and publish ``name@tag``."""
    from lineage.releases import publish
    from lineage.runs import Runner
    from pipelines.spec import PipelineSpec

    name = ref.split("@", 1)[0]
    write_jsonl(tmp_path / "src" / f"{name}.jsonl", records)
    spec = PipelineSpec.model_validate(
        {
            "name": name,
            "inputs": [{"dataset": name, "path": str(tmp_path / "src"), "id_field": "id"}],
            "output": {"dataset": name},
        }
    )
    Runner(settings, catalog).run(spec)
    publish(catalog, settings, ref)
    return ref


def corrupted(data: bytes, how: str) -> bytes:
    """A release file's bytes damaged in one of :data:`CORRUPTIONS`: one byte flipped (in the
    leading magic, mid-file in the column data, or in the Thrift footer before its length and
    magic), or the file cut short."""
    if how == "truncated":
        return data[: len(data) - 10]
    offset = {"start": 0, "middle": len(data) // 2, "footer": len(data) - 20}[how]
    damaged = bytearray(data)
    damaged[offset] ^= 0xFF
    return bytes(damaged)


CORRUPTIONS = ("start", "middle", "footer", "truncated")


FAMILY = (
    "GNU C library: shared libraries. Contains the standard libraries that are used by nearly all "
    "programs on the system. This package includes shared versions of the standard C library and the "
    "standard math library, as well as many others."
)
