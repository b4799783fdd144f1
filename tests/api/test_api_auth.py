"""Auth: single-user mode (the setting on, a loopback peer, no token yet); then roles reader < writer < admin."""

from __future__ import annotations

import asyncio
import time
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
from lineage.settings import Settings, get_settings
from tests.support.api_world import BACKENDS, NetNs, ServerProcess, ServerThread, make_settings, server_env


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
            assert sdk.list_datasets().total == 0
            with pytest.raises(Forbidden):
                sdk.create_release("x@y")
        with Client(srv.url) as anonymous, pytest.raises(Unauthorized):
            anonymous.list_datasets()

        (reader_row,) = [t for t in fresh.list_tokens() if t.name == "r"]
        assert call("DELETE", f"/api/v1/tokens/{reader_row.id}", admin).status_code == 200
        revoked = call("GET", "/api/v1/releases", reader)
        assert revoked.status_code == 401 and "revoked" in revoked.json()["detail"]


def test_who_is_asking_is_checked_before_what_they_sent(fresh: Service) -> None:
    """An anonymous caller gets 401 whatever it sent (a misspelt parameter, a malformed body), and a
    reader gets 403 on a writer's operation: before any parameter or the body is looked at."""
    reader = {"Authorization": f"Bearer {fresh.create_token('r', 'reader').token}"}
    json_type = {"content-type": "application/json"}
    with ServerThread(create_app(fresh.settings, fresh)) as srv, httpx.Client(base_url=srv.url) as http:
        for method, path, body in [
            ("GET", "/api/v1/datasets?limt=5", None),
            ("GET", "/api/v1/datasets?limit=0", None),
            ("GET", "/api/v1/datasets/bad%20name", None),
            ("POST", "/api/v1/releases", b"{"),
            ("POST", "/api/v1/lineage", b'{"eventTime": 0}'),
            ("POST", "/api/v1/tokens", b'{"role": "god"}'),
            ("DELETE", "/api/v1/tokens/0", None),
        ]:
            anonymous = http.request(method, path, content=body, headers=json_type)
            assert anonymous.status_code == 401, (method, path, anonymous.text)
            assert "authentication required" in anonymous.json()["detail"]
        for method, path, body in [
            ("POST", "/api/v1/releases", b"{"),
            ("POST", "/api/v1/releases?surprise=1", b'{"name": "x", "tag": "y"}'),
            ("PATCH", "/api/v1/datasets/bad%20name", b"[]"),
            ("POST", "/api/v1/tokens", b'{"role": "god"}'),
        ]:
            denied = http.request(method, path, content=body, headers={**json_type, **reader})
            assert denied.status_code == 403, (method, path, denied.text)
        misspelt = http.get("/api/v1/datasets?limt=5", headers=reader)
        assert misspelt.status_code == 400 and "limt" in misspelt.json()["detail"]  # then the input is checked
        assert http.get("/api/v1/health?verbose=1").status_code == 400  # open operations check it too


@pytest.mark.timeout(180)
@pytest.mark.parametrize(
    "argv",
    [
        ["uvicorn", "--factory", "api.app:create_app", "--host", "0.0.0.0"],
        ["lineage", "serve", "--host", "0.0.0.0"],
    ],
    ids=["uvicorn-factory", "lineage-serve"],
)
def test_bound_to_every_interface_no_one_gets_in_without_a_token(argv: list[str], netns: NetNs, tmp_path: Path) -> None:
    """The documented uvicorn factory (and `lineage serve --host 0.0.0.0`) on a catalog with no token:
    single-user mode is off, so even a loopback peer needs a token, and /health says so."""
    env = server_env(Settings(home=tmp_path / "home"))
    with ServerProcess(env, reach=netns.address, netns=netns, argv=argv) as srv:
        local = f"http://127.0.0.1:{srv.port}/api/v1"
        status, body = netns.request("POST", f"{local}/tokens", json={"name": "me", "role": "admin"})
        assert status == 401 and "authentication required" in body["detail"], body
        assert netns.request("GET", f"{local}/datasets")[0] == 401
        assert netns.request("GET", f"{local}/health")[1]["auth_required"] is True
        with httpx.Client(base_url=f"{srv.url}/api/v1") as outside:
            assert outside.post("/tokens", json={"name": "me", "role": "admin"}).status_code == 401
            assert outside.get("/health").json()["auth_required"] is True
    assert Service(Settings(home=tmp_path / "home")).list_tokens() == []


@pytest.mark.timeout(180)
def test_single_user_setting_admits_loopback_peers_only(netns: NetNs, tmp_path: Path) -> None:
    """With the setting on, a loopback peer gets in while no token exists; a peer from another address
    does not, nor does a request that a proxy header claims comes from loopback (even where uvicorn
    is told to trust every proxy and so rewrites the peer address from the header)."""
    env = server_env(Settings(home=tmp_path / "home"), LINEAGE_SINGLE_USER="true")
    argv = ["uvicorn", "--factory", "api.app:create_app", "--host", "0.0.0.0", "--forwarded-allow-ips", "*"]
    with ServerProcess(env, reach=netns.address, netns=netns, argv=argv) as srv:
        local = f"http://127.0.0.1:{srv.port}/api/v1"
        assert netns.request("GET", f"{local}/datasets")[0] == 200
        assert netns.request("GET", f"{local}/health")[1]["auth_required"] is False
        forwarded = netns.request("GET", f"{local}/datasets", headers={"X-Forwarded-For": "198.51.100.7"})
        assert forwarded[0] == 401, forwarded
        with httpx.Client(base_url=f"{srv.url}/api/v1") as outside:
            refused = outside.post("/tokens", json={"name": "me", "role": "admin"})
            assert refused.status_code == 401 and "authentication required" in refused.json()["detail"]
            assert outside.get("/health").json()["auth_required"] is True
            for spoof in ({"X-Forwarded-For": "127.0.0.1"}, {"Forwarded": "for=127.0.0.1"}, {"X-Real-IP": "::1"}):
                assert outside.get("/datasets", headers=spoof).status_code == 401, spoof

            status, created = netns.request("POST", f"{local}/tokens", json={"name": "ci", "role": "reader"})
            assert status == 201 and created["created_by"] == "local"
            assert netns.request("GET", f"{local}/datasets")[0] == 401  # a token exists: auth is on for all
            assert netns.request("GET", f"{local}/health")[1]["auth_required"] is True
            token = {"Authorization": f"Bearer {created['token']}"}
            assert outside.get("/datasets", headers=token).status_code == 200


@pytest.mark.parametrize(
    ("setting", "peer", "headers", "admitted"),
    [
        (True, "127.0.0.1", {}, True),
        (True, "127.8.9.10", {}, True),
        (True, "::1", {}, True),
        (True, "::ffff:127.0.0.1", {}, True),  # an IPv4 peer of a dual-stack socket
        (True, "192.0.2.10", {}, False),
        (True, "::ffff:192.0.2.10", {}, False),
        (True, "192.0.2.10", {"X-Forwarded-For": "127.0.0.1"}, False),
        (True, "127.0.0.1", {"X-Forwarded-For": "192.0.2.10"}, False),
        (True, "127.0.0.1", {"Forwarded": "for=192.0.2.10"}, False),
        (True, None, {}, False),  # no peer address (e.g. a unix socket): not known to be local
        (None, "127.0.0.1", {}, False),  # unset: off under the factory
        (False, "127.0.0.1", {}, False),
    ],
)
def test_single_user_needs_the_setting_and_a_loopback_peer(
    fresh: Service, setting: bool | None, peer: str | None, headers: dict[str, str], admitted: bool
) -> None:
    """The peer decision at the ASGI level: the scope's client address, never a header."""
    settings = fresh.settings.model_copy(update={"single_user": setting})
    app = create_app(settings, Service(settings, fresh.catalog))
    transport = httpx.ASGITransport(app=app, client=(peer, 50000) if peer else None)  # type: ignore[arg-type]

    async def ask() -> tuple[int, bool]:
        async with httpx.AsyncClient(transport=transport, base_url="http://lineage") as http:
            datasets = await http.get("/api/v1/datasets", headers=headers)
            health = await http.get("/api/v1/health", headers=headers)
            return datasets.status_code, health.json()["auth_required"]

    status, auth_required = asyncio.run(ask())
    assert (status, auth_required) == ((200, False) if admitted else (401, True))


@pytest.mark.timeout(180)
def test_revoked_token_stops_at_once_here_and_within_a_second_elsewhere(fresh: Service) -> None:
    """Two server processes on one catalog, both having just accepted a token: revoked through one,
    the token is refused there at once, and by the other within a second (it was 5 s)."""
    admin = {"Authorization": f"Bearer {fresh.create_token('admin', 'admin').token}"}
    reader = fresh.create_token("trainer", "reader")
    token = {"Authorization": f"Bearer {reader.token}"}
    env = server_env(fresh.settings)
    with (
        ServerProcess(env) as here,
        ServerProcess(env) as elsewhere,
        httpx.Client(base_url=f"{here.url}/api/v1") as a,
        httpx.Client(base_url=f"{elsewhere.url}/api/v1") as b,
    ):
        assert a.get("/releases", headers=token).status_code == 200
        assert b.get("/releases", headers=token).status_code == 200  # now trusted there for a while
        assert a.delete(f"/tokens/{reader.id}", headers=admin).status_code == 200
        revoked = time.monotonic()
        refused = a.get("/releases", headers=token)
        assert refused.status_code == 401 and "revoked" in refused.json()["detail"]
        while b.get("/releases", headers=token).status_code != 401:
            assert time.monotonic() - revoked < 10, "the other process still accepts the revoked token"
            time.sleep(0.01)
        took = time.monotonic() - revoked
    assert took < 1.0, f"the other process accepted the revoked token for {took:.2f} s"


def test_cli_token_create_and_revoke(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lineage.cli.main import build_app

    app = build_app()
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
        assert bad.exit_code == 3 and "unknown role" in bad.output  # Invalid
        service.close()
    finally:
        get_settings.cache_clear()
