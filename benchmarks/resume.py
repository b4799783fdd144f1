"""Benchmark resuming a killed run (issue #20, item 5) on the in-process engine.

Input: the bundled English and Chinese corpora, the English one 4 times (copies 1-3 with one random word
edit each), ~257k documents in 8 JSONL files, so 8 partitions. Pipeline: convert → Gopher repetition →
quality → exact dedupe → MinHash dedupe (filters first, as curation pipelines order them). In one
invocation, each a separate ``lineage run`` process:

1. a full run, timed (what a rerun from scratch costs);
2. a second run of the same file in a fresh home, SIGKILLed once 6 of its 8 partitions are recorded
   (``partition.5.recorded``, 75%), timed up to the kill;
3. ``lineage run`` again: it resumes run 2, reusing its 6 partitions; timed.

Prints the three wall times, the saving of 3 against 1, and the load average before and after. Only
the partitions (convert and the map steps before the first dedupe: here both quality steps) are
saved; the dedupe steps over the whole input and the final sorts run again on resume. With
``--dedupe-first`` the pipeline is convert → exact → MinHash → quality, whose partitions hold convert
alone, so a resume saves much less.

Usage: python benchmarks/resume.py [--copies 4] [--files 8]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from common import CORPUS_ZH, REPO, WORK, edited_copies, read_corpus, run_measured

PIPELINE = """
name = "bench-resume"
[[inputs]]
dataset = "mixed"
path = "{path}"
id_field = "id"
[[operators]]
name = "quality_gopher_repetition"
[[operators]]
name = "quality"
params = {{ min_words = 20, min_cjk_chars = 40 }}
[[operators]]
name = "exact_dedupe"
[[operators]]
name = "minhash_dedupe"
[output]
dataset = "mixed-clean"
"""
DEDUPE_FIRST = """
name = "bench-resume"
[[inputs]]
dataset = "mixed"
path = "{path}"
id_field = "id"
[[operators]]
name = "exact_dedupe"
[[operators]]
name = "minhash_dedupe"
[[operators]]
name = "quality"
params = {{ min_words = 20, min_cjk_chars = 40 }}
[output]
dataset = "mixed-clean"
"""
LINEAGE = [sys.executable, "-m", "lineage"]  # run from the repository root: this checkout's code


def build(copies: int, files: int) -> tuple[Path, int]:
    folder = WORK / f"resume-{copies}x-{files}"
    marker = folder / "_COMPLETE"
    docs = [*edited_copies(read_corpus(), copies, seed=20), *read_corpus(CORPUS_ZH)]
    if not marker.exists():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for k in range(files):
            with (folder / f"part-{k}.jsonl").open("w", encoding="utf-8") as fh:
                for doc in docs[k::files]:
                    fh.write(json.dumps({"id": doc["id"], "text": doc["text"]}, ensure_ascii=False) + "\n")
        marker.write_text("")
    return folder, len(docs)


def fresh_home(name: str, corpus: Path, dedupe_first: bool) -> tuple[Path, dict[str, str]]:
    home = WORK / f"home-resume-{name}"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    (home / "pipeline.toml").write_text((DEDUPE_FIRST if dedupe_first else PIPELINE).format(path=corpus))
    return home, {"LINEAGE_HOME": str(home)}


def killed_at(point: str, home: Path, env: dict[str, str]) -> float:
    """``lineage run`` paused at ``point`` (pipelines.faults) and SIGKILLed there; its wall time until then."""
    marker = home / "paused"
    env = {**os.environ, **env, "LINEAGE_PAUSE_AT": point, "LINEAGE_PAUSE_MARKER": str(marker)}
    start = time.perf_counter()
    proc = subprocess.Popen([*LINEAGE, "run", str(home / "pipeline.toml")], env=env, cwd=REPO)
    while not marker.exists():
        if proc.poll() is not None:
            sys.exit(f"the run ended before {point}")
        time.sleep(0.05)
    wall = time.perf_counter() - start
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    return wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--dedupe-first", action="store_true", help="exact → MinHash → quality")
    args = parser.parse_args()
    os.chdir(REPO)
    corpus, docs = build(args.copies, args.files)
    point = f"partition.{args.files * 3 // 4 - 1}.recorded"
    load_before = os.getloadavg()

    home, env = fresh_home("full", corpus, args.dedupe_first)
    full = run_measured([*LINEAGE, "run", str(home / "pipeline.toml")], env=env)
    if full.returncode != 0:
        sys.exit(f"full run failed:\n{full.output}")

    home, env = fresh_home("resumed", corpus, args.dedupe_first)
    until_kill = killed_at(point, home, env)
    resumed = run_measured([*LINEAGE, "run", str(home / "pipeline.toml")], env=env)
    if resumed.returncode != 0 or "resumed interrupted run" not in resumed.output:
        sys.exit(f"the rerun did not resume:\n{resumed.output}")
    reused = next(line for line in resumed.output.splitlines() if "resumed interrupted run" in line)
    load_after = os.getloadavg()

    order = "exact → MinHash → quality" if args.dedupe_first else "Gopher repetition → quality → exact → MinHash"
    print(f"input: {docs:,} documents in {args.files} files; {order}; killed at {point}")
    print(f"full run:                 {full.wall_s:7.1f} s wall, {full.cpu_s:7.1f} s CPU")
    print(f"killed run until SIGKILL: {until_kill:7.1f} s wall")
    print(f"resumed rerun:            {resumed.wall_s:7.1f} s wall, {resumed.cpu_s:7.1f} s CPU  ({reused.strip()})")
    saved = full.wall_s - resumed.wall_s
    print(f"saving against a full rerun: {saved:.1f} s ({saved / full.wall_s:.0%})")
    print(f"load average (1, 5, 15 min) before: {load_before}, after: {load_after}")


if __name__ == "__main__":
    main()
