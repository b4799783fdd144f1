"""Convert alone, in process: the JSONL block path against the per-record path, side by side.

    python benchmarks/convert.py [--docs 254724] [--rounds 3]

The input is the one ``dedupe_e2e.py`` uses for its large row: the bundled English corpus repeated
with one random word edit per copy (``common.edited_copies``, seed 7), ``--docs`` documents, as
JSONL.gz. Each side converts the whole file with ``ConvertOperator`` as an engine calls it, with
content hashes (as ``lineage run`` / ``ingest``) and without (as ``lineage dedupe``). The baseline
is the per-record path (``blocks=False``), measured in the same run, interleaved. Figures: the
fastest of ``--rounds`` rounds, wall and CPU time (all threads: the block path decompresses on a
second one), documents and uncompressed MB per second of wall time. Both sides must give the same
samples (a digest of every column). The load average is printed before and after: the machine is
shared.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import math
import os
import sys
import time
from pathlib import Path

import pyarrow as pa
from common import REPO, WORK, edited_copies, read_corpus

sys.path.insert(0, str(REPO))

from operators.convert import ConvertOperator, SourceSpec, plan_chunks  # noqa: E402
from operators.schema import SAMPLE_SCHEMA  # noqa: E402
from storage.tier import local_tier  # noqa: E402


def build_input(docs: int) -> tuple[Path, int]:
    """The edited copies as JSONL.gz (the file ``dedupe_e2e.py`` writes for the same count), and its
    uncompressed size."""
    corpus = read_corpus()
    path = WORK / f"e2e-{docs}.jsonl.gz"
    if not path.exists():
        WORK.mkdir(parents=True, exist_ok=True)
        copies = edited_copies(corpus, math.ceil(docs / len(corpus)), seed=7)
        with gzip.open(path.with_suffix(".partial"), "wt", encoding="utf-8") as out:
            for doc in itertools.islice(copies, docs):
                out.write(json.dumps(doc, ensure_ascii=False) + "\n")
        path.with_suffix(".partial").replace(path)
    with gzip.open(path, "rb") as fh:
        size = sum(len(piece) for piece in iter(lambda: fh.read(1 << 20), b""))
    return path, size


def convert(path: Path, *, blocks: bool, hashes: bool) -> tuple[float, float, int, pa.Table]:
    """(wall s, CPU s, samples, the samples)."""
    chunks = plan_chunks(SourceSpec("bench", local_tier(path.parent), path.name), 1)
    op = ConvertOperator(run_id="bench", hashes=hashes, blocks=blocks)
    wall, cpu = time.perf_counter(), time.process_time()
    outputs = [out for batch in chunks.to_batches(max_chunksize=1) for out in op.read(batch)]
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    samples = pa.Table.from_batches([out.samples for out in outputs], SAMPLE_SCHEMA)
    return wall, cpu, samples.num_rows, samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=254_724)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    path, size = build_input(args.docs)
    sides = [f"{name}, {mode}" for mode in ("hashes", "no hashes") for name in ("per-record", "blocks")]
    load_before = os.getloadavg()
    best: dict[str, tuple[float, float, int]] = {}
    for _ in range(args.rounds):
        for mode, hashes in (("hashes", True), ("no hashes", False)):
            tables = {}
            for name, blocks in (("per-record", False), ("blocks", True)):
                wall, cpu, rows, tables[name] = convert(path, blocks=blocks, hashes=hashes)
                key = f"{name}, {mode}"
                if key not in best or wall < best[key][0]:
                    best[key] = (wall, cpu, rows)
            if not tables["per-record"].equals(tables["blocks"]):
                sys.exit(f"the two paths gave different samples ({mode})")
            del tables
    load_after = os.getloadavg()
    print(f"\n## convert, {args.docs:,} documents ({size / 1e6:.0f} MB uncompressed), fastest of {args.rounds} rounds")
    print(f"1/5/15-min load average {load_before[0]:.1f}/{load_before[1]:.1f}/{load_before[2]:.1f} before,")
    print(f"{load_after[0]:.1f}/{load_after[1]:.1f}/{load_after[2]:.1f} after, on {os.cpu_count()} shared cores\n")
    print("| side | wall s | CPU s | docs/s | MB/s | vs per-record (wall) |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in sides:
        wall, cpu, rows = best[name]
        baseline = best[name.replace("blocks", "per-record")][0]
        ratio = "" if name.startswith("per-record") else f"{baseline / wall:.2f}x"
        print(f"| {name} | {wall:.2f} | {cpu:.2f} | {rows / wall:,.0f} | {size / 1e6 / wall:.1f} | {ratio} |")
    print("\nIn every round both paths gave equal samples (every column, compared as Arrow tables).")


if __name__ == "__main__":
    main()
