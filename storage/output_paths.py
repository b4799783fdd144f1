"""Local paths a user names for output (``--output``, ``--out``): checked and their folders made before any
work, and refused in one line (:class:`~storage.errors.Invalid`) when they cannot be used.

Without this, a folder that could not be made (a parent that is a file, ``/proc``) or a file name that is a
folder surfaced as Python's ``OSError`` with a traceback, some of them only after all the work was done.
"""

from __future__ import annotations

from pathlib import Path

from storage.errors import Invalid


def output_folder(path: Path) -> Path:
    """``path`` as a folder for output files, made (with its parents) if it is not there."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise Invalid(f"{path} is a file: the output must be a folder") from None
    except OSError as exc:
        raise Invalid(f"cannot make the output folder {path}: {exc.strerror or exc}") from None
    return path


def output_file(path: Path) -> Path:
    """``path`` as an output file: its folder made, and ``path`` itself not a folder."""
    output_folder(path.parent)
    if path.is_dir():
        raise Invalid(f"{path} is a folder: name the output file")
    return path
