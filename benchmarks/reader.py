"""Benchmark the training reader against a plain ``pyarrow.dataset`` scan of the same files.

Builds (once) a release of about 2 GB of Parquet (zstd) from a 5 GB JSONL input (the Debian
corpus repeated with random edits; ``--gb`` sets the input's size), then measures, for the local
tier and for a real Ceph RGW tier (started here):

* one rank, ``open_release(..., shuffle=True)`` vs a plain scan of the same Parquet files;
* 8 reader processes at once (ranks 0-7 of 8) vs 8 processes each scanning every 8th row group.

Samples/s and MB/s (Parquet bytes read / wall time of the read), and the CPU time (user + system,
all threads, summed over the ranks) each side spent reading: with 8 ranks on fewer cores the read
is CPU-bound, so that is where a gap shows. Opening is timed on its own, as a job pays it once:
ours looks the release up in the catalog, records the read and reads the footers; plain builds its
dataset (its catalog lookup is not timed). All ranks open, wait at a barrier, then read at once.
Each process reads twice: a *cold* pass, the first in a fresh process (memory allocators warm up
during it), and a *warm* pass, as every later epoch of a training job is (ours reads the next
epoch, a new shuffle; plain scans again).
The target: ours ≥ 0.9× the plain scan, in samples/s, in both passes.
Usage: python benchmarks/reader.py [--gb 5.0] [--skip-ceph]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import resource
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

from common import REPO, WORK, edited_copies, read_corpus

COLUMNS = ["sample_id", "text"]
PASSES = ("cold", "warm")


def build_release(gb: float) -> tuple[Path, str]:
    from lineage.settings import Settings
    from operators.schema import SAMPLE_SCHEMA
    from pipelines.parquet_out import embeds_arrow_schema

    # row groups are the reader's blocks, and whether files embed an Arrow schema decides how
    # strings decode: a new layout needs a new release
    layout = Settings()
    schema = "arrow" if embeds_arrow_schema(SAMPLE_SCHEMA) else "parquet"
    home = WORK / (
        f"reader-home-{gb:g}gb-rg{layout.parquet_row_group_rows}-{layout.parquet_row_group_bytes >> 20}mb-{schema}"
    )
    marker = home / "_RELEASED"
    if marker.exists():
        return home, marker.read_text()
    shutil.rmtree(home, ignore_errors=True)
    raw = home / "raw"
    raw.mkdir(parents=True)
    docs = read_corpus()
    one_pass = sum(len(json.dumps(d, ensure_ascii=False).encode()) + 1 for d in docs)
    copies = max(1, round(gb * 1e9 / one_pass))
    with (raw / "part.jsonl").open("w", encoding="utf-8") as fh:
        for doc in edited_copies(docs, copies, seed=11):
            fh.write(json.dumps(doc, ensure_ascii=False) + "\n")
    os.environ["LINEAGE_HOME"] = str(home)
    from lineage.catalog import Catalog
    from lineage.releases import publish
    from lineage.runs import Runner
    from lineage.settings import get_settings
    from pipelines.spec import PipelineSpec

    get_settings.cache_clear()
    settings = get_settings()
    catalog = Catalog(settings.catalog_url or "")
    spec = PipelineSpec.model_validate(
        {
            "name": "bench",
            "inputs": [{"dataset": "big", "path": str(raw), "id_field": "id"}],
            "output": {"dataset": "big"},
        }
    )
    Runner(settings, catalog).run(spec)
    publish(catalog, settings, "big@bench")
    shutil.rmtree(raw)
    marker.write_text("big@bench")
    return home, "big@bench"


def _env(home: Path, extra_config: Path | None) -> None:
    os.environ["LINEAGE_HOME"] = str(home)
    if extra_config is not None:
        os.environ["LINEAGE_CONFIG"] = str(extra_config)
    from lineage.settings import get_settings

    get_settings.cache_clear()


def _cpu_seconds() -> float:
    """User + system CPU time of this process (all its threads) so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _passes(go, read_pass: Callable[[int], int]) -> tuple[int, list[float], list[float]]:
    """Each of the PASSES, started when every rank has opened (or finished the last pass), so they
    read at the same time: the rows ``read_pass(k)`` read, and its wall and CPU seconds."""
    times, cpu = [], []
    for k in range(len(PASSES)):
        go.wait()
        start, used = time.perf_counter(), _cpu_seconds()
        rows = read_pass(k)
        times.append(time.perf_counter() - start)
        cpu.append(_cpu_seconds() - used)
    return rows, times, cpu


def ours(home: Path, config: Path | None, ref: str, rank: int, world: int, tier: str | None, q: mp.Queue, go) -> None:
    _env(home, config)
    os.environ["LOCAL_WORLD_SIZE"] = str(world)  # all ranks on this node, as torchrun would say
    import lineage
    import lineage.reader.release_reader
    import lineage.releases  # noqa: F401  (imports stay outside the timer, as in plain())

    opened = time.perf_counter()
    reader = lineage.open_release(
        ref,
        rank=rank,
        world_size=world,
        seed=1,
        batch_size=4096,
        columns=COLUMNS,
        prefer_tier=tier,
        job="bench-reader",
        **json.loads(os.environ.get("BENCH_READER_OPTIONS", "{}")),
    )
    open_s = time.perf_counter() - opened

    def read_epoch(epoch: int) -> int:
        reader.set_epoch(epoch)
        return sum(b.num_rows for b in reader)

    q.put((*_passes(go, read_epoch), open_s))


def plain(home: Path, config: Path | None, ref: str, rank: int, world: int, tier: str | None, q: mp.Queue, go) -> None:
    _env(home, config)
    import pyarrow.dataset as pads

    from lineage.catalog import Catalog
    from lineage.catalog.queries import get_release
    from lineage.releases.replicas import verified_locations
    from lineage.settings import get_settings
    from storage.tier import get_tier

    settings = get_settings()
    with Catalog(settings.catalog_url or "").session() as s:
        release = get_release(s, ref)
        loc = next(r for r in verified_locations(s, release) if r.tier == (tier or "local"))
        files = [f["path"] for f in release.manifest["files"]]
        table_path = loc.table_path
    t = get_tier(tier or "local", settings)
    opened = time.perf_counter()
    ds = pads.dataset([t.path(table_path, f) for f in files], filesystem=t.filesystem, format="parquet")
    if world > 1:  # this process's share: every world-th row group
        groups = [rg for frag in ds.get_fragments() for rg in frag.split_by_row_group()]
        ds = pads.FileSystemDataset(groups[rank::world], ds.schema, ds.format, filesystem=t.filesystem)
    open_s = time.perf_counter() - opened
    q.put((*_passes(go, lambda _: sum(b.num_rows for b in ds.to_batches(columns=COLUMNS, batch_size=4096))), open_s))


def measure(
    fn, home: Path, config: Path | None, ref: str, world: int, tier: str | None, total_bytes: int
) -> list[dict]:
    """One run of ``world`` processes; figures per pass (the slowest rank's read time counts)."""
    ctx = mp.get_context("spawn")  # deltalake must not run in forked children
    q: mp.Queue = ctx.Queue()
    go = ctx.Barrier(world)
    procs = [ctx.Process(target=fn, args=(home, config, ref, r, world, tier, q, go)) for r in range(world)]
    for p in procs:
        p.start()
    results = [q.get(timeout=3600) for _ in procs]
    for p in procs:
        p.join()
        if p.exitcode != 0:
            sys.exit(f"{fn.__name__} rank failed with exit code {p.exitcode}")
    rows = sum(r for r, _, _, _ in results)
    open_s = round(max(o for *_, o in results), 3)
    figures = []
    for k in range(len(PASSES)):
        read = max(times[k] for _, times, _, _ in results)
        figures.append(
            {
                "open_s": open_s,
                "seconds": round(read, 2),
                "samples_per_s": round(rows / read),
                "MB_per_s": round(total_bytes / 1e6 / read, 1),
                "cpu_s": round(sum(cpu[k] for _, _, cpu, _ in results), 2),
            }
        )
    return figures


def run_tier(
    home: Path, config: Path | None, ref: str, tier: str | None, total_bytes: int, rounds: int, ranks: list[int]
) -> list[dict]:
    """Best of ``rounds`` per side and pass, the two sides interleaved so drift in machine load hits both."""
    rows = []
    for world in ranks:
        runs: dict[str, list[list[dict]]] = {"plain": [], "ours": []}
        for _ in range(rounds):
            runs["plain"].append(measure(plain, home, config, ref, world, tier, total_bytes))
            runs["ours"].append(measure(ours, home, config, ref, world, tier, total_bytes))
        for k, name in enumerate(PASSES):
            base, mine = (max((run[k] for run in runs[side]), key=lambda r: r["samples_per_s"]) for side in runs)
            rows.append(
                {
                    "tier": tier or "local",
                    "ranks": world,
                    "pass": name,
                    "plain_samples_per_s": base["samples_per_s"],
                    "ours_samples_per_s": mine["samples_per_s"],
                    "plain_MB_per_s": base["MB_per_s"],
                    "ours_MB_per_s": mine["MB_per_s"],
                    "plain_open_s": base["open_s"],
                    "ours_open_s": mine["open_s"],
                    "plain_cpu_s": base["cpu_s"],
                    "ours_cpu_s": mine["cpu_s"],
                    "ratio": round(mine["samples_per_s"] / base["samples_per_s"], 3),
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gb", type=float, default=5.0, help="size of the JSONL input (5 GB gives ~2 GB of Parquet)")
    parser.add_argument("--skip-ceph", action="store_true", help="local tier only (the target needs both)")
    parser.add_argument("--skip-local", action="store_true", help="Ceph tier only (the target needs both)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per side; the best counts")
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--window-blocks", type=int, help="the reader's shuffle window (default: the reader's)")
    args = parser.parse_args()
    if args.window_blocks:
        os.environ["BENCH_READER_OPTIONS"] = json.dumps({"window_blocks": args.window_blocks})
    home, ref = build_release(args.gb)
    _env(home, None)
    from lineage.catalog import Catalog
    from lineage.catalog.queries import get_release
    from lineage.settings import get_settings

    with Catalog(get_settings().catalog_url or "").session() as s:
        manifest = get_release(s, ref).manifest
    total_bytes = sum(f["size"] for f in manifest["files"])
    print(
        f"release {ref}: {manifest['row_count']:,} samples, {total_bytes / 1e6:.0f} MB of Parquet in "
        f"{len(manifest['files'])} files"
    )
    # warm-up: verify checksums once (cached), so both sides then read the same warm files
    measure(ours, home, None, ref, 1, None, total_bytes)
    results = [] if args.skip_local else run_tier(home, None, ref, None, total_bytes, args.rounds, args.ranks)
    if not args.skip_ceph:
        results += run_ceph(home, ref, total_bytes, args.rounds, args.ranks)
    header = list(results[0])
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    for row in results:
        print(" | ".join(str(row[h]) for h in header))
    worst = min(r["ratio"] for r in results)
    print(f"worst ratio ours/plain: {worst}")
    if worst < 0.9:
        sys.exit(1)


def run_ceph(home: Path, ref: str, total_bytes: int, rounds: int, ranks: list[int]) -> list[dict]:
    import tempfile

    sys.path.insert(0, str(REPO))  # the test Ceph cluster lives in tests/support, which is not installed
    from tests.support.ceph_cluster import CephCluster

    workdir = Path(tempfile.mkdtemp(prefix="bench-ceph-"))
    cluster = CephCluster(workdir, memstore_bytes=max(1 << 30, 2 * total_bytes))  # the OSD keeps objects in RAM
    state = cluster.start()
    try:
        os.environ["BENCH_CEPH_ACCESS_KEY"], os.environ["BENCH_CEPH_SECRET_KEY"] = state.access_key, state.secret_key
        os.environ["AWS_REQUEST_CHECKSUM_CALCULATION"] = "WHEN_REQUIRED"
        config = home / "ceph.toml"
        config.write_text(
            '[[tiers]]\nname = "ceph"\nkind = "s3"\nroot = "s3://bench/reader"\nclass = "warm"\n'
            f'options = {{ endpoint = "{state.endpoint}" }}\n'
            'credentials_env = { access_key = "BENCH_CEPH_ACCESS_KEY", secret_key = "BENCH_CEPH_SECRET_KEY" }\n'
        )
        _env(home, config)
        from lineage.catalog import Catalog
        from lineage.releases.replicas import ReplicaError, copy_release, verify_release
        from lineage.settings import get_settings

        settings = get_settings()
        settings.tier_config("ceph")
        catalog = Catalog(settings.catalog_url or "")
        with contextlib.suppress(ReplicaError):  # a replica recorded by an earlier run is on a cluster now gone
            verify_release(catalog, settings, ref, "ceph")
        copy_release(catalog, settings, ref, "ceph", workers=4)
        measure(ours, home, config, ref, 1, "ceph", total_bytes)  # verify once
        return run_tier(home, config, ref, "ceph", total_bytes, rounds, ranks)
    finally:
        cluster.stop(remove=True)


if __name__ == "__main__":
    main()
