"""The pause marker a crash-safety test polls for is never seen before it holds the pid."""

from __future__ import annotations

import os
import sys
import threading
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


def test_two_threads_pausing_at_once_both_write_the_marker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Threads of a pool may reach the same point together: each renames its own whole file into place."""
    marker = tmp_path / "paused"
    monkeypatch.setenv("LINEAGE_PAUSE_AT", "here")
    monkeypatch.setenv("LINEAGE_PAUSE_MARKER", str(marker))
    both_written = threading.Barrier(2, timeout=10)
    rename = os.replace

    def replace_when_both_wrote(src: str | Path, dst: str | Path) -> None:
        both_written.wait()
        rename(src, dst)

    monkeypatch.setattr(faults.os, "replace", replace_when_both_wrote)
    monkeypatch.setattr(faults.time, "sleep", lambda seconds: None)
    errors: list[BaseException] = []

    def pause() -> None:
        try:
            faults.checkpoint("here")
        except BaseException as exc:  # noqa: BLE001  (reported by the assertion below)
            errors.append(exc)

    threads = [threading.Thread(target=pause) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert marker.read_text() == str(os.getpid())
    assert [p.name for p in tmp_path.iterdir()] == ["paused"]
