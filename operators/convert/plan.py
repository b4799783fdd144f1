"""Turn "a file, a folder or a glob on a tier" into chunk rows a source operator reads.

A chunk is the unit an engine hands to one task. Today a chunk is a whole file, so the record
index within the file is exact on every engine; ``first_row``/``start``/``end`` exist so a
planner that splits large uncompressed files can pass the true starting index along.

A listed file whose name the tier refuses (a control character or a backslash, see
:func:`storage.tier.confine`) is planned too, with ``refused`` saying why: convert turns it into
one ``invalid_file_name`` quarantine row instead of the name aborting the whole input.
"""

from __future__ import annotations

import fnmatch
import json
import posixpath
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs

from storage.tier import Tier, TierPathError, confine

CHUNK_SCHEMA = pa.schema(
    [
        pa.field("tier", pa.string(), nullable=False),  # TierConfig JSON (no secrets: env var names only)
        pa.field("path", pa.string(), nullable=False),  # tier-relative path of the file
        pa.field("relative_path", pa.string(), nullable=False),  # path relative to the dataset root
        pa.field("format", pa.string(), nullable=True),  # None only for a refused file, which is never read
        pa.field("start", pa.int64(), nullable=False),
        pa.field("end", pa.int64(), nullable=True),
        pa.field("first_row", pa.int64(), nullable=False),
        pa.field("source_dataset", pa.string(), nullable=False),
        pa.field("source_version", pa.int64(), nullable=False),
        pa.field("refused", pa.string(), nullable=True),  # why the tier refuses the file's name, if it does
    ]
)

_GLOB_CHARS = set("*?[")
_FORMATS = {
    ".jsonl": "jsonl",
    ".json": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".tsv": "csv",
    ".txt": "text",
    ".md": "text",
    ".text": "text",
}
COMPRESSIONS = (".gz", ".zst")


def detect_format(path: str) -> str | None:
    name = path.lower()
    for ext in COMPRESSIONS:
        name = name.removesuffix(ext)
    return _FORMATS.get(posixpath.splitext(name)[1])


@dataclass(frozen=True)
class SourceSpec:
    """Raw input of a pipeline: a pattern on a tier, and the dataset name it becomes."""

    dataset: str
    tier: Tier
    pattern: str  # tier-relative file, folder or glob
    format: str = "auto"


def _root_of(pattern: str) -> str:
    """The non-glob prefix folder of a pattern: the dataset root relative paths start from."""
    parts = pattern.split("/")
    prefix: list[str] = []
    for part in parts:
        if _GLOB_CHARS & set(part):
            break
        prefix.append(part)
    return "/".join(prefix)


def _listed(tier: Tier, infos: list[pafs.FileInfo]) -> list[tuple[str, str | None]]:
    """(tier-relative path, why the tier refuses it or None) of each file in a listing."""
    files = []
    for info in infos:
        if info.type != pafs.FileType.File:
            continue
        try:
            files.append((tier.relative(info.path), None))
        except TierPathError as exc:  # keep the name as listed, so the quarantine row can name it
            files.append((info.path.removeprefix(tier.path().rstrip("/") + "/"), str(exc)))
    return files


def _list_tree(tier: Tier, folder: str, allow_not_found: bool = False) -> list[tuple[str, str | None]]:
    selector = pafs.FileSelector(tier.path(folder), recursive=True, allow_not_found=allow_not_found)
    try:
        return _listed(tier, tier.filesystem.get_file_info(selector))
    except UnicodeDecodeError as exc:  # pyarrow cannot list a folder holding a non-UTF-8 name at all
        where = f"{folder or '.'!r} on tier {tier.name!r}"
        raise ValueError(f"cannot list {where}: a file name in it is not UTF-8 ({exc})") from None


def list_files(spec: SourceSpec) -> tuple[str, list[tuple[str, str | None]]]:
    """(dataset root, sorted (tier-relative path, refusal or None) of each file) for a file, folder or glob."""
    pattern = confine(spec.pattern)
    fs = spec.tier.filesystem
    if not (_GLOB_CHARS & set(pattern)):
        info = fs.get_file_info(spec.tier.path(pattern))
        if info.type == pafs.FileType.File:
            return posixpath.dirname(pattern), [(pattern, None)]
        if info.type == pafs.FileType.Directory:
            files = _list_tree(spec.tier, pattern)
            return pattern, sorted(f for f in files if not posixpath.basename(f[0]).startswith((".", "_")))
        raise FileNotFoundError(f"no such file or folder on tier {spec.tier.name!r}: {pattern}")
    root = _root_of(pattern)
    files = _list_tree(spec.tier, root, allow_not_found=True)
    return root, sorted(f for f in files if fnmatch.fnmatchcase(f[0], pattern))


def plan_chunks(spec: SourceSpec, version: int) -> pa.Table:
    """One chunk row per input file, in a deterministic (sorted) order."""
    root, files = list_files(spec)
    if not files:
        raise FileNotFoundError(f"{spec.pattern!r} on tier {spec.tier.name!r} matched no files")
    tier_json = json.dumps(spec.tier.config.model_dump(by_alias=True), sort_keys=True)
    rows = []
    for path, refused in files:
        fmt = detect_format(path) if spec.format == "auto" else spec.format
        if fmt is None and refused is None:
            raise ValueError(f"cannot tell the format of {path!r}; set format= (jsonl, parquet, csv, text)")
        rows.append(
            {
                "tier": tier_json,
                "path": path,
                "relative_path": posixpath.relpath(path, root) if root else path,
                "format": fmt,
                "start": 0,
                "end": None,
                "first_row": 0,
                "source_dataset": spec.dataset,
                "source_version": version,
                "refused": refused,
            }
        )
    return pa.Table.from_pylist(rows, schema=CHUNK_SCHEMA)
