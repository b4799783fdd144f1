"""Dependencies: the service, and who is asking (bearer token or single-user mode)."""

from __future__ import annotations

import ipaddress
from typing import Annotated

from fastapi import Depends, Request
from fastapi.dependencies.models import Dependant
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from lineage.service.auth import Principal
from lineage.service.core import Service
from lineage.service.errors import BadRequest, Unauthorized

bearer = HTTPBearer(auto_error=False, description="A token from `lineage token create` (roles: reader, writer, admin)")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


_declared: dict[int, frozenset[str]] = {}


def _query_names(dependant: Dependant) -> set[str]:
    names = {p.alias for p in dependant.query_params}
    for sub in dependant.dependencies:
        names |= _query_names(sub)
    return names


def reject_unknown_query(request: Request) -> None:
    """A misspelt query parameter is refused (400), not silently ignored."""
    route = request.scope.get("route")
    dependant = getattr(route, "dependant", None)
    if dependant is None:
        return
    allowed = _declared.get(id(route))
    if allowed is None:
        allowed = _declared[id(route)] = frozenset(_query_names(dependant))
    unknown = set(request.query_params) - allowed
    if unknown:
        takes = ", ".join(sorted(allowed)) or "none"
        raise BadRequest(f"unknown query parameter(s) {sorted(unknown)!r}; this operation takes: {takes}")


def get_service(request: Request) -> Service:
    return request.app.state.service


ServiceDep = Annotated[Service, Depends(get_service)]


def current_principal(
    request: Request,
    service: ServiceDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> Principal:
    """Single-user mode (bound to loopback, no token created yet): everything is the local user.
    Otherwise every request needs a valid bearer token."""
    settings = service.settings
    if credentials is None:
        if request.headers.get("authorization"):
            raise Unauthorized("malformed Authorization header: expected 'Bearer <token>'")
        if is_loopback(settings.api_host) and not service.tokens.any_exist():
            return Principal(settings.api_local_user, "admin")
        raise Unauthorized("authentication required: send 'Authorization: Bearer <token>' (see `lineage token create`)")
    return service.tokens.authenticate(credentials.credentials)


def require(role: str):  # type: ignore[no-untyped-def]
    def check(principal: Annotated[Principal, Depends(current_principal)]) -> Principal:
        principal.require(role)
        return principal

    return check


Reader = Annotated[Principal, Depends(require("reader"))]
Writer = Annotated[Principal, Depends(require("writer"))]
Admin = Annotated[Principal, Depends(require("admin"))]
