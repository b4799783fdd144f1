"""API tests: a small world (two dataset versions, releases) per catalog backend, built once per
module; a real uvicorn server on a free loopback port; clients over HTTP and in-process.

Every test that takes ``world`` runs against SQLite and against a real PostgreSQL server
(``tests/fixtures_postgres.py``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from lineage.client import Client
from lineage.service.core import Service
from lineage.settings import Settings
from operators.schema import sample_id
from pipelines.runner import Runner
from pipelines.spec import PipelineSpec
from tests.conftest import FAMILY, write_jsonl
from tests.fixtures_postgres import PostgresServer, free_port

BACKENDS = ["sqlite", "postgresql"]


def make_settings(tmp: Path, backend: str, request: pytest.FixtureRequest, **extra: object) -> Settings:
    url = None
    if backend == "postgresql":
        server: PostgresServer = request.getfixturevalue("postgres_server")
        url = server.create_database()
    return Settings(home=tmp / "home", catalog_url=url, **extra)  # type: ignore[arg-type]


def build_corpus(root: Path) -> Path:
    write_jsonl(
        root / "a.jsonl",
        [
            {"id": "libc6", "text": FAMILY, "lang": "en"},
            {"id": "libc6-dev", "text": FAMILY + "\n\nThis package contains the development files."},
            {"id": "short", "text": "tiny"},
        ],
    )
    write_jsonl(root / "sub" / "b.jsonl", [{"id": "libc6-again", "text": FAMILY}, {"id": "curl", "text": CURL}])
    return root


CURL = "command line tool for transferring data with URL syntax over many protocols"


def spec(root: Path, output: str = "clean") -> PipelineSpec:
    return PipelineSpec.model_validate(
        {
            "name": "api-test",
            "inputs": [{"dataset": "raw", "path": str(root), "id_field": "id"}],
            "operators": [{"name": "exact_dedupe"}, {"name": "quality", "params": {"min_words": 3}}],
            "output": {"dataset": output, "owner": "data-team", "license": "CC-BY-4.0", "tags": ["en", "test"]},
        }
    )


@dataclass
class World:
    settings: Settings
    service: Service
    corpus: Path
    backend: str
    kept: str = sample_id("raw", "id:libc6")
    duplicate: str = sample_id("raw", "id:libc6-again")
    short: str = sample_id("raw", "id:short")
    added: str = sample_id("raw", "id:added")


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


class ServerThread:
    """uvicorn serving an app on 127.0.0.1:<free port> in a thread of the test process."""

    def __init__(self, app: object) -> None:
        import uvicorn

        self.port = free_port()
        self.server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", timeout_graceful_shutdown=1)
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *_exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="module")
def server(world: World) -> Iterator[ServerThread]:
    from api.app import create_app

    with ServerThread(create_app(world.settings, world.service)) as srv:
        yield srv


@pytest.fixture(params=["http", "local"])
def client(request: pytest.FixtureRequest, world: World) -> Iterator[Client]:
    """The SDK over a real uvicorn server, and in-process over the same service."""
    if request.param == "http":
        srv: ServerThread = request.getfixturevalue("server")
        with Client(srv.url) as c:
            yield c
    else:
        yield Client(service=world.service)
