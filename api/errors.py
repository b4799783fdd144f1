"""Every refusal is a 4xx JSON answer ``{"detail": "...", "code": "..."}``; only bugs are 5xx.

A method a path does not take is a 405 whose ``Allow`` lists every method the path takes (Starlette
names only those of the first route that matched the path); ``OPTIONS`` is answered with that list.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request, Response
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException
from starlette.routing import Match

from lineage.errors import LineageError, rule_for, translate

log = logging.getLogger(__name__)


class ErrorOut(BaseModel):
    detail: str
    code: str | None = None  # stable and machine-readable, e.g. "release_conflict" (the table: lineage.errors)


ERROR_RESPONSES: dict[int | str, dict] = {
    400: {"model": ErrorOut, "description": "Bad request (invalid reference, parameter or body)"},
    401: {"model": ErrorOut, "description": "No token, or an invalid or revoked one"},
    403: {"model": ErrorOut, "description": "The token's role is not enough"},
    404: {"model": ErrorOut, "description": "Not found"},
    409: {"model": ErrorOut, "description": "Conflicts with what is recorded (e.g. a release with other content)"},
}


def _answer(request: Request, exc: Exception) -> JSONResponse:
    error = translate(exc)
    if error is None:
        log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
        return JSONResponse({"detail": "internal error (logged on the server)", "code": "internal"}, status_code=500)
    rule = rule_for(error)
    headers = {"WWW-Authenticate": "Bearer"} if rule.status == 401 else None
    return JSONResponse({"detail": str(error), "code": error.code}, status_code=rule.status, headers=headers)


_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")


def allowed_methods(request: Request) -> list[str]:
    """Every method some route of the app takes at this request's path."""
    routes = request.app.router.routes
    return [
        method
        for method in _METHODS
        if any(route.matches({**request.scope, "method": method})[0] is Match.FULL for route in routes)
    ]


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 405:
        allow = ", ".join([*allowed_methods(request), "OPTIONS"])
        if request.method == "OPTIONS":
            return Response(status_code=204, headers={"Allow": allow})
        exc = HTTPException(405, exc.detail, headers={**(exc.headers or {}), "Allow": allow})
    return await http_exception_handler(request, exc)


def install(app: FastAPI) -> None:
    from pydantic import ValidationError
    from sqlalchemy.exc import DataError, IntegrityError

    # The tree, the database refusals, and the builtins the legacy fallbacks of ``translate`` still classify.
    for cls in (LineageError, KeyError, ValueError, ValidationError, LookupError, DataError, IntegrityError):
        app.add_exception_handler(cls, _answer)  # type: ignore[arg-type]
    app.add_exception_handler(HTTPException, _http_error)
