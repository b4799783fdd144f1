"""One process reading warm epochs of the release ``benchmarks/reader.py`` built: wall and CPU time.

The 8-rank figures of ``reader.py`` move by 30% between runs on 2 shared cores; one process reading
the same release for several epochs, timed by its own CPU clock, moves by a few percent, so this is
what ``before_after.py`` compares for the reader's read path (``open_release``, shuffled, the
``sample_id`` and ``text`` columns). It uses only the public ``lineage.open_release``, so it runs
against any commit's tree (``PYTHONPATH``); the release must exist (run ``reader.py --gb G`` first).

Usage: python benchmarks/reader_epoch.py [--gb 0.5] [--epochs 8]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
from pathlib import Path


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gb", type=float, default=0.5, help="the reader.py --gb whose release to read")
    parser.add_argument("--epochs", type=int, default=8)
    args = parser.parse_args()
    work = Path.cwd() / "benchmarks" / ".work"  # the tree being measured: run from its root
    homes = sorted(work.glob(f"reader-home-{args.gb:g}gb-*"))
    if not homes or not (homes[-1] / "_RELEASED").exists():
        sys.exit(f"no release under {work}: run benchmarks/reader.py --gb {args.gb:g} in this tree first")
    home = homes[-1]
    os.environ["LINEAGE_HOME"] = str(home)
    import lineage

    ref = (home / "_RELEASED").read_text()
    reader = lineage.open_release(ref, seed=1, shuffle=True, batch_size=4096, columns=["sample_id", "text"])
    walls, cpus = [], []
    rows = 0
    for epoch in range(args.epochs + 1):  # epoch 0 warms allocators and page cache: not counted
        reader.set_epoch(epoch)
        wall, cpu = time.perf_counter(), cpu_seconds()
        rows = sum(batch.num_rows for batch in reader)
        if epoch:
            walls.append(time.perf_counter() - wall)
            cpus.append(cpu_seconds() - cpu)
    print(f"release {ref} under {home.name}: {rows:,} samples per epoch, {args.epochs} warm epochs")
    print(f"warm epoch: median wall {statistics.median(walls):.3f} s, median CPU {statistics.median(cpus):.3f} s")
    print(f"warm samples/s: {rows / statistics.median(walls):,.0f}")


if __name__ == "__main__":
    main()
