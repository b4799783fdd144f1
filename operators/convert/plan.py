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
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs

from storage import links
from storage.errors import Invalid, MissingFile
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
    # A file given through a symbolic link (see ``pipelines.sources.resolve_source``): ``pattern`` is
    # the link's target and ``name`` the link's own name, which becomes the file's relative path (so
    # its sample ids) and tells its format and compression, as for any other file.
    name: str | None = None


def _root_of(pattern: str) -> str:
    """The non-glob prefix folder of a pattern: the dataset root relative paths start from."""
    parts = pattern.split("/")
    prefix: list[str] = []
    for part in parts:
        if _GLOB_CHARS & set(part):
            break
        prefix.append(part)
    return "/".join(prefix)


def list_files(spec: SourceSpec) -> tuple[str, list[tuple[str, str | None]]]:
    """(dataset root, sorted (tier-relative path, why the tier refuses its name or None) of each file)
    for a file, folder or glob.

    Files are confined to the tier's root by their real path (see :mod:`storage.links`): a symbolic
    link that leaves it fails the input with a :class:`~storage.links.TierLinkError` naming the link.
    """
    pattern = confine(spec.pattern)
    if _GLOB_CHARS & set(pattern):
        root = _root_of(pattern)
        names = links.list_files(spec.tier, root, _matches(pattern))
    else:
        info = spec.tier.filesystem.get_file_info(links.real_path(spec.tier, pattern))
        if info.type == pafs.FileType.File:
            return posixpath.dirname(pattern), [(pattern, None)]
        if info.type != pafs.FileType.Directory:
            raise MissingFile(f"no such file or folder on tier {spec.tier.name!r}: {pattern}")
        root, names = pattern, links.list_files(spec.tier, pattern, _visible)
    if spec.name is not None:
        raise Invalid(f"input {spec.dataset!r}: a file name is given, but {pattern!r} is not one file")
    return root, [_checked(name) for name in names]


def _checked(name: str) -> tuple[str, str | None]:
    """A listed name and None, or, when the tier refuses it, the name as listed (printable, so its
    quarantine row can name it) and why."""
    try:
        return confine(name), None
    except TierPathError as exc:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace"), str(exc)


def _visible(path: str) -> bool:
    return not posixpath.basename(path).startswith((".", "_"))


def _matches(pattern: str) -> Callable[[str], bool]:
    return lambda path: fnmatch.fnmatchcase(path, pattern)


def plan_chunks(spec: SourceSpec, version: int) -> pa.Table:
    """One chunk row per input file, in a deterministic (sorted) order."""
    if spec.format != "auto" and spec.format not in _FORMATS.values():
        raise Invalid(f"input {spec.dataset!r}: unknown format {spec.format!r}; use auto, jsonl, parquet, csv or text")
    root, files = list_files(spec)
    if not files:
        raise MissingFile(f"{spec.pattern!r} on tier {spec.tier.name!r} matched no files")
    tier_json = json.dumps(spec.tier.config.model_dump(by_alias=True), sort_keys=True)
    rows = []
    for path, refused in files:
        relative = spec.name or (posixpath.relpath(path, root) if root else path)
        fmt = detect_format(relative) if spec.format == "auto" else spec.format
        if fmt is None and refused is None:
            raise Invalid(f"cannot tell the format of {relative!r}; set format= (jsonl, parquet, csv, text)")
        rows.append(
            {
                "tier": tier_json,
                "path": path,
                "relative_path": relative,
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
