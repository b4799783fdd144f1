"""The resume rules on a real catalog (SQLite and PostgreSQL): which interrupted run is resumable, that only
one process can claim it, and that Spark and Ray runs are never resumed (they start over)."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from lineage import resume
from lineage.catalog import Catalog, Run
from lineage.catalog.models import utcnow
from tests.support.fixtures_postgres import PostgresServer

WANTED = resume.identity("p", "key-of-the-inputs-operators-and-code", "local")


@pytest.fixture(params=["sqlite", "postgresql"])
def catalog(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Catalog]:
    url = f"sqlite:///{tmp_path / 'catalog.db'}"
    if request.param == "postgresql":
        server: PostgresServer = request.getfixturevalue("postgres_server")
        url = server.create_database()
    cat = Catalog(url)
    yield cat
    cat.dispose()


def _run(catalog: Catalog, staging: Path, *, status: str = "failed", engine: str = "local", **fields: object) -> str:
    run_id = str(uuid.uuid4())
    (staging / run_id).mkdir(parents=True)
    with catalog.session() as s:
        s.add(
            Run(
                id=run_id,
                pipeline=WANTED["pipeline"],
                engine=engine,
                output_dataset="clean",
                cache_key=WANTED["cache_key"],
                status=status,
                host=socket.gethostname(),
                **fields,  # type: ignore[arg-type]
            )
        )
    return run_id


def _found(catalog: Catalog, staging: Path, wanted: dict = WANTED) -> str | None:
    with catalog.session() as s:
        run = resume.find_resumable(s, "clean", wanted, staging)
        return run.id if run is not None else None


def test_the_latest_interrupted_same_run_is_found_and_claimed_once(catalog: Catalog, tmp_path: Path) -> None:
    staging = tmp_path / "staging"
    dead = ended_pid()
    older = _run(catalog, staging, started_at=utcnow() - timedelta(hours=1))
    latest = _run(catalog, staging, status="running", pid=dead)  # killed: running, its process gone
    _run(catalog, staging, status="running", pid=os.getpid())  # alive: not interrupted
    assert _found(catalog, staging) == latest
    assert _found(catalog, staging, {**WANTED, "cache_key": "another-key"}) is None  # other inputs, params or code
    assert _found(catalog, staging, {**WANTED, "pipeline": "another-pipeline"}) is None

    with catalog.session() as s:
        run = s.get(Run, latest)
        s.expunge(run)
    assert resume.claim(catalog, run) and not resume.claim(catalog, run), "a second rerun cannot claim it too"
    with catalog.session() as s:
        claimed = s.get(Run, latest)
        assert (claimed.status, claimed.pid, claimed.counts) == ("running", os.getpid(), {"resumed": {"attempts": 1}})
    assert _found(catalog, staging) == older  # the claimed one runs now


def test_spark_and_ray_runs_are_not_resumed(catalog: Catalog, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    staging = tmp_path / "staging"
    for engine in ("spark", "ray"):
        run_id = _run(catalog, staging, engine=engine)
        with catalog.session() as s:
            assert not resume.resumable(s, s.get(Run, run_id), staging)
        with caplog.at_level("WARNING", logger="lineage.resume"):
            assert _found(catalog, staging, {**WANTED, "engine": engine}) is None
        assert f"run {run_id} was interrupted on {engine}, which does not resume runs: starting over" in caplog.text


def test_a_run_is_not_resumable_without_its_staging_or_after_a_newer_success(catalog: Catalog, tmp_path: Path) -> None:
    staging = tmp_path / "staging"
    run_id = _run(catalog, staging)
    (staging / run_id).rmdir()
    assert _found(catalog, staging) is None
    (staging / run_id).mkdir()
    assert _found(catalog, staging) == run_id
    _run(catalog, staging, status="succeeded", started_at=utcnow() + timedelta(seconds=1))
    assert _found(catalog, staging) is None
    with catalog.session() as s:
        assert resume.keep_staging(s, staging, timedelta(days=2)) == set()


def ended_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid
