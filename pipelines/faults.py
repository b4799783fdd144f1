"""Named points in a run where crash-safety tests can freeze the process before killing it.

Set ``LINEAGE_PAUSE_AT=<point>`` and ``LINEAGE_PAUSE_MARKER=<file>``: on reaching the point the
process writes its pid to the marker and sleeps, so a test can SIGKILL it at exactly that place.
The marker appears whole (written beside it, then renamed): a test polls for it and reads the pid
at once, and must never see the file created but still empty.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path


def checkpoint(point: str) -> None:
    if os.environ.get("LINEAGE_PAUSE_AT") != point:
        return
    marker = os.environ.get("LINEAGE_PAUSE_MARKER")
    if marker:
        pid = os.getpid()
        aside = Path(f"{marker}.{pid}.{threading.get_ident()}.writing")  # threads of a pool may pause at once
        aside.write_text(str(pid))
        os.replace(aside, marker)
    time.sleep(3600)
