"""Bearer tokens with roles. Only a SHA-256 of each token is stored: tokens are 256-bit random
strings, so a fast hash is enough (nothing to brute-force), and lookups stay one indexed query.

A verified token is trusted for ``api_token_cache_seconds`` (at most 1 s) before the catalog is asked
again, so a revocation made by another process (the CLI, another server) applies within that time;
a revocation made through this store empties the cache, so it applies here at once.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from lineage.catalog import ApiToken, Catalog
from lineage.catalog.models import utcnow
from lineage.service import schemas as S
from lineage.service.errors import BadRequest, Forbidden, NotFound, Unauthorized

ROLES = {"reader": 1, "writer": 2, "admin": 3}
TOKEN_PREFIX = "llt_"


@dataclass(frozen=True)
class Principal:
    """Who is asking: a token's name and role, or the local user in single-user mode."""

    name: str
    role: str
    token_id: int | None = None

    def require(self, role: str) -> None:
        if ROLES[self.role] < ROLES[role]:
            raise Forbidden(f"this needs the {role} role; token {self.name!r} has the {self.role} role")


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class TokenStore:
    def __init__(self, catalog: Catalog, cache_seconds: float) -> None:
        self.catalog = catalog
        self.cache_seconds = cache_seconds
        self._seen_any = False  # once a token exists, auth stays on (revoking all does not turn it off)
        self._verified: dict[str, tuple[float, Principal]] = {}
        self._revocations = 0  # a lookup that overlapped a revocation here is not cached
        self._lock = threading.Lock()

    def create(self, name: str, role: str, *, created_by: str = "local") -> Any:
        if role not in ROLES:
            raise BadRequest(f"unknown role {role!r}: use one of {', '.join(ROLES)}")
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        with self.catalog.session() as s:
            row = ApiToken(name=name, role=role, token_hash=hash_token(token), prefix=token[:12], created_by=created_by)
            s.add(row)
            s.flush()
            out = S.TokenCreated.model_validate({**S.TokenOut.model_validate(row).model_dump(), "token": token})
        self._seen_any = True
        return out

    def list(self) -> list[Any]:
        with self.catalog.session() as s:
            return [S.TokenOut.model_validate(t) for t in s.scalars(select(ApiToken).order_by(ApiToken.id))]

    def revoke(self, token_id: int) -> Any:
        with self.catalog.session() as s:
            row = s.get(ApiToken, token_id)
            if row is None:
                raise NotFound(f"token {token_id} does not exist")
            if row.revoked_at is None:
                row.revoked_at = utcnow()
            out = S.TokenOut.model_validate(row)
        with self._lock:
            self._revocations += 1
            self._verified.clear()
        return out

    def any_exist(self) -> bool:
        if not self._seen_any:
            with self.catalog.session() as s:
                self._seen_any = s.scalars(select(ApiToken.id).limit(1)).first() is not None
        return self._seen_any

    def authenticate(self, token: str) -> Principal:
        now = time.monotonic()
        digest = hash_token(token)
        cached = self._verified.get(digest)
        if cached is not None and cached[0] > now:
            return cached[1]
        revocations = self._revocations
        with self.catalog.session() as s:
            row = s.scalars(select(ApiToken).where(ApiToken.token_hash == digest)).first()
            if row is None:
                raise Unauthorized("invalid token")
            if row.revoked_at is not None:
                raise Unauthorized(f"token {row.prefix}… was revoked")
            principal = Principal(row.name, row.role, row.id)
        with self._lock:
            if len(self._verified) > 10_000:
                self._verified.clear()
            if revocations == self._revocations:
                self._verified[digest] = (now + self.cache_seconds, principal)
        return principal
