"""A real PostgreSQL server for the test session: initdb into a temp dir, pg_ctl on a free loopback
port, unix socket in the temp dir, one fresh database per test that asks for one.

The binaries come from Debian's ``postgresql`` package (``scripts/system-packages.d/postgresql.sh``
makes ``scripts/setup.sh --tests`` install it). Missing binaries fail the tests loudly: they are
not a reason to skip. PostgreSQL refuses to run as root, so as root the server runs as the
``postgres`` user the package creates.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest


def find_pg_bin() -> Path:
    """The newest ``/usr/lib/postgresql/*/bin`` (Debian's layout), else ``initdb`` on PATH."""
    candidates = sorted(
        (Path(p) for p in glob.glob("/usr/lib/postgresql/*/bin") if Path(p, "initdb").exists()),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    if candidates:
        return candidates[-1]
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).resolve().parent
    pytest.fail(
        "PostgreSQL binaries (initdb, pg_ctl) not found under /usr/lib/postgresql/*/bin or on PATH: "
        "run `scripts/setup.sh --tests` (installs Debian's `postgresql` package)",
        pytrace=False,
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class PostgresServer:
    root: Path
    port: int
    socket_dir: Path
    user: str = "postgres"
    _counter: itertools.count = itertools.count()

    def url(self, database: str) -> str:
        return f"postgresql+psycopg://{self.user}@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        """A new empty database; returns its SQLAlchemy URL."""
        import psycopg

        name = f"t{os.getpid()}_{next(self._counter)}"
        with psycopg.connect(host="127.0.0.1", port=self.port, user=self.user, dbname="postgres", autocommit=True) as c:
            c.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


def _as_server_user(cmd: list[str], owner: pwd.struct_passwd | None) -> list[str]:
    if owner is None:
        return cmd
    return ["setpriv", f"--reuid={owner.pw_uid}", f"--regid={owner.pw_gid}", "--clear-groups", *cmd]


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    bindir = find_pg_bin()
    owner = None
    if os.geteuid() == 0:
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            pytest.fail("running as root, and there is no `postgres` user to run the server as", pytrace=False)
    root = Path(tempfile.mkdtemp(prefix="lineage-pg-"))  # not under pytest's 0700 tmp: the server user reads it
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    if owner is not None:
        for p in (root, sock):
            os.chown(p, owner.pw_uid, owner.pw_gid)
    env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
    run = lambda cmd: subprocess.run(  # noqa: E731
        _as_server_user(cmd, owner), env=env, capture_output=True, text=True, timeout=120, cwd=root
    )
    init = run([str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"])
    if init.returncode != 0:
        pytest.fail(f"initdb failed ({init.returncode}):\n{init.stdout}\n{init.stderr}", pytrace=False)
    port = free_port()
    options = (
        f"-p {port} -k {sock} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off "
        "-c full_page_writes=off -c max_connections=200 -c shared_buffers=64MB"
    )
    start = run([str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(root / "server.log"), "-w", "start"])
    if start.returncode != 0:
        log = (root / "server.log").read_text() if (root / "server.log").exists() else ""
        pytest.fail(f"pg_ctl start failed ({start.returncode}):\n{start.stdout}\n{start.stderr}\n{log}", pytrace=False)
    try:
        yield PostgresServer(root, port, sock)
    finally:
        run([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"])
        shutil.rmtree(root, ignore_errors=True)
