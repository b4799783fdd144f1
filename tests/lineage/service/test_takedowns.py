"""The takedown selector's filters: path globs as anchored patterns, and every form of selector as the
filter the scan applies (pyarrow over the sample columns; DuckDB for ``meta``), on a real Parquet dataset."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

from lineage.service import schemas as S
from lineage.service.takedowns import arrow_filter, glob_regex

ROWS = [
    ("s1", "a" * 32, "raw", "file:///d/a.jsonl", "a.jsonl", {"url": "https://example.com/x", "lang": "en"}),
    ("s2", "b" * 32, "raw", "file:///d/sub/b.jsonl", "sub/b.jsonl", {"url": "https://other.org/y"}),
    ("s3", "c" * 32, "raw", "file:///d/sub/deep/c.jsonl", "sub/deep/c.jsonl", None),
    ("s4", "d" * 32, "web", "file:///w/a.jsonl", "a.jsonl", {"lang": "en"}),
]


@pytest.mark.parametrize(
    ("glob", "matches", "misses"),
    [
        ("sub/*", ["sub/b.jsonl"], ["sub/deep/c.jsonl", "a.jsonl"]),
        ("sub/**", ["sub/b.jsonl", "sub/deep/c.jsonl"], ["a.jsonl"]),
        ("?.jsonl", ["a.jsonl"], ["sub/b.jsonl", "ab.jsonl"]),
        ("a.json[l]", ["a.json[l]"], ["a.jsonl"]),  # no character classes: brackets are literal
    ],
)
def test_globs_match_whole_paths(glob: str, matches: list[str], misses: list[str]) -> None:
    import re

    pattern = re.compile(glob_regex(glob))
    assert all(pattern.match(p) for p in matches) and not any(pattern.match(p) for p in misses)


@pytest.fixture
def dataset(tmp_path: Path) -> pads.Dataset:
    table = pa.table(
        {
            "sample_id": [r[0] for r in ROWS],
            "content_hash": [r[1] for r in ROWS],
            "source_dataset": [r[2] for r in ROWS],
            "source_uri": [r[3] for r in ROWS],
            "source_path": [r[4] for r in ROWS],
            "meta": [json.dumps(r[5]) if r[5] else None for r in ROWS],
        }
    )
    pq.write_table(table, tmp_path / "part-0.parquet")
    return pads.dataset(tmp_path)


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ({"source": {"dataset": "raw"}}, ["s1", "s2", "s3"]),
        ({"source": {"dataset": "raw", "path": "sub/*"}}, ["s2"]),
        ({"source": {"dataset": "raw", "uri": "file:///d/sub/"}}, ["s2", "s3"]),
        ({"source": {"dataset": "raw", "uri": "file:///d/a.jsonl"}}, ["s1"]),
        ({"sample_ids": ["s4", "nope"]}, ["s4"]),
        ({"content_hashes": ["b" * 32]}, ["s2"]),
        ({"where": {"field": "source_uri", "op": "glob", "value": "file:///w/*"}}, ["s4"]),
        ({"where": {"field": "source_path", "op": "regex", "value": "sub/.*"}}, ["s2", "s3"]),
    ],
)
def test_each_selector_is_a_filter_on_the_sample_columns(
    dataset: pads.Dataset, selector: dict, expected: list[str]
) -> None:
    expr = arrow_filter(S.TakedownSelector.model_validate(selector))
    assert expr is not None
    assert sorted(dataset.to_table(columns=["sample_id"], filter=expr).column("sample_id").to_pylist()) == expected


def test_a_where_on_meta_is_left_to_duckdb() -> None:
    selector = S.TakedownSelector.model_validate({"where": {"field": "meta.url", "op": "eq", "value": "x"}})
    assert arrow_filter(selector) is None
