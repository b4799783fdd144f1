"""The lineage record schema's old import path (documented in the README) still works, and warns."""

from __future__ import annotations

import importlib
import sys

import pytest

from operators import lineage_records


def test_the_old_import_path_warns_and_gives_the_same_objects(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "lineage.records", raising=False)
    with pytest.warns(DeprecationWarning, match="import operators.lineage_records"):
        old = importlib.import_module("lineage.records")
    for name in old.__all__:
        assert getattr(old, name) is getattr(lineage_records, name), name
    assert set(old.__all__) >= {"LINEAGE_SCHEMA", "Verdict", "lineage_batch", "detail_struct", "stamp"}
