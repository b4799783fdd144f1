"""A world for takedown tests: a small corpus whose removed texts, meta and one quarantined line carry
marker strings, its pipeline, and a search for the markers in everything a tier holds, decoded."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow.fs as pafs
import pyarrow.parquet as pq

from operators.schema import sample_id
from storage.tier import Tier
from tests.support.helpers import write_jsonl

CURL = sample_id("raw", "id:curl")  # in api_world's corpus: read from sub/b.jsonl, kept by its pipeline

MARKERS = ("zqxmarkalpha", "zqxmarkbeta", "zqxmarkgamma", "zqxmarkdelta")
KEEP = [
    "the quick brown fox jumps over the lazy dog near the river bank today",
    "a library for parsing command line options in small portable programs",
    "tools to convert image formats between png jpeg and webp quickly",
    "documentation for the standard c library with examples and manual pages",
]
GONE = [
    {
        "id": "o1",
        "text": "an opted out page about zqxmarkalpha kites and their strings",
        "url": "https://x/zqxmarkdelta",
    },
    {"id": "o2", "text": "another opted out document mentioning zqxmarkbeta gardens in spring"},
]


def corpus(root: Path) -> Path:
    write_jsonl(root / "keep" / "a.jsonl", [{"id": f"k{i}", "text": t} for i, t in enumerate(KEEP)])
    path = write_jsonl(root / "optout" / "b.jsonl", GONE)
    with path.open("a") as fh:
        fh.write('{"id": "o3", "text": "a broken zqxmarkgamma line\n')  # bad JSON: quarantined with its raw bytes
    return root


def pipeline(root: Path) -> dict:
    return {
        "name": "purge-test",
        "inputs": [{"dataset": "raw", "path": str(root), "id_field": "id"}],
        "operators": [
            {"name": "exact_dedupe"},
            {"name": "minhash_dedupe"},
            {"name": "quality", "params": {"min_words": 3}},
        ],
        "output": {"dataset": "clean", "owner": "t", "license": "CC0-1.0"},
    }


def decoded(fs: pafs.FileSystem, path: str) -> str:
    """Everything a file says, decoded: Parquet values and footer statistics, gunzipped or raw bytes."""
    with fs.open_input_file(path) as fh:
        body = fh.read()
    if body[:4] == b"PAR1":
        with fs.open_input_file(path) as fh:
            parquet = pq.ParquetFile(fh)
            values = json.dumps(parquet.read().to_pylist(), default=repr)
            meta = parquet.metadata
            stats = [
                repr((meta.row_group(g).column(c).statistics or "").__str__())
                for g in range(meta.num_row_groups)
                for c in range(meta.num_columns)
            ]
        return values + "".join(stats)
    if body[:2] == b"\x1f\x8b":
        body = gzip.decompress(body)
    return body.decode("utf-8", errors="replace")


def markers_under(tier: Tier) -> dict[str, list[str]]:
    """marker -> the files under the tier's root that still hold it."""
    found: dict[str, list[str]] = {}
    selector = pafs.FileSelector(tier.path(""), recursive=True, allow_not_found=True)
    for info in tier.filesystem.get_file_info(selector):
        if info.type != pafs.FileType.File:
            continue
        text = decoded(tier.filesystem, info.path).lower()
        for marker in MARKERS:
            if marker in text:
                found.setdefault(marker, []).append(info.path)
    return found
