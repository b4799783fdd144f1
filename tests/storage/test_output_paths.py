"""Output paths a user names: folders made with their parents, and every path that cannot be used refused as
``Invalid`` with the path in the message (never an ``OSError``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage.errors import Invalid
from storage.output_paths import output_file, output_folder


def test_folders_are_made_and_files_get_theirs(tmp_path: Path) -> None:
    assert output_folder(tmp_path / "a" / "b") == tmp_path / "a" / "b" and (tmp_path / "a" / "b").is_dir()
    assert output_folder(tmp_path / "a") == tmp_path / "a"  # there already
    assert output_file(tmp_path / "c" / "d" / "out.jsonl") == tmp_path / "c" / "d" / "out.jsonl"
    assert (tmp_path / "c" / "d").is_dir() and not (tmp_path / "c" / "d" / "out.jsonl").exists()


def test_paths_that_cannot_be_used_are_refused_with_the_path(tmp_path: Path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    (tmp_path / "folder").mkdir()
    cases = [
        (lambda: output_folder(a_file), f"{a_file} is a file"),
        (lambda: output_folder(a_file / "sub"), f"cannot make the output folder {a_file / 'sub'}: Not a directory"),
        (lambda: output_file(a_file / "out.jsonl"), f"{a_file} is a file"),
        (lambda: output_file(tmp_path / "folder"), f"{tmp_path / 'folder'} is a folder"),
        (lambda: output_folder(Path("/proc/lineage-test")), "cannot make the output folder /proc/lineage-test"),
    ]
    for call, message in cases:
        with pytest.raises(Invalid, match=message):
            call()
    assert a_file.read_text() == "x"
