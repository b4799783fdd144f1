"""The API tests' world: settings per catalog backend, a small corpus and pipeline, a real uvicorn
server in a thread or a process, a network namespace. The fixtures that use them are in
tests/api/conftest.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from lineage.service.core import Service
from lineage.settings import Settings
from operators.schema import sample_id
from pipelines.spec import PipelineSpec
from tests.support.fixtures_postgres import PostgresServer, free_port
from tests.support.helpers import FAMILY, write_jsonl

BACKENDS = ["sqlite", "postgresql"]


def make_settings(tmp: Path, backend: str, request: pytest.FixtureRequest, **extra: object) -> Settings:
    """Settings of a test catalog. Single-user mode is on (as under ``lineage serve`` on loopback), so a
    test's loopback clients act as the local user until it creates a token; ``single_user=False`` turns
    it off."""
    url = None
    if backend == "postgresql":
        server: PostgresServer = request.getfixturevalue("postgres_server")
        url = server.create_database()
    extra.setdefault("single_user", True)
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


ROOT = Path(__file__).parents[2]


def server_env(settings: Settings, **extra: str) -> dict[str, str]:
    """The environment of a server process over the catalog of ``settings`` (single-user mode unset)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINEAGE_")}
    env.update(
        PYTHONPATH=str(ROOT),
        LINEAGE_HOME=str(settings.home),
        LINEAGE_CATALOG_URL=settings.catalog_url or "",
        LINEAGE_API_WARM_ON_START="false",
    )
    env.update(extra)
    return env


class ServerProcess:
    """A server in a process of its own, as an operator starts one: by default
    ``uvicorn --factory api.app:create_app``, optionally inside a network namespace."""

    def __init__(
        self,
        env: dict[str, str],
        *,
        host: str = "127.0.0.1",
        reach: str = "127.0.0.1",
        netns: NetNs | None = None,
        argv: list[str] | None = None,
    ) -> None:
        self.port = free_port()
        self.url = f"http://{reach}:{self.port}"
        argv = argv or ["uvicorn", "--factory", "api.app:create_app", "--host", host]
        prefix = ["ip", "netns", "exec", netns.name] if netns else []
        self.command = [*prefix, sys.executable, "-m", *argv, "--port", str(self.port), "--log-level", "warning"]
        self.env = env
        self.output = ""

    def __enter__(self) -> ServerProcess:
        self.proc = subprocess.Popen(
            self.command, env=self.env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{self.url}/api/v1/health", timeout=2)
                return self
            except httpx.TransportError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.__exit__()
                    raise RuntimeError(f"server did not start: {self.command}\n{self.output}") from None
                time.sleep(0.1)

    def __exit__(self, *_exc: object) -> None:
        self.proc.terminate()
        try:
            self.output, _ = self.proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.output, _ = self.proc.communicate()


@dataclass
class NetNs:
    """A network namespace of the test's own, joined to ours by a veth pair: a server in it, bound to
    every interface of the namespace, sees requests from us come from ``peer``, not from loopback.
    No address outside this machine is involved (198.18.0.0/15 is the range reserved for such tests)."""

    name: str
    address: str  # the namespace's end: where its servers are reached from here
    peer: str  # our end: where our requests come from, as its servers see them

    def request(self, method: str, url: str, **kw: Any) -> tuple[int, Any]:
        """``httpx.request`` from inside the namespace (so to its loopback): status and JSON answer."""
        code = (
            "import httpx, json, sys; a = json.loads(sys.argv[1]); r = httpx.request(*a['args'], **a['kw']);"
            "print(json.dumps([r.status_code, r.json()]))"
        )
        argv = [sys.executable, "-c", code, json.dumps({"args": [method, url], "kw": kw})]
        done = subprocess.run(["ip", "netns", "exec", self.name, *argv], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        status, body = json.loads(done.stdout)
        return status, body
