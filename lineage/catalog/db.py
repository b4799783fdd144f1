"""Engine and session handling for the catalog (SQLite by default, PostgreSQL by URL).

The schema is owned by Alembic migrations (``lineage/catalog/migrations``): opening a catalog
upgrades it to the head revision. When the database is already at head (the common case) this
costs one small query and does not import Alembic, which keeps the CLI's startup fast.
"""

from __future__ import annotations

import fcntl
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Connection, Engine, create_engine, event, inspect, make_url, text
from sqlalchemy.exc import ArgumentError, OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from lineage.catalog.migrations import HEAD
from lineage.errors import ConfigError, MissingExtra

log = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
INITIAL_REVISION = "0001_initial"
_PRE_MIGRATION_TABLES = {"datasets", "runs", "dataset_versions", "releases"}


def _sqlite_pragmas(dbapi_conn, _record) -> None:  # type: ignore[no-untyped-def]
    cur = dbapi_conn.cursor()
    # busy_timeout first: switching a new file to WAL needs a lock that another process may hold
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def _current_revision(conn: Connection) -> str | None:
    try:
        with conn.begin_nested() if conn.in_transaction() else conn.begin():
            return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    except SQLAlchemyError:
        return None


def _alembic_config(conn: Connection):  # type: ignore[no-untyped-def]
    from alembic.config import Config  # start-up: alembic, only when the schema is behind

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["connection"] = conn
    return cfg


@contextmanager
def _sqlite_migration_lock(engine: Engine) -> Iterator[None]:
    """Serialise migrations of one SQLite file between processes (a lock file next to it)."""
    database = engine.url.database
    if engine.dialect.name != "sqlite" or not database or database == ":memory:":
        yield
        return
    with open(f"{database}.migrate-lock", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def upgrade(engine: Engine) -> None:
    """Bring the schema to the head revision.

    A catalog created before migrations existed (``create_all`` of the first models) is stamped
    with the initial revision first, so its data is kept and only later changes are applied.
    Processes opening a new catalog at once are serialised: by an advisory lock on PostgreSQL, by
    a lock file on SQLite; the others find the schema at head and carry on.
    """
    with engine.connect() as conn:
        if _current_revision(conn) == HEAD:
            return
    from alembic import command  # start-up: alembic, only when the schema is behind

    with _sqlite_migration_lock(engine), engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(7312004)"))
        if _current_revision(conn) == HEAD:
            return
        cfg = _alembic_config(conn)
        tables = set(inspect(conn).get_table_names())
        if "alembic_version" not in tables and tables >= _PRE_MIGRATION_TABLES:
            log.info("catalog predates migrations: stamping %s", INITIAL_REVISION)
            command.stamp(cfg, INITIAL_REVISION)
        command.upgrade(cfg, "head")


def _shown(url: str) -> str:
    """The catalog URL for a message: its password hidden."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return repr(url)


def _unusable_url(url: str, exc: Exception) -> str:
    scheme = url.partition(":")[0]
    hint = "; for PostgreSQL use postgresql+psycopg://USER:PASSWORD@HOST:PORT/DATABASE"
    if scheme in ("postgres", "postgresql") or scheme.startswith("postgres+"):
        return f"catalog URL {_shown(url)}: SQLAlchemy cannot use {scheme}:// ({exc}){hint}"
    return f"catalog URL {_shown(url)} is not usable ({exc}); use sqlite:///PATH{hint}"


class Catalog:
    """A handle on one catalog database. Cheap to share; sessions are per unit of work. A URL SQLAlchemy
    cannot use, or a database it cannot reach, is a :class:`~lineage.errors.ConfigError` naming the URL
    (its password hidden): one line on every surface, not a driver's traceback."""

    def __init__(self, url: str, *, migrate: bool = True) -> None:
        self.url = url
        if url.startswith("sqlite:///"):
            Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        if url.startswith("postgresql+psycopg:"):  # the driver the [postgres] extra installs
            MissingExtra.require("psycopg", "postgres", "a PostgreSQL catalog")
        try:
            self.engine: Engine = create_engine(url, future=True, pool_pre_ping=not url.startswith("sqlite"))
        except (ArgumentError, ImportError) as exc:  # a URL SQLAlchemy cannot parse, or a dialect or driver it lacks
            raise ConfigError(_unusable_url(url, exc)) from None
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        if migrate:
            try:
                upgrade(self.engine)
            except OperationalError as exc:  # refused, unreachable, bad credentials, a file it cannot open
                reason = (str(exc.orig).strip().splitlines() or [type(exc.orig).__name__])[0]
                raise ConfigError(f"cannot open the catalog {_shown(url)}: {reason}") from None
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @contextmanager
    def session(self) -> Iterator[Session]:
        """One transaction: committed on success, rolled back on any error."""
        with self._sessions() as session, session.begin():
            yield session

    def dispose(self) -> None:
        self.engine.dispose()
