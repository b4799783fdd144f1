"""The quality rule sets' per-code-point flag table is built once and then loaded from disk
(:mod:`operators.code_point_tables`): the loaded table equals a fresh build, a damaged file is rebuilt,
and a change to ``charclass.py`` (its character lists) names another file, so no process serves a
table built from older lists."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from operators import code_point_tables
from operators.quality import charclass


def _table() -> np.ndarray:
    charclass.flag_table.cache_clear()
    try:
        return charclass.flag_table()
    finally:
        charclass.flag_table.cache_clear()


def test_the_flag_table_is_cached_on_disk_and_equals_a_fresh_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    fresh = charclass._build_flags()
    assert (
        fresh[ord("a")] & charclass.ALPHA
        and fresh[ord(" ")] & charclass.SPACE
        and fresh[ord("。")] & charclass.SENT_END
    )
    salt = Path(charclass.__file__).read_bytes()
    path = code_point_tables.cache_file("quality_flags", salt)
    assert path.parent == tmp_path and not path.exists()
    for state in ("missing", "written", "damaged"):
        if state == "damaged":
            path.write_bytes(b"not a table")
        with monkeypatch.context() as m:
            if state == "written":  # a process that finds the file builds nothing
                m.setattr(charclass, "_build_flags", lambda: pytest.fail("rebuilt a cached table"))
            table = _table()
        np.testing.assert_array_equal(table, fresh, err_msg=state)
        assert table.dtype == np.uint16 and not table.flags.writeable
        assert path.stat().st_size == (sys.maxunicode + 1) * 2, state


def test_another_content_of_the_module_names_another_file() -> None:
    salt = Path(charclass.__file__).read_bytes()
    assert code_point_tables.cache_file("quality_flags", salt) != code_point_tables.cache_file(
        "quality_flags", salt + b"\n# one more character list"
    )
