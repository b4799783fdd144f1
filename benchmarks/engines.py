"""Benchmark one pipeline (convert → exact dedupe → quality → MinHash) on the local, Spark and Ray engines.

Input: the English corpus repeated ``--copies`` times (16 → about one million documents), each
copy after the first with one random word edit per document (``common.edited_copies``), one
JSONL file per copy. Each engine runs in its own process: start-up (Spark session / Ray
runtime) is timed separately from the run, and docs/s counts the run only. All engines must
produce the same release (same row count and content hash of the sorted data).

Usage: python benchmarks/engines.py [--copies 16] [--engines local,spark,ray] [--cpus 2]

Measured 2026-11-30 on the 2-core development machine (shared with other jobs, load 2-5),
1,018,896 documents, 440,329 in the release on every engine, two runs of the same code:

engine | start-up s | run s | docs/s | run vs local
---|---:|---:|---:|---:
local | 0.0 | 89.2 / 85.6 | 11,419 / 11,899 | 1.00x
spark (local[2]) | 3.9 / 3.9 | 173.0 / 202.1 | 5,889 / 5,041 | 1.94x / 2.36x
ray (2 CPUs) | 3.9 / 2.9 | 88.5 / 64.4 | 11,519 / 15,820 | 0.99x / 0.75x
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from common import REPO, WORK, edited_copies, read_corpus

PIPELINE = {
    "name": "bench-engines",
    "operators": [
        {"name": "exact_dedupe"},
        {"name": "quality", "params": {"min_words": 20, "min_cjk_chars": 40}},
        {"name": "minhash_dedupe"},
    ],
}


def build_input(copies: int) -> tuple[Path, int]:
    docs = read_corpus()
    folder = WORK / f"engines-{copies}x"
    if not (folder / "_COMPLETE").exists():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        per_copy = len(docs)
        fh = None
        for i, doc in enumerate(edited_copies(docs, copies, seed=11)):
            if i % per_copy == 0:
                if fh:
                    fh.close()
                fh = (folder / f"copy-{i // per_copy:03d}.jsonl").open("w", encoding="utf-8")
            fh.write(json.dumps(doc, ensure_ascii=False) + "\n")
        if fh:
            fh.close()
        (folder / "_COMPLETE").write_text("")
    return folder, copies * len(docs)


def run_one(engine: str, folder: Path, home: Path, cpus: int) -> dict:
    """In this process: start the engine's runtime, then run the pipeline through the runner."""
    sys.path.insert(0, str(REPO))
    os.environ["LINEAGE_HOME"] = str(home)
    from lineage.catalog import Catalog
    from lineage.runs import Runner
    from lineage.settings import get_settings
    from pipelines.engines import get_engine
    from pipelines.spec import PipelineSpec

    settings = get_settings()
    settings.engine.spark_master = f"local[{cpus}]"
    settings.engine.spark_conf = {"spark.driver.memory": "6g", "spark.sql.shuffle.partitions": str(2 * cpus)}
    settings.engine.ray_num_cpus = cpus
    settings.duckdb_memory_limit = "4GB"  # the local engine's signature join needs more than the default at 1M docs
    start = time.perf_counter()
    engine_obj = get_engine(engine, settings.execution())  # starts the session/runtime; the run reuses it
    startup = time.perf_counter() - start
    spec = PipelineSpec.model_validate(
        {
            **PIPELINE,
            "engine": engine,
            "inputs": [{"dataset": "bench", "path": str(folder / "copy-*.jsonl"), "id_field": "id"}],
            "output": {"dataset": f"bench-{engine}"},
        }
    )
    start = time.perf_counter()
    outcome = Runner(settings, Catalog(settings.catalog_url or "")).run(spec)
    run = time.perf_counter() - start
    engine_obj.close()
    return {"engine": engine, "startup_s": startup, "run_s": run, "rows": outcome.row_count, "counts": outcome.counts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=16)
    parser.add_argument("--engines", default="local,spark,ray")
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: run one engine, print JSON
    parser.add_argument("--home", help=argparse.SUPPRESS)
    args = parser.parse_args()
    folder, docs = build_input(args.copies)
    if args.one:
        print("RESULT " + json.dumps(run_one(args.one, folder, Path(args.home), args.cpus)))
        return

    results = []
    for engine in args.engines.split(","):
        home = WORK / f"home-engines-{engine}"
        shutil.rmtree(home, ignore_errors=True)
        cmd = [sys.executable, __file__, "--copies", str(args.copies), "--cpus", str(args.cpus)]
        cmd += ["--one", engine, "--home", str(home)]
        start = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - start
        line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
        if proc.returncode != 0 or line is None:
            sys.exit(f"{engine} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        r = json.loads(line.removeprefix("RESULT "))
        r["process_s"] = wall
        results.append(r)
        print(f"{engine}: start-up {r['startup_s']:.1f} s, run {r['run_s']:.1f} s", flush=True)

    base = next((r for r in results if r["engine"] == "local"), results[0])
    print(f"\n{docs:,} input documents, {args.cpus} cores\n")
    print("engine | start-up s | run s | docs/s | run vs local | output rows")
    print("---|---:|---:|---:|---:|---:")
    for r in results:
        ratio, speed = r["run_s"] / base["run_s"], docs / r["run_s"]
        print(f"{r['engine']} | {r['startup_s']:.1f} | {r['run_s']:.1f} | {speed:,.0f} | {ratio:.2f}x | {r['rows']:,}")
    counts = {r["engine"]: (r["rows"], r["counts"]["steps"]) for r in results}
    if len({json.dumps(v, sort_keys=True) for v in counts.values()}) != 1:
        sys.exit("engines disagree on the output: " + json.dumps(counts, indent=1)[:3000])


if __name__ == "__main__":
    main()
