"""Errors the service raises; the HTTP layer maps each to one status code (see ``api/errors.py``)."""

from __future__ import annotations


class ServiceError(Exception):
    """Base class. ``status`` is the HTTP status the API answers with, ``code`` the stable,
    machine-readable name every HTTP error body carries beside its message."""

    status = 400
    code = "bad_request"


class BadRequest(ServiceError, ValueError):
    status, code = 400, "bad_request"


class Unauthorized(ServiceError):
    status, code = 401, "unauthorized"


class Forbidden(ServiceError, PermissionError):
    status, code = 403, "forbidden"


class NotFound(ServiceError, LookupError):
    status, code = 404, "not_found"


class Conflict(ServiceError):
    status, code = 409, "conflict"


def classify(exc: BaseException) -> tuple[int, str] | None:
    """(HTTP status, error code) for an error the service layer (or code it calls) raises; None = a bug (500)."""
    from pydantic import ValidationError
    from sqlalchemy.exc import DataError, IntegrityError

    from lineage.releases import ReleaseConflict, ReleaseError, ReleaseNotFound

    if isinstance(exc, ServiceError):
        return exc.status, exc.code
    if isinstance(exc, DataError):  # the database refused a value (e.g. a NUL character on PostgreSQL)
        return 400, "invalid_value"
    if isinstance(exc, IntegrityError) and _unique_violation(exc):  # a concurrent write got there first
        return 409, "concurrent_change"
    if isinstance(exc, ReleaseConflict):
        return 409, "release_conflict"
    if isinstance(exc, ReleaseNotFound):
        return 404, "release_not_found"
    if isinstance(exc, KeyError):
        return 404, "not_found"
    if isinstance(exc, ReleaseError | ValidationError | ValueError):
        return 400, "bad_request"
    return None


def status_for(exc: BaseException) -> int | None:
    """The HTTP status of :func:`classify`; None = a bug (500)."""
    known = classify(exc)
    return known[0] if known else None


def message_for(exc: BaseException) -> str:
    """One line for the client. Database errors give only the driver's first line: SQLAlchemy's own
    text carries the statement and its parameters (a whole manifest, say)."""
    from sqlalchemy.exc import DataError, IntegrityError

    if isinstance(exc, KeyError) and exc.args:
        return str(exc.args[0])
    if isinstance(exc, DataError):
        return f"the catalog database refused a value: {str(exc.orig).splitlines()[0]}"
    if isinstance(exc, IntegrityError):
        return f"conflicts with a concurrent change to the catalog: {str(exc.orig).splitlines()[0]}"
    return str(exc)


def _unique_violation(exc: BaseException) -> bool:
    """A unique constraint refused the write (PostgreSQL SQLSTATE 23505, SQLite's UNIQUE); other
    integrity errors (a missing foreign key, a NULL) are bugs."""
    orig = getattr(exc, "orig", None)
    return getattr(orig, "sqlstate", None) == "23505" or getattr(orig, "sqlite_errorname", None) in (
        "SQLITE_CONSTRAINT_UNIQUE",
        "SQLITE_CONSTRAINT_PRIMARYKEY",
    )
