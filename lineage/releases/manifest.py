"""A release's manifest: its files with sizes and checksums read back from storage, and the content digest.

The digest is the identity of a release's *content* (file checksums, row count, schema), not of
where it lives: two releases of the same files have one digest, on any tier.
"""

from __future__ import annotations

import json
from typing import Any

import xxhash

from lineage.catalog import DatasetVersion, Run
from lineage.errors import ReleaseError
from lineage.settings import Settings
from operators.mixture import serving_rules
from storage.checksum import file_digest
from storage.delta import version_files
from storage.tier import get_tier

MANIFEST_FORMAT = 1


def build_manifest(
    dv: DatasetVersion, run: Run | None, settings: Settings, known: dict[str, dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Files with sizes and checksums read back from storage, row count, schema, QC summary.

    ``known``: manifest entries of an earlier release of the same table (a takedown's predecessor), by
    path. A file of the same path and size is the same immutable Parquet file, read back when that
    release was made; its checksum is taken over rather than read again (a takedown's successor shares
    all but a few files). A reader still checks the bytes against it, and ``tier verify`` reads them all.
    """
    tier = get_tier(dv.tier, settings)
    known = known or {}
    files = []
    for entry in version_files(tier, dv.data_path, dv.data_delta_version):
        prior = known.get(entry["path"])
        if prior is not None and prior["size"] == entry["size"] and prior["rows"] == entry["num_records"]:
            files.append(dict(prior))
            continue
        digest = file_digest(tier, dv.data_path, entry["path"])
        checksum, size = digest.hexdigest, digest.size
        if size != entry["size"]:
            raise ReleaseError(f"{entry['path']}: {size} bytes on storage, Delta log says {entry['size']}")
        files.append({"path": entry["path"], "size": size, "rows": entry["num_records"], "xxh3_128": checksum})
    counts = run.counts if run is not None else {}
    return {
        "format": MANIFEST_FORMAT,
        "dataset": dv.dataset.name,
        "dataset_version": dv.version,
        "tier": dv.tier,
        "data": {"table": dv.data_path, "delta_version": dv.data_delta_version},
        "lineage": {"table": dv.lineage_path, "delta_version": dv.lineage_delta_version},
        "quarantine": {"table": dv.quarantine_path, "delta_version": dv.quarantine_delta_version},
        "signatures": (
            {"table": dv.signatures_path, "delta_version": dv.signatures_delta_version}
            if dv.signatures_path is not None
            else None
        ),
        "row_count": dv.row_count,
        "bytes": sum(f["size"] for f in files),
        "schema": dv.schema,
        "files": files,
        "quality": {"steps": counts.get("steps", []), "quarantine": counts.get("quarantine", {})},
        "run_id": dv.run_id,
        **({"mixture": counts["mixture"]} if counts.get("mixture") else {}),
    }


def content_digest(manifest: dict[str, Any]) -> str:
    """Identity of a release's *content*: file checksums, row count and schema, not paths."""
    body: dict[str, Any] = {
        "files": sorted((f["xxh3_128"], f["size"], f["rows"]) for f in manifest["files"]),
        "row_count": manifest["row_count"],
        "schema": manifest["schema"],
    }
    if manifest.get("mixture"):  # what is served: the same files repeated differently train differently
        body["repeats"] = serving_rules(manifest["mixture"])
    return xxhash.xxh3_128_hexdigest(json.dumps(body, sort_keys=True).encode())
