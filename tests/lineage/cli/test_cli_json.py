"""``--json`` output (``lineage/cli/app.py``: ``write_json``): piped, it is the text rich's ``print_json``
prints, byte for byte, written without rich's highlighter; on a terminal it is still rich's, coloured."""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console

from lineage.cli.app import write_json

ANSWERS: list[Any] = [
    {"request": {"id": 3, "selector": {"sample_ids": [f"s{i:06d}" for i in range(1000)]}}, "successors": []},
    {"text": "中文 ü\tnew\nline \x07 bell \u2028 sep \x7f", "share": 1e-05, "big": 12345678901234567890, "nan": None},
    [{"wide": "x" * 400, "nested": [[], {}, [1.5, -0.0, True, False, None]]}],
    [],
    "a plain string",
]


def _console(**kw: Any) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=140, **kw), out


@pytest.mark.parametrize("data", ANSWERS)
def test_piped_json_is_exactly_what_rich_prints(data: Any) -> None:
    ours, got = _console()
    rich, want = _console()
    assert not ours.is_terminal
    write_json(ours, data)
    rich.print_json(data=data)
    assert got.getvalue() == want.getvalue()


def test_a_terminal_still_gets_rich_colours() -> None:
    ours, got = _console(force_terminal=True, color_system="standard")
    write_json(ours, ANSWERS[0])
    assert "\x1b[" in got.getvalue()
