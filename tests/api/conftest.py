"""API tests: a small world (two dataset versions, releases) per catalog backend, built once per
module; a real uvicorn server on a free loopback port; clients over HTTP and in-process.

Every test that takes ``world`` runs against SQLite and against a real PostgreSQL server
(``tests/support/fixtures_postgres.py``).
"""

from __future__ import annotations

import ipaddress
import os
import subprocess
from collections.abc import Iterator

import pytest

from lineage.runs import Runner
from lineage.service.core import Service
from tests.support.api_world import (
    BACKENDS,
    NetNs,
    World,
    build_corpus,
    make_settings,
    spec,
)
from tests.support.helpers import write_jsonl


@pytest.fixture(scope="module", params=BACKENDS)
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """clean v1 (released as clean@v1), clean v2 (one more file; released as clean@v2)."""
    tmp = tmp_path_factory.mktemp(f"world-{request.param}")
    settings = make_settings(tmp, request.param, request)
    service = Service(settings)
    corpus = build_corpus(tmp / "raw")
    runner = Runner(settings, service.catalog)
    runner.run(spec(corpus))
    service.create_release({"name": "clean", "tag": "v1"})
    write_jsonl(corpus / "c.jsonl", [{"id": "added", "text": "a brand new document about compilers and linkers"}])
    runner.run(spec(corpus))
    service.create_release({"name": "clean", "tag": "v2"})
    yield World(settings, service, corpus, request.param)
    service.close()


@pytest.fixture
def netns() -> Iterator[NetNs]:
    index = os.getpid() % 32768  # one /30 of 198.18.0.0/15 per test process
    net = ipaddress.ip_network(f"{ipaddress.ip_address('198.18.0.0') + 4 * index}/30")
    ours, theirs = (str(a) for a in net.hosts())
    name, here, there = f"llt{os.getpid()}", f"llh{os.getpid()}", f"lln{os.getpid()}"

    def ip(*args: str) -> None:
        subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)

    ip("netns", "add", name)
    try:
        ip("link", "add", here, "type", "veth", "peer", "name", there, "netns", name)
        ip("addr", "add", f"{ours}/30", "dev", here)
        ip("link", "set", here, "up")
        ip("-n", name, "addr", "add", f"{theirs}/30", "dev", there)
        ip("-n", name, "link", "set", there, "up")
        ip("-n", name, "link", "set", "lo", "up")
        yield NetNs(name, theirs, ours)
    finally:
        subprocess.run(["ip", "link", "del", here], capture_output=True, timeout=30)
        subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30)
