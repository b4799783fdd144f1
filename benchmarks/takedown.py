"""Benchmark applying a takedown (issue #22, item 6): 1,000 samples spread over 5% of a release's files.

1. Builds (once; reused from ``benchmarks/.work/takedown-apply/``) a release of N samples (default 5M)
   with the project's own writers (``benchmarks/api.py``'s builder: ``PartWriter``, ``commit_snapshot``,
   lineage rows, a dataset version and a release in the catalog), in data files of 15,000 samples,
   with texts of a few hundred bytes (Debian package descriptions from ``examples/data``, each
   followed by its sample id, so no two are equal). It records one takedown request: 1,000 sample ids
   drawn from 5% of the data files, chosen at random.
2. The data files are read once (the page cache warm for every side alike) and the project's modules
   compiled to bytecode (as installing the wheel does), then each side runs on a fresh copy of that
   state (catalog and tier), written to disk (``os.sync``) before the side starts, so no side flushes an
   earlier one's writes: Parquet data files are hard-linked
   (Delta never changes a data file in place), everything else (the SQLite catalog, Delta logs) is
   copied. So every side starts from the same bytes, and what it writes is found as new files.
   - ours, in-process: ``Service.apply_takedown`` on a new service that has answered the request's plan
     (what a user looks at first, and what a running ``lineage serve`` has long since loaded): only the
     apply is timed, so this is the service's own work, without the process's start-up;
   - ours, as a user runs it: ``lineage takedown apply ID --json`` as a whole process, start-up included;
   - the baseline a user would write: read every file of the table, filter the ids out, write a new
     Delta version with ``deltalake.write_deltalake(..., mode="overwrite")`` (streamed), timed as a call
     and again as a whole script (start-up included), the CLI's match;
   - a second reference: delta-rs's own ``DeltaTable.delete(predicate)``.

   Every side runs ``--rounds`` times (default 3), round by round in that order, each run on a fresh
   copy, and is checked each time (the new version lacks exactly the request's samples). A side's
   figures are those of its median run, printed with the fastest and slowest: a single run of a
   one-second command on a shared VM varies by a quarter (in one series of six CLI runs on fresh copies,
   1.45 s for the first and 1.18-1.30 s for the other five).
3. Bytes written are the sizes of the files each side created (or changed) under the copy, found by
   comparing the copy's files before and after; the catalog database is reported apart.

No eval set is registered, so publishing the successor checks no text for contamination: with eval sets,
that step costs more than it does here.

The machine may be shared: each side's CPU time (user + system, all threads; a whole process's for the
CLI and the script) is printed next to its wall time, with the ratios of those, as a check on a wall
ratio taken under load. The targets are on wall time.

Targets: ours at least 10x faster than the full rewrite (the call against the call, the CLI against the
script), and the bytes ours
writes in proportion to the affected files (at most 1.5x their size). Exits 1 when one fails. Prints
the machine's 1-minute load average.

Usage: python benchmarks/takedown.py [--samples 5000000] [--rebuild] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import random
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlalchemy import select

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO, WORK, compile_project, read_corpus, run_measured  # noqa: E402

import api as synthetic  # noqa: E402  (its release builder)
from lineage.catalog import Catalog, DatasetVersion  # noqa: E402
from lineage.settings import Settings  # noqa: E402
from storage.layout import DatasetTables  # noqa: E402

ROOT = WORK / "takedown-apply"
FILE_ROWS = 15_000  # samples per data file
AFFECTED_SAMPLES = 1_000
AFFECTED_FILE_SHARE = 0.05
SPEED_TARGET = 10.0
BYTES_TARGET = 1.5  # ours may write at most this many times the affected files' bytes
CATALOG_FILES = ("catalog.db", "catalog.db-wal", "catalog.db-journal", "catalog.db-shm")
DATA_TABLE = DatasetTables.for_dataset(synthetic.DATASET).data


def _load() -> float:
    return os.getloadavg()[0]


def corpus_texts(seed: int = 5) -> synthetic.TextMaker:
    """Texts of realistic size: a Debian package description (cut at 1,000 characters) and the sample id."""
    pool = pa.array([doc["text"][:1000] for doc in read_corpus()], pa.string())
    rng = np.random.default_rng(seed)

    def make(ids: pa.Array, _pos: np.ndarray) -> pa.Array:
        picked = pool.take(pa.array(rng.integers(0, len(pool), size=len(ids))))
        return pc.binary_join_element_wise(picked, "\n\n[sample ", ids, "]", "")

    return make


# -- the state every side starts from --------------------------------------------------------------
def build(samples: int, rebuild: bool) -> tuple[Path, dict]:
    base = ROOT / f"base-{samples}"
    marker = base / "bench.json"
    if not rebuild and marker.exists():
        print(f"reusing the release under {base} (--rebuild to rebuild)")
        # a base built before the latest migration is brought to head once, not by every side's copy
        Catalog(Settings(home=base).catalog_url or "").dispose()
        return base, json.loads(marker.read_text())
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    settings = Settings(home=base)
    print(f"building a release of {samples:,} samples ({FILE_ROWS:,} per file) under {base}", flush=True)
    synthetic.build_release(samples, settings, data_file_rows=FILE_ROWS, make_text=corpus_texts())

    from lineage.service.core import Service

    service = Service(settings)
    with service.catalog.session() as s:
        dv = s.scalars(select(DatasetVersion)).one()
        key = (dv.tier, dv.data_path, dv.data_delta_version)
    rows = service.tables.get(*key).dataset.to_table(columns=["sample_id", "__filename"])
    files = sorted(pc.unique(rows.column("__filename")).to_pylist())
    rng = random.Random(17)
    chosen = sorted(rng.sample(files, max(1, round(AFFECTED_FILE_SHARE * len(files)))))
    ids: list[str] = []
    for k, path in enumerate(chosen):
        in_file = rows.filter(pc.equal(rows.column("__filename"), path)).column("sample_id").to_pylist()
        want = AFFECTED_SAMPLES // len(chosen) + (k < AFFECTED_SAMPLES % len(chosen))
        ids += rng.sample(in_file, want)
    request = service.create_takedown(
        {"selector": {"sample_ids": ids}, "kind": "opt_out", "reason": "benchmarks/takedown.py"}, actor="bench"
    )
    service.close()
    facts = {
        "request_id": request.id,
        "ids": ids,
        "files": len(files),
        "rows": rows.num_rows,
        "affected_files": chosen,
    }
    marker.write_text(json.dumps(facts))
    return base, facts


def fresh_copy(base: Path, name: str) -> Path:
    """A copy of ``base`` that a side may change: data files hard-linked, everything else copied."""
    dest = ROOT / "runs" / name
    shutil.rmtree(dest, ignore_errors=True)
    for folder, _dirs, names in os.walk(base):
        rel = Path(folder).relative_to(base)
        (dest / rel).mkdir(parents=True, exist_ok=True)
        for n in names:
            src, dst = Path(folder) / n, dest / rel / n
            if n.endswith(".parquet") and "_delta_log" not in src.parts:
                os.link(src, dst)
            else:
                shutil.copy2(src, dst)
    return dest


def files_of(home: Path) -> dict[str, tuple[int, int, int]]:
    """Every file under ``home``: relative path -> (inode, size, mtime in ns)."""
    out = {}
    for folder, _dirs, names in os.walk(home):
        for n in names:
            p = Path(folder) / n
            st = p.stat()
            out[str(p.relative_to(home))] = (st.st_ino, st.st_size, st.st_mtime_ns)
    return out


def written(before: dict[str, tuple[int, int, int]], home: Path) -> dict[str, int]:
    """Bytes of the files created or changed since ``before``: data Parquet, Delta logs, other, catalog."""
    out = {"data": 0, "log": 0, "other": 0, "catalog": 0, "data_files": 0, "files": 0}
    for rel, (ino, size, mtime) in files_of(home).items():
        if before.get(rel) == (ino, size, mtime):
            continue
        if rel in CATALOG_FILES:
            out["catalog"] += size - (before[rel][1] if rel in before else 0)
            continue
        kind = "log" if "_delta_log" in rel else "data" if rel.startswith(f"data/{DATA_TABLE}/") else "other"
        out[kind] += size
        out["data_files" if kind == "data" else "files"] += 1
    out["total"] = out["data"] + out["log"] + out["other"]
    return out


def remaining(table_uri: str, ids: list[str], version: int | None = None) -> tuple[int, int]:
    """(rows, rows among ``ids``) of a Delta version."""
    from deltalake import DeltaTable

    ds = DeltaTable(table_uri, version=version).to_pyarrow_dataset()
    return ds.count_rows(), ds.count_rows(filter=pc.field("sample_id").isin(ids))


# -- the sides -------------------------------------------------------------------------------------
def ours_in_process(home: Path, request_id: int, profile: bool = False) -> tuple[float, object, str, float]:
    from lineage.service.core import Service

    service = Service(Settings(home=home))
    service.plan_takedown(request_id)  # what a user sees first; it also loads what any call would load
    profiler = cProfile.Profile() if profile else None
    t, cpu = time.perf_counter(), time.process_time()
    if profiler is not None:
        profiler.enable()
    applied = service.apply_takedown(request_id, actor="bench")
    if profiler is not None:
        profiler.disable()
    wall, cpu = time.perf_counter() - t, time.process_time() - cpu
    service.close()
    report = ""
    if profiler is not None:
        buf = io.StringIO()
        pstats.Stats(profiler, stream=buf).sort_stats("cumulative").print_stats(30)
        report = buf.getvalue()
    return wall, applied, report, cpu


def ours_cli(home: Path, request_id: int) -> tuple[float, dict, float]:
    env = {"LINEAGE_HOME": str(home), "PYTHONPATH": str(REPO)}
    run = run_measured([sys.executable, "-m", "lineage", "takedown", "apply", str(request_id), "--json"], env=env)
    if run.returncode != 0:
        raise SystemExit(f"lineage takedown apply failed:\n{run.output}")
    return run.wall_s, json.loads(run.output[run.output.index("{") :]), run.cpu_s


def full_rewrite(home: Path, ids: list[str]) -> tuple[float, float]:
    """What a user without takedown support writes: read everything, filter, overwrite the table."""
    from deltalake import DeltaTable, write_deltalake

    uri = str(home / "data" / DATA_TABLE)
    t, cpu = time.perf_counter(), time.process_time()
    ds = DeltaTable(uri).to_pyarrow_dataset()
    reader = ds.scanner(filter=~pc.field("sample_id").isin(ids)).to_reader()
    write_deltalake(uri, reader, mode="overwrite")
    return time.perf_counter() - t, time.process_time() - cpu


REWRITE_SCRIPT = """
import json, sys
import pyarrow.compute as pc
from deltalake import DeltaTable, write_deltalake
uri, ids = sys.argv[1], json.load(open(sys.argv[2]))
ds = DeltaTable(uri).to_pyarrow_dataset()
write_deltalake(uri, ds.scanner(filter=~pc.field("sample_id").isin(ids)).to_reader(), mode="overwrite")
"""


def full_rewrite_script(home: Path, ids: list[str]) -> tuple[float, float]:
    """The same rewrite as a user's script runs it: a whole process, start-up included (the CLI's match)."""
    ids_file = home.parent / f"{home.name}-ids.json"
    ids_file.write_text(json.dumps(ids))
    run = run_measured([sys.executable, "-c", REWRITE_SCRIPT, str(home / "data" / DATA_TABLE), str(ids_file)])
    if run.returncode != 0:
        raise SystemExit(f"the rewrite script failed:\n{run.output}")
    return run.wall_s, run.cpu_s


def delta_delete(home: Path, ids: list[str]) -> tuple[float, dict, float]:
    from deltalake import DeltaTable

    uri = str(home / "data" / DATA_TABLE)
    predicate = "sample_id IN (" + ", ".join(f"'{i}'" for i in ids) + ")"
    t, cpu = time.perf_counter(), time.process_time()
    metrics = DeltaTable(uri).delete(predicate)
    return time.perf_counter() - t, metrics, time.process_time() - cpu


def _pick(found: tuple, wall: int, out: int | None, cpu: int) -> tuple[float, object, float]:
    """(wall, what the side answered, CPU) out of a side's result tuple."""
    return found[wall], None if out is None else found[out], found[cpu]


# -- main ------------------------------------------------------------------------------------------
def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=5_000_000)
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--profile", action="store_true", help="also profile the in-process apply (own copy)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of every side; each figure is the median")
    args = parser.parse_args()
    for var in ("LINEAGE_CONFIG", "LINEAGE_CATALOG_URL", "LINEAGE_HOME"):
        os.environ.pop(var, None)

    base, facts = build(args.samples, args.rebuild)
    ids, request_id = facts["ids"], facts["request_id"]
    base_files = files_of(base)
    affected_bytes = sum(base_files[f"data/{DATA_TABLE}/{p}"][1] for p in facts["affected_files"])
    table_bytes = sum(s for rel, (_i, s, _m) in base_files.items() if rel.startswith(f"data/{DATA_TABLE}/run-"))
    print(
        f"release {synthetic.RELEASE}: {facts['rows']:,} samples in {facts['files']} data files "
        f"({table_bytes / 2**20:,.1f} MiB); request {request_id}: {len(ids):,} ids in "
        f"{len(facts['affected_files'])} files ({affected_bytes / 2**20:,.1f} MiB); load {_load():.2f} (2 cores)",
        flush=True,
    )

    # Every side reads the same hard-linked data files: read them once first, so the first side timed
    # does not pay for the page cache that all the later ones then find warm.
    warmed = 0
    for path in sorted((base / "data" / DATA_TABLE).rglob("*.parquet")):
        warmed += len(path.read_bytes())
    print(f"page cache warmed: {warmed / 2**20:,.1f} MiB of data files read once before any side", flush=True)
    compile_project()  # before any timed process (run_measured would do it at the CLI's turn)

    def checked(home: Path, removed: int | None) -> tuple[bool, str]:
        """Whether the side's new version lacks exactly the request's samples (and, for ours, says so)."""
        rows, left = remaining(str(home / "data" / DATA_TABLE), ids)
        removed = facts["rows"] - rows if removed is None else removed
        good = left == 0 and rows == facts["rows"] - len(ids) and removed == len(ids)
        return good, f"{removed:,} removed, {left} of the ids left"

    def in_process(home: Path) -> tuple[float, float, int | None, str]:
        wall, applied, _report, cpu = ours_in_process(home, request_id)
        return wall, cpu, sum(s.samples_removed for s in applied.successors), ""

    def cli(home: Path) -> tuple[float, float, int | None, str]:
        wall, out, cpu = ours_cli(home, request_id)
        return wall, cpu, sum(s["samples_removed"] for s in out["successors"]), ""

    def rewrite(home: Path) -> tuple[float, float, int | None, str]:
        return (*full_rewrite(home, ids), None, "")

    def script(home: Path) -> tuple[float, float, int | None, str]:
        return (*full_rewrite_script(home, ids), None, "")

    def delete(home: Path) -> tuple[float, float, int | None, str]:
        wall, metrics, cpu = delta_delete(home, ids)
        return wall, cpu, None, f"; {metrics}"

    sides = [
        ("ours, in-process", in_process),
        ("ours, `lineage takedown apply`", cli),
        ("baseline: full rewrite (write_deltalake)", rewrite),
        ("baseline as a script (start-up included)", script),
        ("reference: DeltaTable.delete", delete),
    ]
    runs: dict[str, list[tuple[float, float, float, dict]]] = {name: [] for name, _ in sides}  # wall, CPU, load, bytes
    ok = True
    # Rounds, each side once per round in the same order: a side's figure is its median over the rounds,
    # so one slow run (a shared VM's neighbour, the first process to map the libraries) does not decide a
    # ratio, and a drift in the machine's load falls on every side alike.
    for round_no in range(1, args.rounds + 1):
        for name, run in sides:
            home = fresh_copy(base, name.split(":")[0].split(",")[0].replace(" ", "-") + f"-{round_no}")
            before = files_of(home)
            os.sync()  # the copy's and the previous side's writes on disk, not flushed while this side runs
            load = _load()
            wall, cpu, removed, extra = run(home)
            good, what = checked(home, removed)
            ok = ok and good
            runs[name].append((wall, cpu, load, written(before, home)))
            print(f"  round {round_no}, {name}: {wall:.2f} s (CPU {cpu:.2f} s); {what}{extra}", flush=True)
            shutil.rmtree(home, ignore_errors=True)

    def median_run(name: str) -> tuple[float, float, float, dict]:
        return sorted(runs[name], key=lambda r: r[0])[(len(runs[name]) - 1) // 2]

    results = [(name, *median_run(name)) for name, _ in sides]  # name, wall, CPU, load, bytes (of the median run)
    results = [(name, wall, w, load, cpu) for name, wall, cpu, load, w in results]
    spread = {name: (min(r[0] for r in runs[name]), max(r[0] for r in runs[name])) for name, _ in sides}

    profile = ""
    if args.profile:
        home = fresh_copy(base, "profile")
        _w, _a, profile, _c = ours_in_process(home, request_id, profile=True)
        shutil.rmtree(home, ignore_errors=True)
    shutil.rmtree(ROOT / "runs", ignore_errors=True)

    rewrite_s, script_s = results[2][1], results[3][1]
    cpu_of = {results[0][0]: results[2][4], results[1][0]: results[3][4]}  # each of ours: its match's CPU
    # each of ours against its match: the call against the rewrite's call, the CLI against the script
    baseline_of = {results[0][0]: ("the full rewrite", rewrite_s), results[1][0]: ("the full rewrite script", script_s)}
    print()
    print(
        f"| side | wall s (median of {args.rounds}) | min-max s | CPU s | vs full rewrite (call) | bytes written "
        "| data Parquet | Delta logs | other | data files | catalog grew | load at start |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, wall, w, load, cpu in results:
        low, high = spread[name]
        print(
            f"| {name} | {wall:.2f} | {low:.2f}-{high:.2f} | {cpu:.2f} | {rewrite_s / wall:.2f}x "
            f"| {w['total'] / 2**20:,.2f} MiB "
            f"| {w['data'] / 2**20:,.2f} MiB | {w['log'] / 2**20:,.2f} MiB | {w['other'] / 2**20:,.2f} MiB "
            f"| {w['data_files']} | {w['catalog'] / 2**10:,.0f} KiB | {load:.2f} |"
        )
    print(f"\naffected files: {len(facts['affected_files'])} of {facts['files']}, {affected_bytes / 2**20:,.2f} MiB")
    if profile:
        print("\nprofile of Service.apply_takedown (cumulative):\n" + profile)
    print(f"load average after: {_load():.2f}")

    failed = [] if ok else ["a side did not remove exactly the request's samples"]
    for name, wall, w, _, cpu in results[:2]:
        against, base_s = baseline_of[name]
        ratio = base_s / wall
        print(
            f"{name}: {ratio:.1f}x faster than {against} (target >= {SPEED_TARGET:.0f}x); "
            f"in CPU time {cpu_of[name] / cpu:.1f}x"
        )
        if ratio < SPEED_TARGET:
            failed.append(f"{name} is {ratio:.1f}x faster than {against}, not {SPEED_TARGET:.0f}x")
        share = w["total"] / affected_bytes
        print(
            f"{name}: wrote {w['total'] / 2**20:,.2f} MiB for {affected_bytes / 2**20:,.2f} MiB of affected files "
            f"({share:.2f}x; target <= {BYTES_TARGET}x)"
        )
        if share > BYTES_TARGET:
            failed.append(f"{name} wrote {share:.2f}x the affected files' bytes, not <= {BYTES_TARGET}x")
    for f in failed:
        print(f"FAILED: {f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
