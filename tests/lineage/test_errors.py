"""The errors tree has one table (lineage/errors.py): every class maps to a row, and the codes HTTP error
bodies have carried since they were introduced keep their status."""

from __future__ import annotations

import lineage.releases
import lineage.releases.qc
from lineage import errors


def _tree(cls: type[errors.LineageError]) -> set[type[errors.LineageError]]:
    return {cls}.union(*(_tree(sub) for sub in cls.__subclasses__()))


def test_every_error_class_has_a_row() -> None:
    assert lineage.releases.qc.GateError.code == "gate_failed" and lineage.releases.ReleaseError is errors.ReleaseError
    for cls in _tree(errors.LineageError):
        rule = errors.BY_CODE[cls.code]
        assert rule.cls in cls.__mro__, cls


def test_the_shipped_codes_keep_their_status() -> None:
    shipped = {
        "bad_request": 400,
        "invalid_value": 400,
        "unauthorized": 401,
        "forbidden": 403,
        "not_found": 404,
        "release_not_found": 404,
        "conflict": 409,
        "concurrent_change": 409,
        "release_conflict": 409,
    }
    assert {code: errors.BY_CODE[code].status for code in shipped} == shipped
    assert "internal" not in errors.BY_CODE  # a bug's body code: no class raises it


def test_the_sdk_picks_the_class_by_code_then_by_status() -> None:
    assert errors.error_class("release_conflict", 409) is errors.ReleaseConflict
    assert errors.error_class("a-code-from-a-newer-server", 404) is errors.NotFound
    assert errors.error_class(None, 422) is errors.Invalid  # FastAPI's own request validation
    assert errors.error_class(None, 418) is errors.LineageError


def test_a_refined_code_wins_over_its_bases() -> None:
    assert errors.rule_for(errors.ReleaseNotFound("x")).status == 404  # a ReleaseError, hence an Invalid
    assert errors.rule_for(lineage.releases.qc.GateError([])).status == 409


def test_a_builtin_error_is_a_bug_on_every_surface() -> None:
    """A stray KeyError or ValueError is a bug (500 over HTTP, re-raised by the SDK, a traceback in the
    CLI), not a 404 or 400: refusals raise the tree's classes."""
    assert errors.translate(KeyError("gone")) is None and errors.translate(ValueError("bad")) is None
    assert errors.translate(RuntimeError("a bug")) is None
