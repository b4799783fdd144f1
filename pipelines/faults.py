"""Named points in a run where crash-safety tests can freeze the process before killing it.

Set ``LINEAGE_PAUSE_AT=<point>`` and ``LINEAGE_PAUSE_MARKER=<file>``: on reaching the point the
process writes the marker and sleeps, so a test can SIGKILL it at exactly that place.
"""

from __future__ import annotations

import os
import time
from pathlib import Path


def checkpoint(point: str) -> None:
    if os.environ.get("LINEAGE_PAUSE_AT") != point:
        return
    marker = os.environ.get("LINEAGE_PAUSE_MARKER")
    if marker:
        Path(marker).write_text(str(os.getpid()))
    time.sleep(3600)
