"""The errors tree: every refusal the project raises is one of these classes (or a subclass).

Each class carries ``code``, a stable machine-readable name that every HTTP error body includes beside
its message; a subclass may refine it (``ReleaseNotFound`` is a ``NotFound`` with code
``release_not_found``). What a code means to each surface (HTTP status, SDK class) is one table in
:mod:`lineage.errors`; the classes live here, in the bottom layer, so storage, operators and pipelines
can raise them without importing upwards. Import them as ``lineage.errors.X``.

``str(exc)`` is the whole message on every surface: in-process, over HTTP and in the CLI. Classes keep a
builtin base where callers have always caught one (``Invalid`` is a ``ValueError``, ``NotFound`` a
``LookupError``), so converting a raise site breaks no ``except ValueError``.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import ValidationError


class LineageError(Exception):
    """The root. A bare ``LineageError`` is an error nobody classified: a 500 over HTTP."""

    code = "error"


class Invalid(LineageError, ValueError):
    """The request, a parameter, a name or a spec is malformed or out of range."""

    code = "bad_request"


class InvalidValue(Invalid):
    """The catalog database refused a value (e.g. a NUL character on PostgreSQL)."""

    code = "invalid_value"


class NotFound(LineageError, LookupError):
    code = "not_found"


class MissingFile(NotFound, FileNotFoundError):
    """An input file or folder a request names does not exist (still a ``FileNotFoundError``)."""


class Conflict(LineageError):
    """The request contradicts what is already recorded."""

    code = "conflict"


class ConcurrentChange(Conflict):
    """A concurrent write got there first (a unique key, a Delta commit); retrying may succeed."""

    code = "concurrent_change"


class GateFailed(Conflict):
    """Publishing refused: quality conditions failed, each named with its measured value and limit."""

    code = "gate_failed"

    def __init__(self, message: str, failures: Iterable[dict[str, Any]] = ()) -> None:
        super().__init__(message)
        self.failures = [dict(f) for f in failures]

    @classmethod
    def of(cls, failures: Iterable[dict[str, Any]]) -> GateFailed:
        """The refusal for these failed conditions (``{condition, measured, limit, passed}`` each), one per line."""
        failures = list(failures)
        lines = [f"{f['condition']}: measured {f['measured']} (limit {f['limit']})" for f in failures]
        return cls("publish gate failed:\n  " + "\n  ".join(lines), failures)


class Unauthorized(LineageError):
    """No token, or an invalid or revoked one."""

    code = "unauthorized"


class Forbidden(LineageError, PermissionError):
    """The caller's role is not enough."""

    code = "forbidden"


class RunFailed(LineageError, RuntimeError):
    """A pipeline run was refused or failed its integrity checks; nothing was committed."""

    code = "run_failed"


class TransferFailed(LineageError, OSError):
    """Copying or verifying files between tiers failed."""

    code = "transfer_failed"


class Corrupt(LineageError, OSError):
    """Stored data does not match what the catalog recorded (a checksum, a size): not a client fault."""

    code = "corrupt"


class ConfigError(LineageError):
    """The server or the machine is configured wrongly (a tier, a credential, a missing extra)."""

    code = "config"


class MissingExtra(ConfigError):
    """An optional dependency is not installed; the message gives the ``pip install`` that fixes it."""

    code = "missing_extra"

    @classmethod
    def require(cls, package: str, extra: str, what: str) -> None:
        """Import ``package`` or raise ``"{what} needs {package}: pip install 'lineage-ledger[{extra}]'"``.

        Importing, not just finding it, also catches an extra installed without its own dependencies
        (then the message names the module that is missing)."""
        try:
            importlib.import_module(package)
        except ModuleNotFoundError as exc:
            raise cls(f"{what} needs {exc.name or package}: pip install 'lineage-ledger[{extra}]'") from None


def validation_problems(exc: ValidationError) -> str:
    """pydantic's refusal of user input as one line (``where: why; …``), for the message of the
    :class:`Invalid` or :class:`ConfigError` that replaces it."""
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'top level'}: {e['msg']}" for e in exc.errors())


__all__ = [
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
    "RunFailed",
    "TransferFailed",
    "Unauthorized",
    "validation_problems",
]
