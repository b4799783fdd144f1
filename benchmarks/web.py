"""Benchmark the web view in headless Chromium: how soon the release, sample and graph pages are ready.

On the data ``benchmarks/api.py`` builds (a 10M-sample release with lineage, a 10,000-node graph; built
once under ``benchmarks/.work/api/`` and reused), ``lineage serve`` runs in a process of its own and
Debian's chromium (through chromium-driver, as the tests drive it) loads each page type 20 times cold:
the browser cache cleared and a blank page in between. "Ready" is the browser's own timing: from
navigationStart (``performance.timeOrigin``) to the ``performance.mark('ready')`` a page sets once its
data has rendered. Target (issue #23): p95 <= 1 s per page type.

The baseline, in the same run: the same JSON requests each page makes, sent by httpx one after another
(what the page costs before any browser work), p95 of 20.

Usage: python benchmarks/web.py [--loads 20] [--samples 10000000]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO  # noqa: E402

from lineage.settings import Settings  # noqa: E402
from tests.support.browser import start_browser  # noqa: E402

ROOT_NODE = "dataset:bench:root"
HEADER = "| page | first load (ms) | p95 ready (ms) | median ready (ms) | baseline: its API calls, p95 (ms) | target |"


def bench_api():  # benchmarks/api.py, loaded by path: its module name would shadow the ``api`` package
    spec = importlib.util.spec_from_file_location("bench_api", Path(__file__).with_name("api.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[18] if len(values) > 1 else values[0]


READY = "const m = performance.getEntriesByName('ready', 'mark'); return m.length ? m[0].startTime : null"


def ready_ms(driver, url: str) -> float:
    driver.get("about:blank")
    driver.execute_cdp_cmd("Network.clearBrowserCache", {})
    driver.get(url)
    deadline = time.monotonic() + 60
    while True:
        ms = driver.execute_script(READY)
        if ms is not None:
            errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
            if errors:
                raise RuntimeError(f"console errors on {url}: {errors}")
            return float(ms)
        if time.monotonic() > deadline:
            raise RuntimeError(f"{url} was not ready within 60 s")
        time.sleep(0.01)


EXPAND = """
const button = document.querySelector('#graph .expand');
if (!button) return null;
window.__expandStart = performance.now();
button.dispatchEvent(new MouseEvent('click', {bubbles: true}));
return button.dataset.id;
"""
EXPANDED = (
    "const m = performance.getEntriesByName('expanded', 'mark');"
    "return m.length ? m[0].startTime - window.__expandStart : null"
)


def expand_ms(driver, url: str) -> tuple[float, str]:
    """Load the graph page, click the first node's "+", and time until its neighbourhood is drawn."""
    ready_ms(driver, url)
    node = driver.execute_script(EXPAND)
    if node is None:
        raise RuntimeError(f"no node to expand on {url}")
    deadline = time.monotonic() + 60
    while (ms := driver.execute_script(EXPANDED)) is None:
        if time.monotonic() > deadline:
            raise RuntimeError("the expansion did not finish within 60 s")
        time.sleep(0.005)
    return float(ms), node


def api_ms(http: httpx.Client, paths: list[tuple[str, dict]]) -> float:
    t = time.perf_counter()
    for path, params in paths:
        http.get("/api/v1" + path, params=params).raise_for_status()
    return (time.perf_counter() - t) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--loads", type=int, default=20)
    parser.add_argument("--samples", type=int, default=10_000_000)
    args = parser.parse_args()
    bench = bench_api()
    home = bench.HOME
    settings = Settings(home=home, parquet_row_group_rows=4096)
    marker = home / f"built-{args.samples}-4096"
    if not marker.exists():
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True)
        print(f"building a release of {args.samples:,} samples under {home} (benchmarks/api.py's data)", flush=True)
        bench.build_release(args.samples, settings)
        bench.build_graph(settings)
        marker.write_text("ok")

    from lineage.service.core import Service

    service = Service(settings)
    sample = service.list_samples(bench.DATASET, 1, limit=1, offset=args.samples // 2, operator="exact_dedupe").items[0]
    graph = service.lineage_graph(ROOT_NODE, 3)
    middle = graph.graph[-1].id  # a node three hops out: its neighbourhood, not the root's
    service.close()
    name, tag = bench.RELEASE.split("@")
    pages = {
        "release": (
            f"/releases/{name}/{tag}",
            [(f"/releases/{name}/{tag}{p}", {}) for p in ("", "/manifest", "/quality", "/replicas")]
            + [(f"/releases/{name}/{tag}/reads", {"limit": 100}), ("/releases", {"name": name, "limit": 1000})],
        ),
        "sample": (
            f"/samples/{sample.sample_id}",
            [(f"/samples/{sample.sample_id}/lineage", {}), ("/releases", {"limit": 1000})],
        ),
        "graph (root)": (
            "/graph?node=dataset:bench:root",
            [("/lineage", {"nodeId": "dataset:bench:root", "depth": 1})],
        ),
        "graph (a node 3 hops out)": (f"/graph?node={middle}", [("/lineage", {"nodeId": middle, "depth": 1})]),
    }

    port = bench._free_port()
    env = {**os.environ, "LINEAGE_HOME": str(home), "PYTHONPATH": str(REPO)}
    env.pop("LINEAGE_CATALOG_URL", None)
    server = subprocess.Popen(
        [sys.executable, "-m", "lineage", "serve", "--port", str(port), "--log-level", "warning"],
        env=env,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    driver = None
    try:
        for _ in range(600):
            try:
                httpx.get(f"{url}/api/v1/health", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        time.sleep(3)  # the server warms the graph and the released Delta versions in the background
        driver = start_browser()
        rows = []
        with httpx.Client(base_url=url, timeout=120) as http:
            for kind, (path, calls) in pages.items():
                first = ready_ms(driver, url + path)
                loads = [ready_ms(driver, url + path) for _ in range(args.loads)]
                base = [api_ms(http, calls) for _ in range(args.loads)]
                rows.append((kind, first, p95(loads), statistics.median(loads), p95(base)))
                print(f"  {kind}: p95 {rows[-1][2]:.0f} ms", flush=True)
            graph_url = url + pages["graph (root)"][0]
            expands = [expand_ms(driver, graph_url) for _ in range(args.loads + 1)]
            node = expands[0][1]
            times = [ms for ms, _ in expands[1:]]
            base = [api_ms(http, [("/lineage", {"nodeId": node, "depth": 1})]) for _ in range(args.loads)]
            rows.append(("graph: expand a node", expands[0][0], p95(times), statistics.median(times), p95(base)))
        load = os.getloadavg()[0]
        print(f"\n{args.samples:,}-sample release, 10,000-node graph; {args.loads} cold loads per page")
        print(f"1-minute load average: {load:.1f}\n{HEADER}\n|---|---|---|---|---|---|")
        for kind, first, p, med, b in rows:
            verdict = "met" if p <= 1000 else "MISSED"
            print(f"| {kind} | {first:.0f} | {p:.0f} | {med:.0f} | {b:.0f} | {verdict} (<= 1000) |")
    finally:
        if driver is not None:
            driver.quit()
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
