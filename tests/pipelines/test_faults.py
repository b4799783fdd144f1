"""The pause marker a crash-safety test polls for is never seen before it holds the pid."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from pipelines import faults


class _Paused(Exception):
    pass


def test_the_marker_appears_with_the_pid_already_in_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "paused"
    monkeypatch.setenv("LINEAGE_PAUSE_AT", "here")
    monkeypatch.setenv("LINEAGE_PAUSE_MARKER", str(marker))
    seen: list[str] = []
    watching = [True]

    def watch(event: str, args: tuple) -> None:
        # Every file-system step the checkpoint takes is audited before it runs: at each, a poller could look.
        if not watching[0] or event not in {"open", "os.rename", "os.replace"}:
            return
        if event == "open" and str(args[0]) == str(marker) and "w" in str(args[1]):
            seen.append("opened for writing where the poller looks: it exists empty until the write")
        if marker.exists():
            watching[0] = False  # reading the marker is audited too
            seen.append(marker.read_text())
            watching[0] = True

    sys.addaudithook(watch)

    def paused(seconds: float) -> None:
        if marker.exists():
            seen.append(marker.read_text())
        raise _Paused

    monkeypatch.setattr(faults.time, "sleep", paused)
    try:
        with pytest.raises(_Paused):
            faults.checkpoint("here")
    finally:
        watching[0] = False
    assert seen and all(text == str(os.getpid()) for text in seen), seen
    assert [p.name for p in tmp_path.iterdir()] == ["paused"]


def test_another_point_passes_through(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LINEAGE_PAUSE_AT", "elsewhere")
    monkeypatch.setenv("LINEAGE_PAUSE_MARKER", str(tmp_path / "paused"))
    faults.checkpoint("here")
    assert not (tmp_path / "paused").exists()
