"""Malformed bodies and ids get a 4xx with a message, never a 5xx; and `lineage serve` really serves."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from lineage.client import Client
from lineage.errors import ConfigError
from lineage.runs import Runner
from lineage.service.core import Service
from lineage.settings import Settings, TierConfig
from operators.schema import sample_id
from tests.support.api_world import ServerThread, World, build_corpus, spec
from tests.support.fixtures_postgres import free_port

BAD_REQUESTS = [
    ("GET", "/api/v1/datasets?limit=0", None),
    ("GET", "/api/v1/datasets?limit=abc", None),
    ("GET", "/api/v1/datasets?offset=-1", None),
    ("GET", "/api/v1/datasets?limt=5", None),  # misspelt: refused, not ignored
    ("GET", "/api/v1/datasets?owner=a%00b", None),
    ("GET", "/api/v1/runs/a%00b", None),
    ("GET", "/api/v1/datasets/bad%20name", None),
    ("GET", "/api/v1/datasets/clean/versions/0", None),
    ("GET", "/api/v1/datasets/clean/versions/x", None),
    ("GET", "/api/v1/datasets/clean/versions/99999999999999999999", None),
    ("GET", "/api/v1/runs/" + "x" * 100, None),
    ("GET", "/api/v1/diff?base=clean", None),
    ("GET", "/api/v1/diff?base=clean@&target=clean", None),
    ("GET", "/api/v1/releases/clean/v%20x", None),
    ("GET", "/api/v1/samples/%00/lineage", None),
    ("GET", "/api/v1/samples/abc/why-not", None),
    ("GET", "/api/v1/samples/abc/why-not?release=nope", None),
    ("GET", "/api/v1/sources/releases", None),
    ("GET", "/api/v1/lineage?nodeId=nothing", None),
    ("GET", "/api/v1/lineage?nodeId=dataset:a:b&depth=-1", None),
    ("POST", "/api/v1/releases", b"{"),
    ("POST", "/api/v1/releases", b'{"name": "clean"}'),
    ("POST", "/api/v1/releases", b'{"name": "../etc", "tag": "x"}'),
    ("POST", "/api/v1/releases", b'{"name": "clean", "tag": "x", "version": "one"}'),
    ("POST", "/api/v1/releases", b'{"name": "clean", "tag": "x", "surprise": 1}'),
    ("POST", "/api/v1/releases", b"[]"),
    ("POST", "/api/v1/releases/clean/v1/deprecate", b'{"reason": 5}'),
    ("PATCH", "/api/v1/datasets/clean", b'{"tags": "not-a-list"}'),
    ("PATCH", "/api/v1/datasets/clean", b"\xff\xfe"),
    ("PATCH", "/api/v1/datasets/clean", b'{"owner": "a\\u0000b"}'),
    ("POST", "/api/v1/lineage", b'{"eventTime": "2026-01-01T00:00:00Z"}'),
    ("POST", "/api/v1/tokens", b'{"name": "", "role": "god"}'),
    ("DELETE", "/api/v1/tokens/0", None),
]


def test_bad_input_is_refused_with_a_message(server: ServerThread, world: World) -> None:
    with httpx.Client(base_url=server.url) as http:
        for method, path, body in BAD_REQUESTS:
            response = http.request(method, path, content=body, headers={"content-type": "application/json"})
            assert 400 <= response.status_code < 500, (method, path, response.status_code, response.text)
            assert response.json()["detail"], (method, path)


def test_a_method_a_path_does_not_take_is_405_listing_every_method_it_takes(server: ServerThread) -> None:
    """RFC 9110: the Allow header lists the methods of the resource, not of the first route that matched."""
    with httpx.Client(base_url=server.url) as http:
        for path, allow in [
            ("/api/v1/datasets/clean", "GET, PATCH, OPTIONS"),
            ("/api/v1/releases", "GET, POST, OPTIONS"),
            ("/api/v1/releases/clean/v1/reads", "GET, POST, OPTIONS"),
            ("/api/v1/lineage", "GET, POST, OPTIONS"),
            ("/api/v1/tokens", "GET, POST, OPTIONS"),
            ("/api/v1/tokens/1", "DELETE, OPTIONS"),
        ]:
            options = http.options(path)
            assert (options.status_code, options.headers["allow"], options.content) == (204, allow, b""), path
            for method in ("PUT", "HEAD"):
                refused = http.request(method, path)
                assert (refused.status_code, refused.headers["allow"]) == (405, allow), (method, path)
        assert http.options("/api/v1/nowhere").status_code == 404


def test_rank_below_world_size_is_in_the_document_and_enforced(server: ServerThread) -> None:
    """JSON Schema cannot compare two fields: the document lists the rule in x-constraints, and a body
    that breaks it is a 422 that says why."""
    with httpx.Client(base_url=server.url) as http:
        schema = http.get("/openapi.json").json()["components"]["schemas"]["ReadCreate"]
        assert schema["x-constraints"] == ["rank < world_size"]
        assert "less than world_size" in schema["properties"]["rank"]["description"]
        for rank, world_size in [(2, 2), (5, 1)]:
            body = {"job": "train", "rank": rank, "world_size": world_size}
            refused = http.post("/api/v1/releases/clean/v1/reads", json=body)
            assert refused.status_code == 422 and "rank must be in [0, world_size)" in refused.text


@pytest.mark.timeout(120)
def test_lineage_serve_starts_uvicorn_on_loopback(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "LINEAGE_HOME": str(tmp_path / "home"), "PYTHONPATH": str(Path(__file__).parents[2])}
    env.pop("LINEAGE_CATALOG_URL", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "lineage", "serve", "--port", str(port), "--log-level", "warning"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/api/v1/health", timeout=2)
                break
            except httpx.TransportError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(
                        f"lineage serve did not start: {proc.stdout.read() if proc.stdout else ''}"
                    ) from None
                time.sleep(0.2)
        assert health.json()["auth_required"] is False and health.json()["database"] == "sqlite"
        docs = httpx.get(f"http://127.0.0.1:{port}/openapi.json").json()
        assert "/api/v1/samples/{sample_id}/lineage" in docs["paths"]
        assert httpx.get(f"http://127.0.0.1:{port}/api/v1/datasets").json()["total"] == 0
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=20)
    assert "single-user mode" in out


def test_every_answer_carries_a_request_id_and_a_refusal_names_it(server: ServerThread) -> None:
    with httpx.Client(base_url=f"{server.url}/api/v1") as http:
        missing = http.get("/datasets/nope")
        assert missing.status_code == 404 and missing.json()["code"] == "not_found"
        rid = missing.headers["x-request-id"]
        assert missing.json()["request_id"] == rid and len(rid) == 32
        assert http.get("/datasets").headers["x-request-id"] not in ("", rid)  # one per request
        given = http.get("/datasets/nope", headers={"X-Request-ID": "trace-7.a:b"})
        assert given.headers["x-request-id"] == given.json()["request_id"] == "trace-7.a:b"
        forged = http.get("/datasets/nope", headers={"X-Request-ID": "x" * 129})  # not echoed, not logged
        assert forged.headers["x-request-id"] == forged.json()["request_id"] != "x" * 129
        invalid = http.get("/datasets", params={"limit": 0})  # FastAPI's own validation: its 422 and list
        assert invalid.status_code == 422 and invalid.json()["code"] == "bad_request"
        assert invalid.json()["request_id"] == invalid.headers["x-request-id"]
        assert invalid.json()["detail"][0]["loc"] == ["query", "limit"]


@pytest.mark.parametrize("bug", [RuntimeError, KeyError, ValueError])  # KeyError was a 404, ValueError a 400
def test_a_bug_is_a_500_with_a_request_id_and_a_log_line(
    world: World, caplog: pytest.LogCaptureFixture, bug: type[Exception]
) -> None:
    """An exception no refusal class covers is the server's fault: a JSON 500 naming the request, whose id
    the log line carries; never a 4xx and never a bare text page. In-process, the SDK lets it through."""
    from api.app import create_app
    from lineage.client import Client
    from lineage.service.core import Service

    class Buggy(Service):
        def get_dataset(self, name: str) -> object:
            raise bug("a bug in get_dataset")

    buggy = Buggy(world.settings)
    with ServerThread(create_app(world.settings, buggy)) as srv, httpx.Client(base_url=f"{srv.url}/api/v1") as http:
        answer = http.get("/datasets/clean")
    assert answer.status_code == 500, answer.text
    body = answer.json()
    assert body["code"] == "internal" and "a bug" not in body["detail"]
    assert body["request_id"] == answer.headers["x-request-id"]
    logged = [r for r in caplog.records if r.name == "api.errors" and body["request_id"] in r.getMessage()]
    assert logged and logged[0].exc_info is not None and "a bug in get_dataset" in str(logged[0].exc_info[1])
    with pytest.raises(bug, match="a bug in get_dataset"):
        Client(service=buggy).get_dataset("clean")


UNSET = "LINEAGE_TEST_UNSET_ACCESS_KEY"
MISCONFIGURED = {  # how the server's settings get the tier the catalog pins ("hot") wrong
    "a credential variable is not set": (
        [TierConfig(name="hot", kind="s3", root="s3://bucket/data", credentials_env={"access_key": UNSET})],
        f"tier 'hot': environment variable {UNSET} (access_key) is not set",
    ),
    "the tier root is malformed": (
        [TierConfig(name="hot", kind="s3", root="s3://No_Such!Bucket/data")],
        "is not a valid bucket name",
    ),
    "the tier is not configured": ([], "unknown tier 'hot'"),
}


@pytest.fixture(scope="module")
def hot_world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Settings, str]:
    """A catalog whose release clean@v1 lives on the posix tier "hot"; the sample id of a kept sample."""
    tmp = tmp_path_factory.mktemp("hot-world")
    settings = Settings(
        home=tmp / "home",
        single_user=True,
        default_tier="hot",
        tiers=[TierConfig(name="hot", kind="posix", root=str(tmp / "hot"))],
    )
    service = Service(settings)
    Runner(settings, service.catalog).run(spec(build_corpus(tmp / "raw")))
    service.create_release({"name": "clean", "tag": "v1"})
    service.close()
    return settings, sample_id("raw", "id:libc6")


@pytest.mark.parametrize("case", MISCONFIGURED)
def test_a_server_tier_misconfiguration_is_a_503_config_error_not_a_500(
    hot_world: tuple[Settings, str], caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """A tier the server reads with a missing credential, a malformed root or no configuration at all is
    the server's configuration, not a bug (500) and not the client's fault (404/400): a 503 with code
    ``config`` whose message names the fix, logged for the operator; the in-process SDK raises the same
    class with the same text."""
    from api.app import create_app

    monkeypatch.delenv(UNSET, raising=False)
    built, kept = hot_world
    tiers, message = MISCONFIGURED[case]
    settings = built.model_copy(update={"tiers": [*tiers, built.tier_config("local")]})
    service = Service(settings)
    try:
        with ServerThread(create_app(settings, service)) as srv, httpx.Client(base_url=f"{srv.url}/api/v1") as http:
            answers = [http.get(f"/samples/{kept}/lineage"), http.get(f"/samples/{kept}/why-not?release=clean@v1")]
        for answer in answers:
            assert answer.status_code == 503, answer.text
            assert answer.json()["code"] == "config" and message in answer.json()["detail"]
            rid = answer.json()["request_id"]
            assert any(
                r.name == "api.errors" and rid in r.getMessage() and message in r.getMessage() for r in caplog.records
            )
        with pytest.raises(ConfigError, match=re.escape(message)):
            Client(service=service).sample_lineage(kept)
    finally:
        service.close()
