"""Every refusal is a 4xx JSON answer ``{"detail": "...", "code": "...", "request_id": "..."}`` (a failed
publish gate adds ``failures``: each condition with its measured value and limit). A 5xx is the server's
fault, logged with the request id: its configuration (a tier, a credential: 503, code ``config``) or its
stored data (``corrupt``) keeps its message; a bug is answered ``{"code": "internal"}``.

Every response carries ``X-Request-ID``: the caller's, if it sent a well-formed one, else a fresh one.

A method a path does not take is a 405 whose ``Allow`` lists every method the path takes (Starlette
names only those of the first route that matched the path); ``OPTIONS`` is answered with that list.
"""

from __future__ import annotations

import logging
import re
import uuid
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from sqlalchemy.exc import DataError, IntegrityError
from starlette.exceptions import HTTPException
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lineage.errors import GateFailed, Invalid, LineageError, rule_for, translate
from lineage.service.schemas import GateResult

log = logging.getLogger(__name__)


class ErrorOut(BaseModel):
    detail: str
    code: str | None = None  # stable and machine-readable, e.g. "release_conflict" (the table: lineage.errors)
    request_id: str | None = None  # as in the X-Request-ID header and the server's log
    failures: list[GateResult] | None = Field(
        default=None, description="With code gate_failed: each failed condition, its measured value and limit."
    )


ERROR_RESPONSES: dict[int | str, dict] = {
    400: {"model": ErrorOut, "description": "Bad request (invalid reference, parameter or body)"},
    401: {"model": ErrorOut, "description": "No token, or an invalid or revoked one"},
    403: {"model": ErrorOut, "description": "The token's role is not enough"},
    404: {"model": ErrorOut, "description": "Not found"},
    409: {
        "model": ErrorOut,
        "description": "Conflicts with what is recorded (e.g. a release with other content), or the publish "
        "gate failed (code gate_failed, with failures)",
    },
}


REQUEST_ID = "x-request-id"
_WELL_FORMED_ID = re.compile(rb"^[A-Za-z0-9._:-]{1,128}$")  # safe to echo and to log
INTERNAL = "internal error (logged on the server)"


class RequestId:
    """Pure ASGI middleware (no per-request task, unlike ``BaseHTTPMiddleware``): gives each request an
    id, sends it back as ``X-Request-ID``, and answers a bug that escaped every handler with a JSON 500
    that carries the id, logged with it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers", ())).get(REQUEST_ID.encode())
        rid = given.decode() if given and _WELL_FORMED_ID.match(given) else uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = rid
        started = False

        async def send_with_id(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                message["headers"] = [*message.get("headers", ()), (REQUEST_ID.encode(), rid.encode())]
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception:
            if started:  # too late for an error answer: the client sees a cut response
                raise
            log.exception("unhandled error on %s %s (request %s)", scope.get("method"), scope.get("path"), rid)
            body = {"detail": INTERNAL, "code": "internal", "request_id": rid}
            await JSONResponse(body, status_code=500)(scope, receive, send_with_id)


def request_id(request: Request) -> str | None:
    return getattr(request.state, "request_id", None)


def _answer(request: Request, exc: Exception) -> JSONResponse:
    rid = request_id(request)
    error = translate(exc)
    if error is None:
        log.exception("unhandled error on %s %s (request %s)", request.method, request.url.path, rid, exc_info=exc)
        return JSONResponse({"detail": INTERNAL, "code": "internal", "request_id": rid}, status_code=500)
    rule = rule_for(error)
    if rule.status >= 500:  # a refusal that is the server's fault (its configuration, its data): the operator's to fix
        log.error("%s on %s %s (request %s): %s", error.code, request.method, request.url.path, rid, error)
    headers = {"WWW-Authenticate": "Bearer"} if rule.status == 401 else None
    body: dict[str, Any] = {"detail": str(error), "code": error.code, "request_id": rid}
    if isinstance(error, GateFailed):
        body["failures"] = jsonable_encoder(error.failures)
    return JSONResponse(body, status_code=rule.status, headers=headers)


async def _invalid_request(request: Request, exc: Exception) -> JSONResponse:
    """FastAPI's own validation of paths, queries and bodies: its 422 and its list of errors, plus the
    code every refusal carries and the request id."""
    assert isinstance(exc, RequestValidationError)
    body = {"detail": jsonable_encoder(exc.errors()), "code": Invalid.code, "request_id": request_id(request)}
    return JSONResponse(body, status_code=422)


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
    # The tree and the database refusals; any other exception is a bug, answered by ``RequestId``.
    for cls in (LineageError, DataError, IntegrityError):
        app.add_exception_handler(cls, _answer)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_middleware(RequestId)
