"""Convert with ``text_fields``: a text made of several fields joined (how eval items are checked)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from storage.errors import Invalid
from tests.support.convert_harness import convert
from tests.support.helpers import write_jsonl


def test_fields_are_joined_in_order_and_empty_ones_left_out(tmp_path: Path) -> None:
    write_jsonl(
        tmp_path / "items.jsonl",
        [
            {"question": "Q one?", "choices": ["a", "", "c"], "answer": "A"},
            {"question": "  ", "choices": ["x"], "answer": "B"},
            {"question": "Q three", "choices": 7},
            {"answer": "C"},
            {"question": "", "choices": []},
        ],
    )
    samples, _, quarantine, _ = convert(tmp_path, "items.jsonl", text_fields=["question", "choices"], join=" | ")
    assert samples.column("text").to_pylist() == ["Q one? | a | c", "x", "Q three | 7"]
    assert json.loads(samples.column("meta")[0].as_py()) == {
        "question": "Q one?",
        "choices": ["a", "", "c"],
        "answer": "A",
    }
    assert quarantine.column("reason").to_pylist() == ["missing_text_field", "empty_text"]


def test_csv_columns_join_too(tmp_path: Path) -> None:
    with (tmp_path / "items.csv").open("w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([["id", "question", "answer"], ["1", "What is two plus two", "4"]])
    samples, _, _, _ = convert(tmp_path, "items.csv", text_fields=["question", "answer"], id_field="id")
    assert samples.column("text").to_pylist() == ["What is two plus two\n4"]


@pytest.mark.parametrize("fields", ["question", [""], [1]])
def test_bad_text_fields_are_refused(tmp_path: Path, fields: object) -> None:
    write_jsonl(tmp_path / "items.jsonl", [{"question": "q"}])
    with pytest.raises(Invalid, match="text_fields"):
        convert(tmp_path, "items.jsonl", text_fields=fields)
