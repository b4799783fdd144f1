"""Dependencies: the service, and who is asking (bearer token or single-user mode).

Order of the checks on a request (:class:`CallerFirstRoute`): who is asking (401), their role
(403), unknown query parameters (400), and only then FastAPI's reading of the body and validation
of parameters (422). So an anonymous caller gets 401 whatever it sent, and learns nothing about
what an operation takes.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request, Response
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.security.utils import get_authorization_scheme_param
from starlette.concurrency import run_in_threadpool

from lineage.service.auth import ROLES, Principal
from lineage.service.core import Service
from lineage.service.errors import BadRequest, Unauthorized

bearer = HTTPBearer(auto_error=False, description="A token from `lineage token create` (roles: reader, writer, admin)")


def is_loopback(host: str | None) -> bool:
    """127.0.0.0/8, ::1 (also IPv4-mapped, as a dual-stack socket reports IPv4 peers) or ``localhost``."""
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host or "")
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def get_service(request: Request) -> Service:
    return request.app.state.service


ServiceDep = Annotated[Service, Depends(get_service)]


# Headers a proxy adds to say whom it forwards a request for. uvicorn may already have replaced the
# peer address with a forwarded one (``--forwarded-allow-ips``), so such a request never counts as local.
_FORWARDING_HEADERS = ("forwarded", "x-forwarded-for", "x-real-ip")


def from_loopback(request: Request) -> bool:
    """The request came over a loopback socket, and not through a proxy (no header is trusted for this)."""
    peer = request.client.host if request.client else None
    return is_loopback(peer) and not any(name in request.headers for name in _FORWARDING_HEADERS)


def single_user(request: Request, service: Service) -> bool:
    """Single-user mode applies to this request: the setting is on, the request came from loopback,
    and no token exists."""
    return service.settings.single_user is True and from_loopback(request) and not service.tokens.any_exist()


def authenticate(request: Request) -> Principal:
    """The bearer token's principal, or the local user in single-user mode; otherwise 401."""
    service = get_service(request)
    header = request.headers.get("authorization")
    if header is None:
        if single_user(request, service):
            return Principal(service.settings.api_local_user, "admin")
        raise Unauthorized("authentication required: send 'Authorization: Bearer <token>' (see `lineage token create`)")
    scheme, token = get_authorization_scheme_param(header)
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized("malformed Authorization header: expected 'Bearer <token>'")
    return service.tokens.authenticate(token)


def current_principal(
    request: Request, _: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
) -> Principal:
    """Who is asking, as :class:`CallerFirstRoute` found before anything else (``bearer`` declares the
    scheme in the OpenAPI document)."""
    principal = getattr(request.state, "principal", None)
    return principal if principal is not None else authenticate(request)


@dataclass(frozen=True)
class RoleCheck:
    """The dependency behind ``Reader``, ``Writer`` and ``Admin``: the role an operation needs."""

    role: str

    def __call__(self, principal: Annotated[Principal, Depends(current_principal)]) -> Principal:
        principal.require(self.role)
        return principal


Reader = Annotated[Principal, Depends(RoleCheck("reader"))]
Writer = Annotated[Principal, Depends(RoleCheck("writer"))]
Admin = Annotated[Principal, Depends(RoleCheck("admin"))]


@dataclass(frozen=True)
class _Needs:
    role: str | None  # None: the operation is open (health)
    query: frozenset[str]


def _walk(dependant: Dependant) -> Iterator[Dependant]:
    yield dependant
    for sub in dependant.dependencies:
        yield from _walk(sub)


_needs: dict[int, tuple[object, _Needs]] = {}  # by id of the matched route (kept, so its id stays its own)


def _needs_of(request: Request) -> _Needs:
    """What the matched operation needs, read once from its dependencies (those of its routers too)."""
    route = request.scope["route"]
    cached = _needs.get(id(route))
    if cached is not None and cached[0] is route:
        return cached[1]
    dependants = list(_walk(route.dependant))
    roles = [d.call.role for d in dependants if isinstance(d.call, RoleCheck)]
    needs = _Needs(
        role=max(roles, key=ROLES.__getitem__) if roles else None,
        query=frozenset(p.alias for d in dependants for p in d.query_params),
    )
    _needs[id(route)] = (route, needs)
    return needs


def check_caller(request: Request) -> None:
    """Who is asking and whether their role is enough, then unknown query parameters (refused, not
    silently ignored: a misspelt one would otherwise change nothing and go unnoticed)."""
    needs = _needs_of(request)
    if needs.role is not None:
        principal = authenticate(request)
        principal.require(needs.role)
        request.state.principal = principal
    unknown = set(request.query_params) - needs.query
    if unknown:
        takes = ", ".join(sorted(needs.query)) or "none"
        raise BadRequest(f"unknown query parameter(s) {sorted(unknown)!r}; this operation takes: {takes}")


class CallerFirstRoute(APIRoute):
    """Runs :func:`check_caller` before FastAPI reads the body or validates any parameter."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def caller_first(request: Request) -> Response:
            await run_in_threadpool(check_caller, request)  # token lookups query the catalog
            return await handler(request)

        return caller_first
