"""Raw inputs of a run: a pipeline input (a path, or a pattern on a tier) planned as convert chunks.

Kept apart from :mod:`pipelines.execute` so that reading files through convert (``lineage dedupe``)
does not load the commit half (Delta, DuckDB) at start-up.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import xxhash

from operators.convert import ConvertOperator, SourceSpec, plan_chunks
from pipelines.engines.base import SourceInput
from pipelines.spec import InputSpec
from storage.config import TierConfigs
from storage.errors import MissingFile
from storage.tier import Tier, get_tier, local_tier

RAW_SOURCE_VERSION = 0  # source_version of samples read straight from raw files by a run


def _glob_root(path: str) -> tuple[str, str]:
    """Split a local path into (existing folder to root a tier at, pattern relative to it)."""
    parts = Path(path).parts
    for i, part in enumerate(parts):
        if set("*?[") & set(part):
            return str(Path(*parts[:i])), "/".join(parts[i:])
    p = Path(path)
    return (str(p.parent), p.name) if p.is_file() else (str(p), "")


def resolve_source(inp: InputSpec, base_dir: Path | None, tiers: TierConfigs) -> SourceSpec:
    assert inp.path is not None
    if inp.tier is not None:
        return SourceSpec(inp.dataset, get_tier(inp.tier, tiers), inp.path, inp.format)
    path = Path(inp.path).expanduser()
    if not path.is_absolute():
        path = (base_dir or Path.cwd()) / path
    if path.is_symlink() and path.is_file():
        # A link named as the input is what the user chose to read: the throw-away tier is rooted
        # at its target's folder, and the file keeps the link's name. Links *inside* a root that
        # lead out of it are refused (storage.links).
        target = path.resolve()
        return SourceSpec(inp.dataset, local_tier(target.parent), target.name, inp.format, name=path.name)
    root, pattern = _glob_root(str(path))
    if not Path(root).is_dir():
        raise MissingFile(f"input {inp.dataset!r}: no such file or folder: {path}")
    return SourceSpec(inp.dataset, local_tier(root), pattern, inp.format)


def fingerprint(src: SourceSpec, chunks: pa.Table) -> str:
    """xxh3-128 over each planned file's name, size and content checksum: equal only for the same bytes
    under the same names, so a run resumes an interrupted one only over unchanged files (:mod:`lineage.resume`)."""
    hasher = xxhash.xxh3_128()
    for path, relative, refused in zip(
        chunks.column("path").to_pylist(),
        chunks.column("relative_path").to_pylist(),
        chunks.column("refused").to_pylist(),
        strict=True,
    ):
        digest = "refused" if refused is not None else _raw_digest(src.tier, path)
        hasher.update(json.dumps([relative, digest, refused]).encode())
    return hasher.hexdigest()


def _raw_digest(tier: Tier, path: str) -> str:
    """xxh3-128 of a file's stored bytes (never decompressed: a corrupt ``.gz`` is convert's to quarantine)."""
    hasher = xxhash.xxh3_128()
    try:
        with tier.filesystem.open_input_stream(tier.path(path), compression=None) as stream:
            while chunk := stream.read(8 << 20):
                hasher.update(chunk)
    except OSError as exc:  # convert reports it (a quarantine record); the fingerprint just records it
        return f"unreadable: {exc}"
    return hasher.hexdigest()


def plan_source(
    inp: InputSpec,
    position: int,
    base_dir: Path | None,
    run_id: str,
    tiers: TierConfigs,
    described: dict[str, Any] | None = None,
) -> tuple[SourceInput, dict[str, Any]]:
    """A raw input planned as chunks for its convert step, and what the run records about it.

    ``described``: :func:`describe_source`'s record of this input, made moments ago by the caller (a
    pipeline run deciding whether the stage runs). It is taken as it is when it names the same files,
    so the files' bytes are read for the fingerprint once, not twice (on an object-store tier, each
    raw file would be downloaded once more before convert reads it).
    """
    src = resolve_source(inp, base_dir, tiers)
    chunks = plan_chunks(src, RAW_SOURCE_VERSION)
    convert = ConvertOperator(inp.convert_params(), run_id=run_id)
    recorded = described
    if recorded is None or recorded.get("uri") != src.tier.uri(src.pattern) or recorded.get("files") != chunks.num_rows:
        recorded = _recorded(inp, src, chunks)
    return SourceInput(chunks, convert, position), recorded


def describe_source(inp: InputSpec, base_dir: Path | None, tiers: TierConfigs) -> dict[str, Any]:
    """What a run records about a raw input (:func:`plan_source`'s second half), without planning its
    convert: a run's cache key is made of these (``lineage.run_key``)."""
    src = resolve_source(inp, base_dir, tiers)
    return _recorded(inp, src, plan_chunks(src, RAW_SOURCE_VERSION))


def _recorded(inp: InputSpec, src: SourceSpec, chunks: pa.Table) -> dict[str, Any]:
    return {
        "kind": "files",
        "dataset": inp.dataset,
        "uri": src.tier.uri(src.pattern),
        "files": chunks.num_rows,
        "fingerprint": fingerprint(src, chunks),
    }
