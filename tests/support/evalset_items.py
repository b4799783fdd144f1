"""Eval-set items for the eval-set and contamination tests: a small MCQ set in Chinese and English,
with the bad input a real benchmark dump has (an empty field, a duplicate, items shorter than n)."""

from __future__ import annotations

from pathlib import Path

from tests.support.helpers import write_jsonl

LONG_EN = "Which planet of the solar system is known as the red planet because iron oxide dust covers its surface"
LONG_ZH = "下列哪一座城市是中华人民共和国的首都，并且在历史上曾经是元明清三个朝代的都城所在地？"
OTHER_EN = (
    "In the theory of computation which machine model recognises exactly the regular languages over a finite alphabet"
)


def items_v1() -> list[dict]:
    return [
        {"id": "q1", "question": LONG_EN, "choices": ["Mars", "Venus", "Jupiter", "Saturn"], "answer": "A"},
        {"id": "q2", "question": LONG_ZH, "choices": ["北京", "上海", "广州", "深圳"], "answer": "A"},
        {"id": "q3", "question": "", "choices": ["yes", "no"], "answer": "B"},  # empty question
        {"id": "q4", "question": "Is water wet?", "choices": [], "answer": "A"},  # short, empty choices
        {"id": "q5", "question": "Is water wet?", "choices": [], "answer": "B"},  # duplicate of q4's text
        {"id": "q6", "question": OTHER_EN, "choices": ["DFA", "PDA", "TM", "LBA"], "answer": "A"},
    ]


def write_items(path: Path, items: list[dict], bad_lines: tuple[str, ...] = ()) -> Path:
    write_jsonl(path, items)
    if bad_lines:
        with path.open("a", encoding="utf-8") as f:
            for line in bad_lines:
                f.write(line + "\n")
    return path
