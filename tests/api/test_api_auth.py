"""Auth: single-user mode on loopback until a token exists; then roles reader < writer < admin."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from api.app import create_app
from lineage.catalog import ApiToken
from lineage.client import Client, Forbidden, Unauthorized
from lineage.service.auth import hash_token
from lineage.service.core import Service
from lineage.settings import get_settings
from tests.api.conftest import BACKENDS, ServerThread, make_settings


@pytest.fixture(params=BACKENDS)
def fresh(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Service]:
    service = Service(make_settings(tmp_path, request.param, request))
    yield service
    service.close()


def test_single_user_mode_until_a_token_exists(fresh: Service) -> None:
    with ServerThread(create_app(fresh.settings, fresh)) as srv, httpx.Client(base_url=srv.url) as http:
        assert http.get("/api/v1/health").json()["auth_required"] is False
        assert http.get("/api/v1/datasets").status_code == 200
        created = http.post("/api/v1/tokens", json={"name": "ci", "role": "writer"})
        assert created.status_code == 201, created.text
        token = created.json()["token"]
        assert token.startswith("llt_") and created.json()["created_by"] == "local"

        refused = http.get("/api/v1/datasets")
        assert refused.status_code == 401 and "Bearer" in refused.json()["detail"]
        assert refused.headers["www-authenticate"] == "Bearer"
        bad = http.get("/api/v1/datasets", headers={"Authorization": "Bearer llt_not-a-token"})
        assert bad.status_code == 401 and bad.json()["detail"] == "invalid token"
        malformed = http.get("/api/v1/datasets", headers={"Authorization": "Basic abc"})
        assert malformed.status_code == 401 and "malformed" in malformed.json()["detail"]
        auth = {"Authorization": f"Bearer {token}"}
        assert http.get("/api/v1/datasets", headers=auth).status_code == 200
        assert http.get("/api/v1/health").json()["auth_required"] is True

    with fresh.catalog.session() as s:  # stored hashed, never in clear
        (row,) = s.scalars(select(ApiToken)).all()
        assert row.token_hash == hash_token(token) and token not in (row.token_hash, row.prefix, row.name)


def test_roles_reader_writer_admin(fresh: Service) -> None:
    reader = fresh.create_token("r", "reader").token
    writer = fresh.create_token("w", "writer").token
    admin = fresh.create_token("a", "admin").token
    with ServerThread(create_app(fresh.settings, fresh)) as srv, httpx.Client(base_url=srv.url) as http:

        def call(method: str, path: str, token: str | None, **kw: object) -> httpx.Response:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            return http.request(method, path, headers=headers, **kw)  # type: ignore[arg-type]

        event = {
            "eventType": "COMPLETE",
            "eventTime": "2026-01-01T00:00:00Z",
            "run": {"runId": "3f5e83fa-3480-44ff-99c5-ff943904e5e8"},
            "job": {"namespace": "ns", "name": "job"},
            "outputs": [{"namespace": "ns", "name": "out"}],
        }
        assert call("GET", "/api/v1/releases", reader).status_code == 200
        denied = call("POST", "/api/v1/lineage", reader, json=event)
        assert denied.status_code == 403 and "writer role" in denied.json()["detail"]
        assert call("POST", "/api/v1/lineage", writer, json=event).status_code == 201
        no_admin = call("POST", "/api/v1/tokens", writer, json={"name": "x"})
        assert no_admin.status_code == 403 and "admin role" in no_admin.json()["detail"]
        assert call("GET", "/api/v1/tokens", admin).status_code == 200
        assert call("POST", "/api/v1/lineage", None, json=event).status_code == 401

        with Client(srv.url, reader) as sdk:
            assert sdk.datasets().total == 0
            with pytest.raises(Forbidden):
                sdk.create_release("x@y")
        with Client(srv.url) as anonymous, pytest.raises(Unauthorized):
            anonymous.datasets()

        (reader_row,) = [t for t in fresh.list_tokens() if t.name == "r"]
        assert call("DELETE", f"/api/v1/tokens/{reader_row.id}", admin).status_code == 200
        revoked = call("GET", "/api/v1/releases", reader)
        assert revoked.status_code == 401 and "revoked" in revoked.json()["detail"]


def test_not_on_loopback_every_request_needs_a_token(fresh: Service) -> None:
    """Bound to another address, even with no token created, nothing is served without one."""
    exposed = fresh.settings.model_copy(update={"api_host": "0.0.0.0"})
    service = Service(exposed, fresh.catalog)
    with ServerThread(create_app(exposed, service)) as srv, httpx.Client(base_url=srv.url) as http:
        refused = http.get("/api/v1/datasets")
        assert refused.status_code == 401 and "authentication required" in refused.json()["detail"]
        assert http.post("/api/v1/tokens", json={"name": "me"}).status_code == 401
        assert http.get("/api/v1/health").status_code == 200  # health is open: it says auth is needed


def test_cli_token_create_and_revoke(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lineage.cli import app

    monkeypatch.setenv("LINEAGE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("LINEAGE_CATALOG_URL", raising=False)
    get_settings.cache_clear()
    try:
        runner = CliRunner()
        result = runner.invoke(app, ["token", "create", "trainer", "--role", "writer"])
        assert result.exit_code == 0, result.output
        token = next(line for line in result.output.splitlines() if line.startswith("llt_"))
        service = Service(get_settings())
        assert service.tokens.authenticate(token).role == "writer"
        listed = runner.invoke(app, ["token", "list"])
        assert "trainer" in listed.output and token not in listed.output
        assert runner.invoke(app, ["token", "revoke", "1"]).exit_code == 0
        with pytest.raises(Unauthorized, match="revoked"):
            Service(get_settings()).tokens.authenticate(token)
        bad = runner.invoke(app, ["token", "create", "x", "--role", "root"])
        assert bad.exit_code == 1 and "unknown role" in bad.output
        service.close()
    finally:
        get_settings.cache_clear()
