"""The catalog schema comes from Alembic migrations, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import JSON, Column, DateTime, Integer, MetaData, String, Table, Text, create_engine, inspect, text

from lineage.catalog import Catalog, Dataset, Release, ReleaseRead, queries
from lineage.catalog.db import MIGRATIONS_DIR
from lineage.catalog.migrations import HEAD
from lineage.catalog.models import Base
from tests.support.api_world import BACKENDS, make_settings


def test_head_constant_matches_the_migration_scripts() -> None:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    assert ScriptDirectory.from_config(cfg).get_current_head() == HEAD


@pytest.mark.parametrize("backend", BACKENDS)
def test_fresh_catalog_is_migrated_to_head_and_matches_the_models(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = make_settings(tmp_path, backend, request).catalog_url or ""
    catalog = Catalog(url)
    with catalog.engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == HEAD
        # the migrations produce exactly the models' schema: no difference left for autogenerate
        assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []
    again = Catalog(url)  # opening again is a no-op
    with again.session() as s:
        s.add(Dataset(name="d", tier="local"))
    catalog.dispose()
    again.dispose()


@pytest.mark.parametrize("backend", BACKENDS)
def test_catalog_from_before_migrations_is_stamped_and_upgraded(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A catalog made by the old ``create_all`` keeps its rows and gains the new tables and columns."""
    url = make_settings(tmp_path, backend, request).catalog_url or ""
    old = MetaData()
    Table(
        "datasets",
        old,
        Column("id", Integer, primary_key=True),
        Column("name", String(200), unique=True, nullable=False),
        Column("tier", String(100), nullable=False),
        Column("description", Text, nullable=False),
        Column("owner", String(200), nullable=False),
        Column("license", String(200), nullable=False),
        Column("tags", JSON, nullable=False),
        Column("created_at", DateTime(timezone=True), nullable=False),
    )
    for name in ("runs", "dataset_versions"):
        Table(name, old, Column("id", Integer, primary_key=True))
    Table(
        "releases",
        old,
        Column("id", Integer, primary_key=True),
        Column("state", String(20)),
        Column("deprecated_at", DateTime(timezone=True)),
    )
    (tmp_path / "home").mkdir(exist_ok=True)
    engine = create_engine(url)
    old.create_all(engine)
    with engine.begin() as conn:
        conn.execute(
            old.tables["datasets"].insert(),
            {
                "name": "kept",
                "tier": "local",
                "description": "",
                "owner": "o",
                "license": "",
                "tags": [],
                "created_at": datetime.now(UTC),
            },
        )
    engine.dispose()
    catalog = Catalog(url)
    tables = set(inspect(catalog.engine).get_table_names())
    assert {"api_tokens", "lineage_events", "lineage_nodes", "lineage_edges", "alembic_version"} <= tables
    assert "deprecation_reason" in {c["name"] for c in inspect(catalog.engine).get_columns("releases")}
    with catalog.session() as s:
        assert [d.name for d in s.query(Dataset)] == ["kept"]
    catalog.dispose()


@pytest.mark.parametrize("backend", BACKENDS)
def test_processes_opening_a_new_catalog_at_once_all_succeed(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Several processes (CLI, server, runners) may open a fresh catalog together: exactly one migrates."""
    import os
    import subprocess
    import sys

    url = make_settings(tmp_path, backend, request).catalog_url or ""
    code = "import sys; from lineage.catalog import Catalog; Catalog(sys.argv[1]).dispose()"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[3])}
    procs = [
        subprocess.Popen([sys.executable, "-c", code, url], env=env, stderr=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], errors
    catalog = Catalog(url)
    with catalog.engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all() == [HEAD]
    catalog.dispose()


def _filled(table: Table, **given: object) -> dict[str, object]:
    """A row for ``table``: the given values, and a plain value for every other required column."""
    by_type = [(sa.Boolean, False), (sa.Integer, 1), (sa.DateTime, datetime.now(UTC)), (sa.JSON, {}), (sa.String, "x")]
    row = dict(given)
    for col in table.columns:
        if col.name in row or col.nullable or col.primary_key and isinstance(col.type, Integer):
            continue
        row[col.name] = next(value for kind, value in by_type if isinstance(col.type, kind))
    return row


def _catalog_at(revision: str, backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A catalog migrated only to ``revision``, holding one dataset version, release and usage record written
    as that revision's tables had them; its URL (opening it with ``Catalog`` migrates it to head)."""
    from alembic import command

    url = make_settings(tmp_path, backend, request).catalog_url or ""
    (tmp_path / "home").mkdir(exist_ok=True)
    engine = create_engine(url)
    with engine.begin() as conn:
        cfg = Config()
        cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)
    old = MetaData()
    old.reflect(engine)
    with engine.begin() as conn:
        for name, row in (
            ("datasets", {"id": 1, "name": "d"}),
            ("runs", {"id": "r1"}),
            ("dataset_versions", {"id": 1, "dataset_id": 1, "run_id": "r1"}),
            ("releases", {"id": 1, "dataset_version_id": 1, "name": "d", "tag": "v1", "state": "published"}),
            ("release_reads", {"release_id": 1, "job": "old-job", "world_size": 2, "rank": 1}),
        ):
            conn.execute(old.tables[name].insert(), _filled(old.tables[name], **row))
    engine.dispose()
    return url


@pytest.mark.parametrize("backend", BACKENDS)
def test_release_reads_recorded_before_attribution_keep_an_empty_recorder(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """0004 adds ``recorded_by`` to existing usage records (empty: nobody recorded it then)."""
    catalog = Catalog(_catalog_at("0003_replicas_gate", backend, tmp_path, request))
    with catalog.session() as s:
        (read,) = s.query(ReleaseRead).all()
        assert (read.job, read.rank, read.recorded_by) == ("old-job", 1, "")
    indexes = {i["name"] for i in inspect(catalog.engine).get_indexes("release_reads")}
    assert "ix_release_reads_release_id" in indexes
    catalog.dispose()


@pytest.mark.parametrize("backend", BACKENDS)
def test_releases_and_reads_from_before_takedowns_are_live_and_unexcused(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """0006 adds who withdrew a release and its successor (none: never withdrawn), and why a read of a
    withdrawn release was allowed (none), with plain ADD COLUMNs that keep the foreign keys to ``releases``."""
    catalog = Catalog(_catalog_at("0005_takedowns", backend, tmp_path, request))
    with catalog.session() as s:
        (release,) = s.query(Release).all()
        assert (release.state, release.withdrawn_at, release.withdrawn_by, release.successor) == (
            "published",
            None,
            None,
            None,
        )
        (read,) = s.query(ReleaseRead).all()
        assert read.override_reason is None and read.release_id == release.id
    catalog.dispose()


@pytest.mark.parametrize("backend", BACKENDS)
def test_releases_published_before_contamination_checks_have_none(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """0007 adds ``contamination_checks`` to existing releases (empty: never checked), which other tables
    refer to (on SQLite a batch copy of ``releases`` would break their foreign keys)."""
    catalog = Catalog(_catalog_at("0004_release_read_recorder", backend, tmp_path, request))
    with catalog.session() as s:
        (release,) = s.query(Release).all()
        assert release.contamination_checks == {} and release.ref == "d@v1"
    assert {"eval_sets", "eval_set_versions"} <= set(inspect(catalog.engine).get_table_names())
    catalog.dispose()


@pytest.mark.parametrize("backend", BACKENDS)
def test_versions_and_exports_from_before_purge_are_readable(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """0009 adds ``purged_by`` to dataset versions and exports (none: never purged) and a takedown's
    ``purge_report``; an existing version stays readable."""
    catalog = Catalog(_catalog_at("0004_release_read_recorder", backend, tmp_path, request))
    with catalog.session() as s:
        (release,) = s.query(Release).all()
        assert release.dataset_version.purged_by is None
        assert queries.require_data(release.dataset_version) is release.dataset_version
    catalog.dispose()
