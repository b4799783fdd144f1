"""The resume rules on a real catalog (SQLite and PostgreSQL): which interrupted run is resumable, that only
one process can claim it, and that Spark and Ray runs are resumable while their tier staging holds partitions."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from lineage import resume, staging
from lineage.catalog import Catalog, Run
from lineage.catalog.models import utcnow
from lineage.settings import Settings
from pipelines.partitions import FOLDER
from storage.layout import staging_prefix
from storage.tier import get_tier
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


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home")


def _folder(settings: Settings, run_id: str, engine: str) -> Path:
    """Where a run's partitions are: the local staging folder, or the output tier's ``_staging``."""
    if engine == "local":
        return Path(settings.staging_dir) / run_id
    return Path(get_tier(None, settings).path(staging_prefix(run_id), FOLDER))


def _run(
    catalog: Catalog, settings: Settings, *, status: str = "failed", engine: str = "local", **fields: object
) -> str:
    run_id = str(uuid.uuid4())
    _folder(settings, run_id, engine).mkdir(parents=True)
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
                spec={"output": {"dataset": "clean", "tier": None}},
                **fields,  # type: ignore[arg-type]
            )
        )
    return run_id


def _found(catalog: Catalog, settings: Settings, wanted: dict = WANTED) -> str | None:
    with catalog.session() as s:
        run = resume.find_resumable(s, "clean", wanted, staging.staged(settings))
        return run.id if run is not None else None


def test_the_latest_interrupted_same_run_is_found_and_claimed_once(catalog: Catalog, settings: Settings) -> None:
    dead = ended_pid()
    older = _run(catalog, settings, started_at=utcnow() - timedelta(hours=1))
    latest = _run(catalog, settings, status="running", pid=dead)  # killed: running, its process gone
    _run(catalog, settings, status="running", pid=os.getpid())  # alive: not interrupted
    assert _found(catalog, settings) == latest
    assert _found(catalog, settings, {**WANTED, "cache_key": "another-key"}) is None  # other inputs, params or code
    assert _found(catalog, settings, {**WANTED, "pipeline": "another-pipeline"}) is None

    with catalog.session() as s:
        run = s.get(Run, latest)
        s.expunge(run)
    assert resume.claim(catalog, run) and not resume.claim(catalog, run), "a second rerun cannot claim it too"
    with catalog.session() as s:
        claimed = s.get(Run, latest)
        assert (claimed.status, claimed.pid, claimed.counts) == ("running", os.getpid(), {"resumed": {"attempts": 1}})
    assert _found(catalog, settings) == older  # the claimed one runs


def test_spark_and_ray_runs_resume_while_their_tier_staging_holds_partitions(
    catalog: Catalog, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    for engine in ("spark", "ray"):
        wanted = {**WANTED, "engine": engine}
        run_id = _run(catalog, settings, engine=engine)
        with catalog.session() as s:
            assert resume.resumable(s, s.get(Run, run_id), staging.staged(settings))
        assert _found(catalog, settings, wanted) == run_id
        assert _found(catalog, settings) is None, "a local rerun does not resume a Spark or Ray run"
        _folder(settings, run_id, engine).rmdir()  # the scratch may stay, the partitions are what counts
        assert _found(catalog, settings, wanted) is None
        assert "starting over" not in caplog.text


def test_a_run_is_not_resumable_without_its_staging_or_after_a_newer_success(
    catalog: Catalog, settings: Settings
) -> None:
    run_id = _run(catalog, settings)
    folder = _folder(settings, run_id, "local")
    folder.rmdir()
    assert _found(catalog, settings) is None
    folder.mkdir()
    assert _found(catalog, settings) == run_id
    _run(catalog, settings, status="succeeded", started_at=utcnow() + timedelta(seconds=1))
    assert _found(catalog, settings) is None
    with catalog.session() as s:
        assert resume.keep_staging(s, staging.staged(settings), timedelta(days=2)) == set()


def ended_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid
