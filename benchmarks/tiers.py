"""Benchmark copy-and-verify between tiers against the naive way, on the same files, in one run.

Baseline: ``pyarrow.fs.copy_files`` (multi-threaded), then a read-back of every destination file
to hash it (xxh3-128). Ours: ``storage.transfer.copy_verified`` (parallel copies, each file read
back and checked as soon as it lands). Pairs: local → local (another folder) and local → Ceph RGW
(a real single-node cluster started here). Target: ours ≥ 1.2× the baseline's MB/s.
Usage: python benchmarks/tiers.py [--mb 1024] [--files 16] [--skip-ceph]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.fs as pafs
from common import REPO, WORK

from lineage.settings import TierConfig
from storage.checksum import file_digest
from storage.tier import Tier
from storage.transfer import FileSpec, copy_verified


def make_files(folder: Path, total_mb: int, count: int) -> list[FileSpec]:
    """Incompressible files (real releases are zstd Parquet: no compression gains for either side)."""
    folder.mkdir(parents=True, exist_ok=True)
    size = total_mb * 1_000_000 // count
    specs = []
    for i in range(count):
        path = folder / f"part-{i:05d}.parquet"
        if not path.exists() or path.stat().st_size != size:
            path.write_bytes(os.urandom(size))
    src = Tier(TierConfig(name="src", kind="posix", root=str(folder)))
    for i in range(count):
        name = f"part-{i:05d}.parquet"
        digest = file_digest(src, name)
        specs.append(FileSpec(name, digest.size, digest.hexdigest))
    return specs


def naive(src: Tier, dst: Tier, prefix: str, specs: list[FileSpec]) -> float:
    start = time.perf_counter()
    dst.filesystem.create_dir(dst.path(prefix), recursive=True)
    pafs.copy_files(
        src.path(""),
        dst.path(prefix),
        source_filesystem=src.filesystem,
        destination_filesystem=dst.filesystem,
        use_threads=True,
    )
    for spec in specs:
        digest = file_digest(dst, prefix, spec.path)
        if digest.hexdigest != spec.xxh3_128 or digest.size != spec.size:
            sys.exit(f"baseline copy of {spec.path} does not verify")
    return time.perf_counter() - start


def ours(src: Tier, dst: Tier, prefix: str, specs: list[FileSpec], workers: int) -> float:
    start = time.perf_counter()
    report = copy_verified(src, "", dst, prefix, specs, workers=workers)
    assert len(report.copied) == len(specs)
    return time.perf_counter() - start


def clear(tier: Tier, prefix: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        tier.filesystem.delete_dir(tier.path(prefix))


def compare(label: str, src: Tier, dst: Tier, specs: list[FileSpec], workers: int, rounds: int) -> dict:
    total = sum(s.size for s in specs)
    base_times, our_times = [], []
    for r in range(rounds):  # interleaved, so drift in machine load hits both sides alike
        clear(dst, f"naive-{r}")
        base_times.append(naive(src, dst, f"naive-{r}", specs))
        clear(dst, f"naive-{r}")
        clear(dst, f"ours-{r}")
        our_times.append(ours(src, dst, f"ours-{r}", specs, workers))
        clear(dst, f"ours-{r}")
    base, mine = min(base_times), min(our_times)
    return {
        "pair": label,
        "MB": round(total / 1e6),
        "naive_MB_per_s": round(total / 1e6 / base, 1),
        "ours_MB_per_s": round(total / 1e6 / mine, 1),
        "ratio": round(base / mine, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=1024)
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--skip-ceph", action="store_true")
    args = parser.parse_args()
    src_dir = WORK / "tiers-src"
    specs = make_files(src_dir, args.mb, args.files)
    src = Tier(TierConfig(name="src", kind="posix", root=str(src_dir)))
    dst_dir = Path(tempfile.mkdtemp(prefix="tiers-dst-", dir=WORK))
    results = []
    try:
        dst = Tier(TierConfig(name="dst", kind="posix", root=str(dst_dir)))
        results.append(compare("local → local", src, dst, specs, args.workers, args.rounds))
        if not args.skip_ceph:
            results.append(ceph(src, specs, args))
    finally:
        shutil.rmtree(dst_dir, ignore_errors=True)
    header = list(results[0])
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    for row in results:
        print(" | ".join(str(row[h]) for h in header))
    if min(r["ratio"] for r in results) < 1.2:
        sys.exit(1)


def ceph(src: Tier, specs: list[FileSpec], args: argparse.Namespace) -> dict:
    sys.path.insert(0, str(REPO))  # the test Ceph cluster lives in tests/support, which is not installed
    from tests.support.ceph_cluster import CephCluster

    workdir = Path(tempfile.mkdtemp(prefix="bench-ceph-"))
    cluster = CephCluster(workdir, memstore_bytes=6 << 30)  # deleted copies linger until RGW garbage-collects
    state = cluster.start()
    try:
        os.environ["BENCH_CEPH_ACCESS_KEY"], os.environ["BENCH_CEPH_SECRET_KEY"] = state.access_key, state.secret_key
        dst = Tier(
            TierConfig(
                name="ceph",
                kind="s3",
                root="s3://bench-tiers/copies",
                options={"endpoint": state.endpoint},
                credentials_env={"access_key": "BENCH_CEPH_ACCESS_KEY", "secret_key": "BENCH_CEPH_SECRET_KEY"},
            )
        )
        dst.filesystem.create_dir("bench-tiers")
        return compare("local → ceph", src, dst, specs, args.workers, args.rounds)
    finally:
        cluster.stop(remove=True)


if __name__ == "__main__":
    main()
