"""The lineage graph with the catalog's entities (lineage.catalog_graph) on the 10,000-node OpenLineage
graph that benchmarks/api.py builds, against the OpenLineage part alone, measured in the same run.

    /work/main/benchmarks/.venv/bin/python benchmarks/graph_catalog.py [--releases 400]

Prints, per step, the median of ``--repeat`` timings: the cold load, a warm check (nothing changed), the
reload after one recorded read (catalog part only) and after one event (event part only), and a release's
one-hop neighbourhood; the 1-minute load is printed next to the figures.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's lineage, as benchmarks/api.py

from lineage import openlineage  # noqa: E402
from lineage.catalog import Catalog, Dataset, DatasetVersion, Release, Run  # noqa: E402
from lineage.catalog.models import ReleaseRead  # noqa: E402
from lineage.settings import Settings  # noqa: E402

HERE = Path(__file__).parent


def _bench_api():  # benchmarks/api.py: its name would clash with the ``api`` package
    spec = importlib.util.spec_from_file_location("bench_api", HERE / "api.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def add_catalog(catalog: Catalog, releases: int, jobs: int) -> None:
    """One dataset with ``releases // 2`` versions (each from its own run), two releases per version, and
    reads by ``jobs`` training jobs (each reads every tenth release)."""
    with catalog.session() as s:
        ds = Dataset(name="bench-ds", tier="local")
        s.add(ds)
        s.flush()
        versions = []
        for v in range(1, releases // 2 + 1):
            run = Run(id=str(uuid.uuid4()), pipeline="bench", engine="local", output_dataset="bench-ds")
            run.status = "succeeded"
            s.add(run)
            dv = DatasetVersion(
                version=v,
                run_id=run.id,
                tier="local",
                data_path="d",
                data_delta_version=v,
                lineage_path="l",
                lineage_delta_version=v,
                quarantine_path="q",
                quarantine_delta_version=v,
                row_count=100,
                bytes=1000,
            )
            dv.dataset = ds
            s.add(dv)
            versions.append(dv)
        s.flush()
        made = []
        for i in range(releases):
            rel = Release(
                name=f"r{i // 2}", tag=f"t{i % 2}", dataset_version_id=versions[i // 2].id, content_digest="0" * 64
            )
            s.add(rel)
            made.append(rel)
        s.flush()
        for j in range(jobs):
            for rel in made[j % 10 :: 10]:
                s.add(ReleaseRead(release_id=rel.id, job=f"train-{j}", world_size=1, rank=0))


def timed(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000, out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--releases", type=int, default=400)
    parser.add_argument("--jobs", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="graph-catalog-"))
    settings = Settings(home=home)
    root = _bench_api().build_graph(settings)
    catalog = Catalog(settings.catalog_url or "")
    add_catalog(catalog, args.releases, args.jobs)
    ns = settings.openlineage_namespace
    rows = []
    with catalog.session() as s:
        events = openlineage.graph_stamp(s)
        ms, base = timed(lambda: openlineage.load_graph(s, events), args.repeat)
        rows.append(("cold load, OpenLineage part only (before)", ms, f"{len(base.nodes):,} nodes"))
        ms, index = timed(lambda: openlineage.GraphCache(ns).get(s), args.repeat)
        rows.append(("cold load, with the catalog (now)", ms, f"{len(index.nodes):,} nodes"))
        ms, _ = timed(lambda: openlineage.graph_stamp(s), args.repeat * 4)
        rows.append(("warm check: event stamp only (before)", ms, ""))
        cache = openlineage.GraphCache(ns)
        cache.get(s)
        ms, _ = timed(lambda: cache.get(s), args.repeat * 4)
        rows.append(("warm check: both stamps (now)", ms, ""))

    def uncached(nid: int | None) -> bytes:
        assert nid is not None
        index._answers.clear()  # the answer itself, not the cache's copy
        return index.subgraph_json(nid, 1, None)

    release = index.resolve(f"release:{ns}:r0@t0")
    ms, answer = timed(lambda: uncached(release), 20)
    rows.append(("a release's 1-hop neighbourhood", ms, f"{len(answer):,} bytes"))
    start = index.resolve(root)
    ms, answer = timed(lambda: uncached(start), 20)
    rows.append(("the OpenLineage root's 1-hop neighbourhood", ms, f"{len(answer):,} bytes"))

    def after_read() -> object:
        with catalog.session() as s:
            rel = s.get(Release, 1)
            s.add(ReleaseRead(release_id=rel.id, job=f"new-{uuid.uuid4().hex[:6]}", world_size=1, rank=0))
        with catalog.session() as s:
            return cache.get(s)

    def after_event() -> object:
        ev = {
            "eventType": "COMPLETE",
            "eventTime": datetime.now(UTC).isoformat(),
            "run": {"runId": str(uuid.uuid4())},
            "job": {"namespace": "bench", "name": f"extra-{uuid.uuid4().hex[:6]}"},
            "inputs": [{"namespace": "bench", "name": "root"}],
        }
        with catalog.session() as s:
            openlineage.ingest(s, ev)
        with catalog.session() as s:
            return cache.get(s)

    ms, _ = timed(after_read, args.repeat)
    rows.append(("a read recorded, then get (catalog part reloaded)", ms, "incl. the insert"))
    ms, _ = timed(after_event, args.repeat)
    rows.append(("an event ingested, then get (event part refreshed)", ms, "incl. the ingest"))
    catalog.dispose()
    load = os.getloadavg()[0]
    print(f"\n{'step':55} {'median ms':>10}  note   (1-min load {load:.2f})")
    for name, ms, note in rows:
        print(f"{name:55} {ms:10.1f}  {note}")


if __name__ == "__main__":
    main()
