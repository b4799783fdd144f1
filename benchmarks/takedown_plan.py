"""Benchmark a takedown plan on a 10M-sample release (issue #22: a source lookup answers in under 2 s).

1. Builds (once; reused from ``benchmarks/.work/takedown/``) the synthetic release of ``benchmarks/api.py``:
   N samples (default 10M) read from ~105 source files of 100,000 records each, written straight to
   Delta tables with the project's writers, then a dataset version and a release in the catalog.
2. Records takedown requests of each form and times ``Service.plan_takedown`` in-process, cold (a new
   service: the Delta version is opened, its files listed) and warm, and ``lineage takedown plan ID
   --json`` as a whole process (start-up included), as a user runs it.
3. The baseline, in the same run: the DuckDB query a user would write over the same Parquet files
   (``read_parquet(..., filename = true)`` grouped by file) for the same source.

Exits 1 if the cold in-process source lookup takes 2 s or more. Prints the machine's load average.

Usage: python benchmarks/takedown_plan.py [--samples 10000000] [--rebuild]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO, WORK  # noqa: E402

import api as synthetic  # noqa: E402  (its release builder)
from lineage.catalog import DatasetVersion  # noqa: E402
from lineage.settings import Settings  # noqa: E402

HOME = WORK / "takedown" / "home"
TARGET_S = 2.0


def _time(fn, runs: int = 1) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    best, out = float("inf"), None
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=10_000_000)
    parser.add_argument("--rebuild", action="store_true")
    args = parser.parse_args()

    settings = Settings(home=HOME)
    marker = HOME / f"built-{args.samples}"
    if args.rebuild or not marker.exists():
        shutil.rmtree(HOME, ignore_errors=True)
        HOME.mkdir(parents=True)
        print(f"building a release of {args.samples:,} samples under {HOME}", flush=True)
        synthetic.build_release(args.samples, settings)
        marker.write_text("ok")
    else:
        print(f"reusing the release under {HOME} (--rebuild to rebuild)")

    from lineage.service.core import Service

    service = Service(settings)
    with service.catalog.session() as s:
        dv = s.scalars(__import__("sqlalchemy").select(DatasetVersion)).one()
        data_key = (dv.tier, dv.data_path, dv.data_delta_version)
        data_root = Path(settings.tier_config(dv.tier).root) / dv.data_path
        rows = dv.row_count
    ids = service.tables.get(*data_key).dataset.to_table(columns=["sample_id"]).column("sample_id")
    some_ids = random.Random(3).sample(ids.to_pylist(), 1000)
    sources = rows // synthetic.ROWS_PER_FILE  # source files part-00000.jsonl ...: 100,000 records each
    one_file = f"part-{sources // 2:05d}.jsonl"
    spread = "part-(?:" + "|".join(f"{i:05d}" for i in range(0, sources, max(1, sources // 5))[:5]) + r")\.jsonl"
    forms = {
        "source: one file's URI": {"source": {"dataset": "synth", "uri": f"file:///bench/raw/{one_file}"}},
        "source: a path glob (10 files)": {"source": {"dataset": "synth", "path": "part-0000?.jsonl"}},
        "1,000 sample ids": {"sample_ids": some_ids},
        "where source_path regex (5 files)": {"where": {"field": "source_path", "op": "regex", "value": spread}},
    }
    requests = {
        name: service.create_takedown({"selector": sel, "kind": "opt_out", "reason": "benchmark"}).id
        for name, sel in forms.items()
    }
    service.close()
    print(f"release {synthetic.RELEASE}: {rows:,} samples; load average {os.getloadavg()[0]:.2f} (2 cores)")

    results = []
    for name, request_id in requests.items():
        fresh = Service(settings)  # cold: the Delta version is opened and its files listed by this call
        cold, plan = _time(lambda fresh=fresh, rid=request_id: fresh.plan_takedown(rid, sample_limit=10))
        warm, _ = _time(lambda fresh=fresh, rid=request_id: fresh.plan_takedown(rid, sample_limit=10), runs=3)
        fresh.close()
        env = {**os.environ, "LINEAGE_HOME": str(HOME), "PYTHONPATH": str(REPO)}
        env.pop("LINEAGE_CONFIG", None)
        env.pop("LINEAGE_CATALOG_URL", None)
        t = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-m", "lineage", "takedown", "plan", str(request_id), "--json", "--sample-limit", "10"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        e2e = time.perf_counter() - t
        found = json.loads(out.stdout)["releases"]
        affected = found[0]["samples"] if found else 0
        assert plan.releases[0].samples == affected if found else not plan.releases
        results.append((name, affected, len(found[0]["files"]) if found else 0, cold, warm, e2e))

    # the baseline: DuckDB over the same files, grouped by file, for the one-file source
    files = [str(p) for p in sorted(data_root.rglob("*.parquet"))]
    con = duckdb.connect()
    query = (
        "SELECT filename, count(*) FROM read_parquet(?, filename = true) "
        "WHERE source_dataset = 'synth' AND source_uri = ? GROUP BY 1"
    )
    base_s = statistics.median(
        _time(lambda: con.execute(query, [files, f"file:///bench/raw/{one_file}"]).fetchall())[0] for _ in range(3)
    )
    base_rows = sum(n for _f, n in con.execute(query, [files, f"file:///bench/raw/{one_file}"]).fetchall())

    print()
    print("| request | affected samples | files | plan, cold s | plan, warm s | `lineage takedown plan`, s |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, affected, nfiles, cold, warm, e2e in results:
        print(f"| {name} | {affected:,} | {nfiles} | {cold:.2f} | {warm:.2f} | {e2e:.2f} |")
    print(
        f"| baseline: DuckDB read_parquet grouped by file (one file's URI) | {base_rows:,} | - | {base_s:.2f} | - | - |"
    )
    cold_source = results[0][3]
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    print(f"source lookup, cold in-process: {cold_source:.2f} s (target < {TARGET_S} s); baseline {base_s:.2f} s")
    if results[0][1] != base_rows:
        print(f"MISMATCH: the plan found {results[0][1]:,} samples, the baseline {base_rows:,}")
        sys.exit(1)
    if cold_source >= TARGET_S:
        sys.exit(1)


if __name__ == "__main__":
    main()
