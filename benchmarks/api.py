"""Benchmark the HTTP service: sample-lineage lookups at 10M samples, and the lineage graph query.

1. Builds (once; reused from ``benchmarks/.work/api/``) a release of N samples (default 10M) with
   lineage: synthetic rows written straight to Delta tables with the project's own writer and
   commit helpers (``PartWriter``, ``commit_snapshot``), sorted by ``sample_id``, then a dataset
   version, run and release in the catalog. 5% more samples are exact duplicates that step 1
   dropped, so lookups hit both kept and dropped samples.
2. Records a dataset-level lineage graph of 10,000 nodes (OpenLineage events through the service).
3. Starts ``lineage serve`` (a real uvicorn process on loopback) and measures over HTTP:
   sample-lineage lookups with 1 and with 8 concurrent clients (p50, p99, requests/s), and the
   graph query over the whole 10,000-node graph.

Usage: python benchmarks/api.py [--samples 10000000] [--rebuild] [--requests 1000] [--seconds 15]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import REPO, WORK  # noqa: E402

from lineage.catalog import Catalog, Dataset, DatasetVersion, Run  # noqa: E402
from lineage.catalog.models import utcnow  # noqa: E402
from lineage.settings import Settings  # noqa: E402
from operators.lineage_records import DETAIL, DUPLICATE_DETAIL, LINEAGE_SCHEMA, SOURCE_DETAIL  # noqa: E402
from operators.schema import QUARANTINE_SCHEMA, SAMPLE_SCHEMA  # noqa: E402
from pipelines.parquet_out import PartWriter  # noqa: E402
from storage.delta import commit_snapshot, describe_file  # noqa: E402
from storage.layout import DatasetTables, run_prefix  # noqa: E402
from storage.tier import get_tier  # noqa: E402

HOME = WORK / "api" / "home"
DATASET, RELEASE = "bench-10m", "bench-10m@v1"
ROWS_PER_FILE = 100_000  # synthetic source files
CHUNK = 500_000
DUP_FRACTION = 0.05


def _ids(n: int, seed: int) -> list[str]:
    """Sorted, unique, hash-like 32-hex-digit ids."""
    rng = np.random.default_rng(seed)
    hi = np.unique(rng.integers(0, 2**63 - 1, size=int(n * 1.001) + 16, dtype=np.int64))[:n]
    lo = rng.integers(0, 2**63 - 1, size=n, dtype=np.int64)
    return [f"{h:016x}{lo_:016x}" for h, lo_ in zip(hi.tolist(), lo.tolist(), strict=True)]


TextMaker = Callable[[pa.Array, np.ndarray], pa.Array]  # (sample ids, positions) -> texts


def _chunk_tables(
    ids: list[str], start: int, dropped: np.ndarray, run_id: str, make_text: TextMaker | None = None
) -> tuple[pa.Table, pa.Table]:
    """Data rows (kept samples only) and lineage rows (2 per sample: convert, exact_dedupe) for a chunk."""
    n = len(ids)
    pos = np.arange(start, start + n)
    id_arr = pa.array(ids, pa.string())
    file_no = pos // ROWS_PER_FILE
    paths = pa.array([f"part-{i:05d}.jsonl" for i in range(int(file_no.max()) + 1)])
    path_arr = pa.DictionaryArray.from_arrays(pa.array(file_no), paths).cast(pa.string())
    uri_arr = pc.binary_join_element_wise("file:///bench/raw/", path_arr, "")
    rows = pa.array(pos % ROWS_PER_FILE, pa.int64())
    offsets = pc.multiply(rows, 180)
    text = (
        make_text(id_arr, pos)
        if make_text is not None
        else pc.binary_join_element_wise(
            "Synthetic training sample ", id_arr, " about compilers, linkers and package descriptions.", ""
        )
    )
    source = pa.StructArray.from_arrays(
        [pa.repeat(pa.scalar("synth"), n), pa.repeat(pa.scalar(0, pa.int64()), n), uri_arr, path_arr, rows, offsets],
        fields=list(SOURCE_DETAIL),
    )
    kept_mask = ~dropped
    data = pa.table(
        {
            "sample_id": id_arr,
            "text": text,
            "content_hash": id_arr,
            "source_dataset": pa.repeat(pa.scalar("synth"), n),
            "source_version": pa.repeat(pa.scalar(0, pa.int64()), n),
            "source_uri": uri_arr,
            "source_path": path_arr,
            "source_row": rows,
            "source_offset": offsets,
            "meta": pa.nulls(n, pa.string()),
        },
        schema=SAMPLE_SCHEMA,
    ).filter(pa.array(kept_mask))

    # lineage: rows (i, step 0), (i, step 1) interleaved, so the table is sorted by (sample_id, step)
    take = pa.array(np.repeat(np.arange(n), 2))
    step = np.tile(np.array([0, 1], dtype=np.int32), n)
    is_step1 = step == 1
    dropped2 = np.repeat(dropped, 2) & is_step1
    kept_of = np.maximum(np.arange(n) - 1, 0)  # a dropped sample duplicates its predecessor (kept)
    kept_ids = id_arr.take(pa.array(kept_of))
    dup = pa.StructArray.from_arrays(
        [
            pa.repeat(pa.scalar("exact"), n),
            kept_ids,
            kept_ids,
            pa.repeat(pa.scalar(1.0), n),
            pa.repeat(pa.scalar(2, pa.int64()), n),
        ],
        fields=list(DUPLICATE_DETAIL),
    ).take(take)
    src2 = source.take(take)
    null_rules = pa.nulls(2 * n, DETAIL.field("rules").type)
    null_mod = pa.nulls(2 * n, DETAIL.field("modification").type)
    src_masked = pc.if_else(pa.array(~is_step1), src2, pa.nulls(2 * n, SOURCE_DETAIL))
    dup_masked = pc.if_else(pa.array(dropped2), dup, pa.nulls(2 * n, DUPLICATE_DETAIL))
    later = [pa.nulls(2 * n, f.type) for f in list(DETAIL)[4:]]  # detail added since (contamination): none here
    detail = pa.StructArray.from_arrays([src_masked, dup_masked, null_rules, null_mod, *later], fields=list(DETAIL))
    related = pc.if_else(
        pa.array(dropped2),
        pa.ListArray.from_arrays(pa.array(np.arange(0, 2 * n + 1, dtype=np.int32)), kept_ids.take(take)),
        pa.nulls(2 * n, pa.list_(pa.string())),
    )
    lineage = pa.table(
        [
            pa.repeat(pa.scalar(run_id), 2 * n),
            pa.array(step),
            pa.array(np.where(is_step1, "exact_dedupe", "convert")),
            pa.repeat(pa.scalar("1"), 2 * n),
            id_arr.take(take),
            pa.array(np.where(dropped2, "dropped", "kept")),
            pa.array(np.where(dropped2, "exact_duplicate", None)),
            related,
            detail,
        ],
        schema=LINEAGE_SCHEMA,
    )
    return data, lineage


def build_release(
    samples: int, settings: Settings, *, data_file_rows: int = 1_000_000, make_text: TextMaker | None = None
) -> dict:
    """Write data + lineage Delta tables and register the version and release; returns ids to query.

    ``data_file_rows`` sizes the data files and ``make_text`` makes the texts (default: one short
    sentence naming the id), for benchmarks whose cost depends on the number of files or text bytes."""
    total = int(samples / (1 - DUP_FRACTION))
    t0 = time.perf_counter()
    ids = _ids(total, seed=7)
    rng = np.random.default_rng(11)
    dropped = rng.random(total) < DUP_FRACTION
    dropped[0] = False
    print(f"  ids: {total:,} in {time.perf_counter() - t0:.1f}s", flush=True)
    catalog = Catalog(settings.catalog_url or "")
    tier = get_tier("local", settings)
    tables = DatasetTables.for_dataset(DATASET)
    run_id = str(uuid.uuid4())
    with catalog.session() as s:
        s.add(Run(id=run_id, pipeline="bench-synthetic", engine="local", output_dataset=DATASET))
    writers = {
        "data": PartWriter(
            tier,
            tables.data,
            run_prefix(run_id),
            SAMPLE_SCHEMA,
            file_rows=data_file_rows,
            row_group_rows=settings.parquet_row_group_rows,
        ),
        "lineage": PartWriter(
            tier,
            tables.lineage,
            run_prefix(run_id),
            LINEAGE_SCHEMA,
            file_rows=2_000_000,
            row_group_rows=settings.parquet_row_group_rows,
        ),
    }
    for start in range(0, total, CHUNK):
        chunk = ids[start : start + CHUNK]
        data, lineage = _chunk_tables(chunk, start, dropped[start : start + CHUNK], run_id, make_text)
        writers["data"].write(data)
        writers["lineage"].write(lineage)
        print(f"  wrote {min(start + CHUNK, total):,}/{total:,} samples ({time.perf_counter() - t0:.0f}s)", flush=True)
    files = {name: [describe_file(tier, getattr(tables, name), f) for f in w.close()] for name, w in writers.items()}
    meta = {"lineage.run_id": run_id, "lineage.dataset": DATASET}
    versions = {
        "data": commit_snapshot(tier, tables.data, files["data"], SAMPLE_SCHEMA, meta),
        "lineage": commit_snapshot(tier, tables.lineage, files["lineage"], LINEAGE_SCHEMA, meta),
        "quarantine": commit_snapshot(tier, tables.quarantine, [], QUARANTINE_SCHEMA, meta),
    }
    rows = sum(f.num_rows for f in files["data"])
    counts = {
        "steps": [
            {"step": 0, "operator": "convert", "in": total, "kept": total, "dropped": 0, "modified": 0, "reasons": {}},
            {
                "step": 1,
                "operator": "exact_dedupe",
                "in": total,
                "kept": rows,
                "dropped": total - rows,
                "modified": 0,
                "reasons": {"exact_duplicate": total - rows},
            },
        ],
        "quarantine": {},
        "output_rows": rows,
    }
    with catalog.session() as s:
        ds = Dataset(name=DATASET, tier="local", description="synthetic benchmark data", owner="bench")
        s.add(ds)
        s.flush()
        dv = DatasetVersion(
            version=1,
            run_id=run_id,
            tier="local",
            data_path=tables.data,
            data_delta_version=versions["data"],
            lineage_path=tables.lineage,
            lineage_delta_version=versions["lineage"],
            quarantine_path=tables.quarantine,
            quarantine_delta_version=versions["quarantine"],
            row_count=rows,
            bytes=sum(f.size for f in files["data"]),
            schema={"fields": [{"name": f.name, "type": str(f.type), "nullable": f.nullable} for f in SAMPLE_SCHEMA]},
        )
        dv.dataset = ds
        s.add(dv)
        run = s.get(Run, run_id)
        run.status, run.ended_at, run.counts = "succeeded", utcnow(), counts
    from lineage.releases import publish

    publish(catalog, settings, RELEASE, created_by="bench")
    print(f"  release {RELEASE}: {rows:,} samples, {total * 2:,} lineage rows in {time.perf_counter() - t0:.0f}s")
    catalog.dispose()
    return {"total": total}


def build_graph(settings: Settings, nodes: int = 10_000, seed: int = 3) -> str:
    """A layered DAG: each job reads a dataset of the previous layer (plus one random earlier one) and
    writes 4 new datasets, until ``nodes`` nodes exist. Returns the root's node id."""
    from lineage import openlineage
    from lineage.catalog import Catalog

    rng = random.Random(seed)
    catalog = Catalog(settings.catalog_url or "")
    ns = "bench"
    frontier, datasets, count, job_no = ["root"], ["root"], 1, 0
    events = []
    while count < nodes:
        nxt = []
        for ds in frontier:
            if count >= nodes:
                break
            job_no += 1
            outs = [f"ds-{job_no}-{k}" for k in range(min(4, max(1, nodes - count - 1)))]
            ins = [ds] + ([rng.choice(datasets)] if len(datasets) > 1 else [])
            events.append(
                {
                    "eventType": "COMPLETE",
                    "eventTime": datetime.now(UTC).isoformat(),
                    "run": {"runId": str(uuid.uuid4())},
                    "job": {"namespace": ns, "name": f"job-{job_no}"},
                    "inputs": [{"namespace": ns, "name": n} for n in dict.fromkeys(ins)],
                    "outputs": [{"namespace": ns, "name": n} for n in outs],
                    "producer": "benchmarks/api.py",
                }
            )
            count += 1 + len(outs)
            datasets += outs
            nxt += outs
        frontier = nxt
    for i in range(0, len(events), 250):
        with catalog.session() as s:
            for ev in events[i : i + 250]:
                openlineage.ingest(s, ev)
    with catalog.session() as s:
        index = openlineage.load_graph(s, ())
    catalog.dispose()
    print(
        f"  graph: {len(index.nodes):,} nodes, {sum(len(v) for v in index.outs.values()):,} edges, {len(events)} jobs"
    )
    return f"dataset:{ns}:root"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _percentiles(latencies: list[float]) -> tuple[float, float]:
    ordered = sorted(latencies)
    p50 = statistics.median(ordered)
    p99 = ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]
    return p50 * 1000, p99 * 1000


def lookups(url: str, ids: list[str], clients: int, requests: int, seconds: float) -> dict:
    import httpx

    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    stop = time.perf_counter() + seconds
    per_client = requests // clients

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        mine: list[float] = []
        with httpx.Client(base_url=url, timeout=30) as http:
            for _ in range(per_client):
                if time.perf_counter() > stop:
                    break
                sid = rng.choice(ids)
                t = time.perf_counter()
                r = http.get(f"/api/v1/samples/{sid}/lineage", params={"dataset": DATASET})
                mine.append(time.perf_counter() - t)
                if r.status_code != 200 or not r.json()["found"]:
                    errors.append(f"{sid}: {r.status_code}")
        with lock:
            latencies.extend(mine)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    p50, p99 = _percentiles(latencies)
    return {
        "clients": clients,
        "requests": len(latencies),
        "p50_ms": p50,
        "p99_ms": p99,
        "rps": len(latencies) / wall,
        "errors": len(errors),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=10_000_000)
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--workers", type=int, default=1, help="lineage serve --workers")
    parser.add_argument(
        "--row-group-rows", type=int, default=4096, help="Parquet row group size of the data and lineage tables."
    )
    args = parser.parse_args()

    settings = Settings(home=HOME, parquet_row_group_rows=args.row_group_rows)
    marker = HOME / f"built-{args.samples}-{args.row_group_rows}"
    if args.rebuild or not marker.exists():
        shutil.rmtree(HOME, ignore_errors=True)
        HOME.mkdir(parents=True)
        print(f"building a release of {args.samples:,} samples under {HOME}", flush=True)
        build_release(args.samples, settings)
        build_graph(settings)
        marker.write_text("ok")
    else:
        print(f"reusing the release under {HOME} (--rebuild to rebuild)")

    # sample ids to look up: read back from the lineage table (kept and dropped ones)
    from lineage.service.core import Service

    service = Service(settings)
    with service.catalog.session() as s:
        dv = s.scalars(__import__("sqlalchemy").select(DatasetVersion)).one()
        key = (dv.tier, dv.lineage_path, dv.lineage_delta_version)
    table = service.tables.get(*key).dataset
    ids = [
        r for r in table.to_table(columns=["sample_id"], filter=pc.field("step") == 1).column("sample_id").to_pylist()
    ]
    rng = random.Random(5)
    ids = rng.sample(ids, 20_000)
    service.close()

    port = _free_port()
    env = {**os.environ, "LINEAGE_HOME": str(HOME), "PYTHONPATH": str(REPO)}
    env.pop("LINEAGE_CATALOG_URL", None)
    server = subprocess.Popen(
        [sys.executable, "-m", "lineage", "serve", "--port", str(port), "--log-level", "warning"]
        + ["--workers", str(args.workers)],
        env=env,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        import httpx

        for _ in range(300):
            try:
                httpx.get(f"{url}/api/v1/health", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        time.sleep(3)  # the server loads the graph and the released Delta versions in the background
        print(f"server: lineage serve --workers {args.workers}; load average before: {os.getloadavg()[0]:.1f}")
        t = time.perf_counter()
        httpx.get(f"{url}/api/v1/samples/{ids[0]}/lineage", timeout=60)
        print(f"first lookup (3 s after start; picks the reader per table): {(time.perf_counter() - t) * 1000:.0f} ms")
        lookups(url, ids, 1, 50, 10)  # warm-up
        results = [lookups(url, ids, c, args.requests, args.seconds) for c in (1, 8)]
        for r in results:
            print(
                f"sample lineage, {r['clients']} client(s): {r['requests']} requests, p50 {r['p50_ms']:.1f} ms, "
                f"p99 {r['p99_ms']:.1f} ms, {r['rps']:.0f} requests/s, errors {r['errors']}"
            )
        with httpx.Client(base_url=url, timeout=60) as http:
            whole = {"nodeId": "dataset:bench:root", "depth": 100}
            t = time.perf_counter()
            first = http.get("/api/v1/lineage", params=whole)
            cold = time.perf_counter() - t
            size = len(first.json()["graph"])
            graph_times = []
            for _ in range(20):
                t = time.perf_counter()
                http.get("/api/v1/lineage", params=whole).raise_for_status()
                graph_times.append(time.perf_counter() - t)
            p50, p99 = _percentiles(graph_times)
            print(
                f"graph query (whole graph: {size:,} nodes in the answer, {len(first.content) / 1e6:.1f} MB): "
                f"first {cold * 1000:.0f} ms (graph preloaded at start, answer built), then p50 {p50:.1f} ms, "
                f"p99 {p99:.1f} ms (answer cached until the next event)"
            )
            changed = []
            for k in range(10):  # a new event each time: the cached graph is refreshed, the answer rebuilt
                event = {
                    "eventType": "COMPLETE",
                    "eventTime": datetime.now(UTC).isoformat(),
                    "run": {"runId": str(uuid.uuid4())},
                    "job": {"namespace": "bench", "name": f"late-job-{k}"},
                    "inputs": [{"namespace": "bench", "name": "root"}],
                    "outputs": [{"namespace": "bench", "name": f"late-{k}"}],
                }
                http.post("/api/v1/lineage", json=event).raise_for_status()
                t = time.perf_counter()
                http.get("/api/v1/lineage", params=whole).raise_for_status()
                changed.append(time.perf_counter() - t)
            p50, p99 = _percentiles(changed)
            print(
                f"graph query (whole graph, right after a new event): p50 {p50:.1f} ms, "
                f"max {max(changed) * 1000:.1f} ms"
            )
            near = []
            for k in range(20):  # different start nodes: not cached
                t = time.perf_counter()
                http.get("/api/v1/lineage", params={"nodeId": f"job:bench:job-{k + 1}", "depth": 4}).raise_for_status()
                near.append(time.perf_counter() - t)
            p50, p99 = _percentiles(near)
            print(f"graph query (depth 4 around a job, 20 different jobs): p50 {p50:.1f} ms, p99 {p99:.1f} ms")
        print(f"load average after: {os.getloadavg()[0]:.1f} (2 cores, shared)")
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
