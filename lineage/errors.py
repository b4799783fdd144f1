"""The errors tree and THE table: what each error means to every surface.

The classes are :mod:`storage.errors` (re-exported here: import them as ``lineage.errors.X``), plus the
release refusals, which belong to the catalog. Each carries a stable ``code``; :data:`TABLE` maps each
code to its HTTP status, its exit code in the ``lineage`` command and the class the SDK raises, so the
API (``api/errors.py``), the SDK (``lineage.client``) and the CLI (``lineage.cli.app.guard``) translate
errors in one place and an error reads the same on each: ``str(exc)`` is the whole message.

Exit codes: 0 success; 1 a bug (the CLI prints its traceback) or a refusal no row names more precisely;
2 a usage error, which Click reports before any command runs (an unknown option, a missing argument);
3 to 13 one per row below, shared by a subclass that means the same to a script (``ReleaseNotFound`` is
a ``NotFound``: 4). The README lists them.

:func:`translate` also classifies the database's refusals (a value it cannot store, a unique key a
concurrent write took first). Anything else is a bug: a 500 over HTTP with a request id and a log line,
a traceback in the CLI: a builtin ``KeyError`` or ``ValueError`` is never taken for a refusal.
"""

from __future__ import annotations

from dataclasses import dataclass

from storage.errors import (
    ConcurrentChange,
    ConfigError,
    Conflict,
    Corrupt,
    Forbidden,
    GateFailed,
    Invalid,
    InvalidValue,
    LineageError,
    MissingExtra,
    MissingFile,
    NotFound,
    RunFailed,
    TransferFailed,
    Unauthorized,
    validation_problems,
)


class ReleaseError(Invalid):
    """A release request the catalog refuses. Itself: a malformed reference or manifest (400); the base of
    the two below so that callers catching it (and ``ValueError``) keep working."""


class ReleaseNotFound(ReleaseError, NotFound):
    code = "release_not_found"


class ReleaseConflict(ReleaseError, Conflict):
    """The request contradicts what is already recorded (different content, wrong state)."""

    code = "release_conflict"


class ReleaseWithdrawn(ReleaseConflict):
    """A takedown withdrew the release: reading, exporting or copying it needs an override reason."""

    code = "release_withdrawn"


class DataPurged(LineageError):
    """A takedown's purge deleted this data's files: the catalog keeps it as a tombstone (manifest, QC
    report, lineage), and no override reads it."""

    code = "data_purged"


@dataclass(frozen=True)
class Rule:
    """One row of the table: the class (whose ``code`` keys the row), its HTTP status and the ``lineage``
    command's exit code."""

    cls: type[LineageError]
    status: int
    exit_code: int

    @property
    def code(self) -> str:
        return self.cls.code


# Base classes before their subclasses: the first row with a status is what a bare status maps back to.
TABLE: tuple[Rule, ...] = (
    Rule(Invalid, 400, 3),
    Rule(Unauthorized, 401, 7),  # answered with ``WWW-Authenticate: Bearer``
    Rule(Forbidden, 403, 8),
    Rule(NotFound, 404, 4),
    Rule(Conflict, 409, 5),
    Rule(LineageError, 500, 1),
    Rule(TransferFailed, 502, 10),
    Rule(ConfigError, 503, 12),
    Rule(InvalidValue, 400, 3),
    Rule(ReleaseNotFound, 404, 4),
    Rule(ConcurrentChange, 409, 5),
    Rule(ReleaseConflict, 409, 5),
    Rule(ReleaseWithdrawn, 409, 5),
    Rule(GateFailed, 409, 6),
    Rule(RunFailed, 500, 9),
    Rule(Corrupt, 500, 11),
    Rule(MissingExtra, 503, 13),
    Rule(DataPurged, 410, 14),
)
BY_CODE: dict[str, Rule] = {rule.code: rule for rule in TABLE}
_BY_STATUS: dict[int, Rule] = {}
for _rule in TABLE:
    _BY_STATUS.setdefault(_rule.status, _rule)
_BY_STATUS[422] = BY_CODE[Invalid.code]  # FastAPI's own request validation


def rule_for(exc: LineageError) -> Rule:
    """The row of a tree error (its own code, or the nearest base's for a code the table lacks)."""
    for cls in type(exc).__mro__:
        rule = BY_CODE.get(getattr(cls, "code", ""))
        if rule is not None and issubclass(type(exc), rule.cls):
            return rule
    return BY_CODE[LineageError.code]


def exit_code(exc: LineageError) -> int:
    """What the ``lineage`` command exits with when it refuses with ``exc``."""
    return rule_for(exc).exit_code


def error_class(code: str | None, status: int) -> type[LineageError]:
    """The class an error body names (by ``code``, falling back to the status): what the SDK raises."""
    rule = BY_CODE.get(code or "") or _BY_STATUS.get(status) or BY_CODE[LineageError.code]
    return rule.cls


def translate(exc: BaseException) -> LineageError | None:
    """``exc`` as a tree error; None for a bug. Foreign errors keep their message (database errors give
    only the driver's first line: SQLAlchemy's own text carries the statement and its parameters)."""
    if isinstance(exc, LineageError):
        return exc
    from sqlalchemy.exc import DataError, IntegrityError  # start-up: a failure path; keeps SQLAlchemy out of the reader

    if isinstance(exc, DataError):
        return InvalidValue(f"the catalog database refused a value: {_first_line(exc)}")
    if isinstance(exc, IntegrityError):
        if not _unique_violation(exc):  # a missing foreign key, a NULL: a bug
            return None
        return ConcurrentChange(f"conflicts with a concurrent change to the catalog: {_first_line(exc)}")
    return None


def _first_line(exc: BaseException) -> str:
    return str(getattr(exc, "orig", exc)).splitlines()[0]


def _unique_violation(exc: BaseException) -> bool:
    """A unique constraint refused the write (PostgreSQL SQLSTATE 23505, SQLite's UNIQUE); other
    integrity errors (a missing foreign key, a NULL) are bugs."""
    orig = getattr(exc, "orig", None)
    return getattr(orig, "sqlstate", None) == "23505" or getattr(orig, "sqlite_errorname", None) in (
        "SQLITE_CONSTRAINT_UNIQUE",
        "SQLITE_CONSTRAINT_PRIMARYKEY",
    )


__all__ = [
    "BY_CODE",
    "TABLE",
    "ConcurrentChange",
    "ConfigError",
    "Conflict",
    "Corrupt",
    "Forbidden",
    "GateFailed",
    "Invalid",
    "InvalidValue",
    "LineageError",
    "MissingExtra",
    "MissingFile",
    "NotFound",
    "ReleaseConflict",
    "ReleaseError",
    "ReleaseNotFound",
    "ReleaseWithdrawn",
    "DataPurged",
    "Rule",
    "RunFailed",
    "TransferFailed",
    "Unauthorized",
    "error_class",
    "exit_code",
    "rule_for",
    "translate",
    "validation_problems",
]
