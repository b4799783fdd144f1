"""Pins, placement plans and the quality report through the service: over real HTTP (SQLite and
PostgreSQL, ``world``) and through the SDK, over HTTP and in-process, with the same answers and refusals.

The operations that move tier data (tier copy, move, verify, apply, run, export, gc) are the SDK's
in-process methods only: over HTTP the SDK refuses them before sending anything.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from lineage import errors
from lineage.client import Client
from lineage.service import schemas as S
from lineage.settings import PlacementPolicy
from tests.support.api_world import ServerThread, World

WRITER = "pinner"  # the writer token's name: who a pin over HTTP is recorded as


@pytest.fixture(scope="module")
def tokens(world: World) -> dict[str, str]:
    """A writer and a reader token: from now on this module's server needs one (single-user mode ends)."""
    service = world.service
    return {"writer": service.create_token(WRITER, "writer").token, "reader": service.create_token("r", "reader").token}


@pytest.fixture(params=["http", "local"])
def sdk(request: pytest.FixtureRequest, world: World, tokens: dict[str, str]) -> Iterator[Client]:
    if request.param == "http":
        srv: ServerThread = request.getfixturevalue("server")
        with Client(srv.url, token=tokens["writer"]) as client:
            yield client
    else:
        yield Client(service=world.service)


def _actor(client: Client) -> str:
    return "local" if client.local else WRITER


def _release(world: World, tag: str) -> str:
    world.service.create_release({"name": "clean", "tag": tag})
    return f"clean@{tag}"


def test_a_pin_is_recorded_with_who_until_when_and_why_and_listed(world: World, sdk: Client) -> None:
    ref = _release(world, f"pin-{'local' if sdk.local else 'http'}")
    until = datetime.now(UTC).replace(microsecond=0) + timedelta(days=2)
    pin = sdk.pin_release(ref, until, reason="training job 42")
    assert (pin.release, pin.until, pin.reason, pin.pinned_by, pin.active) == (
        ref,
        until,
        "training job 42",
        _actor(sdk),
        True,
    )
    assert sdk.list_pins(ref) == [pin]
    assert world.service.list_pins(ref) == [pin]  # what every surface reads


def test_a_pin_that_is_not_in_the_future_is_refused_and_nothing_is_recorded(world: World, sdk: Client) -> None:
    ref = _release(world, f"past-pin-{'local' if sdk.local else 'http'}")
    with pytest.raises(errors.Invalid, match="in the past"):
        sdk.pin_release(ref, datetime.now(UTC) - timedelta(minutes=5))
    with pytest.raises(errors.ReleaseNotFound):
        sdk.pin_release("clean@no-such-tag", datetime.now(UTC) + timedelta(days=1))
    assert sdk.list_pins(ref) == []


def test_pins_over_http_check_the_role_and_refuse_bad_bodies_with_a_code(
    world: World, server: ServerThread, tokens: dict[str, str]
) -> None:
    ref = _release(world, "pin-raw")
    url = f"{server.url}/api/v1/releases/clean/pin-raw/pins"
    as_writer = {"Authorization": f"Bearer {tokens['writer']}"}
    as_reader = {"Authorization": f"Bearer {tokens['reader']}"}
    future = (datetime.now(UTC) + timedelta(days=1)).isoformat()

    refused = httpx.post(url, json={"until": future}, headers=as_reader, timeout=30)
    assert (refused.status_code, refused.json()["code"]) == (403, "forbidden")
    for body, status, code in [
        ({"until": "next tuesday"}, 422, "bad_request"),
        ({"until": future, "colour": "red"}, 422, "bad_request"),
        ({"until": "2001-01-01T00:00:00Z"}, 400, "bad_request"),
    ]:
        answer = httpx.post(url, json=body, headers=as_writer, timeout=30)
        assert (answer.status_code, answer.json()["code"]) == (status, code), answer.text
    missing = httpx.post(f"{server.url}/api/v1/releases/clean/nope/pins", json={"until": future}, headers=as_writer)
    assert (missing.status_code, missing.json()["code"]) == (404, "release_not_found")

    made = httpx.post(url, json={"until": future}, headers=as_writer, timeout=30)
    assert made.status_code == 201 and made.json()["pinned_by"] == WRITER
    listed = httpx.get(url, headers=as_reader, timeout=30)  # the reader role is enough to read them
    assert listed.status_code == 200 and [p["id"] for p in listed.json()] == [made.json()["id"]]
    assert world.service.list_pins(ref) == [S.PinOut.model_validate(made.json())]


def test_the_placement_plan_keeps_pinned_releases_hot_and_sends_idle_and_deprecated_ones_cold(
    world: World, sdk: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    surface = "local" if sdk.local else "http"
    monkeypatch.setattr(world.settings, "placement", PlacementPolicy(cold_tier="archive", cold_after_days=0))
    idle, pinned, old = (_release(world, f"{kind}-{surface}") for kind in ("idle", "pinned", "old"))
    sdk.pin_release(pinned, datetime.now(UTC) + timedelta(days=1))
    sdk.deprecate_release(old, "superseded")
    moves = {m.release: m for m in sdk.plan_placement()}
    assert moves[idle] == S.PlannedMove(
        release=idle, from_tier="local", to_tier="archive", reason="unused for 0 days (> 0)"
    )
    assert moves[old] == S.PlannedMove(release=old, from_tier="local", to_tier="archive", reason="deprecated")
    assert pinned not in moves
    assert sdk.plan_placement() == world.service.plan_placement()


def test_the_quality_answer_holds_the_qc_report_and_the_gate(world: World, sdk: Client) -> None:
    ref = f"clean@gated-{'local' if sdk.local else 'http'}"
    world.service.create_release(
        {"name": "clean", "tag": ref.split("@")[1], "gate": {"min_samples": 100}, "override_reason": "reviewed"}
    )
    quality = sdk.get_quality(ref)
    manifest = sdk.get_manifest(ref)
    assert quality.report is not None and quality.report == manifest.qc and quality.report.samples == 4
    assert (quality.steps, quality.quarantine) == (manifest.quality.steps, manifest.quality.quarantine)
    assert quality.gate is not None and quality.gate.override is not None
    assert quality.gate.override.reason == "reviewed"
    assert [(r.condition, r.measured, r.passed) for r in quality.gate.results] == [("min_samples", 4, False)]


def test_over_http_the_sdk_refuses_operations_on_tier_data(server: ServerThread, tokens: dict[str, str]) -> None:
    with Client(server.url, token=tokens["writer"]) as client:
        for call in (
            lambda: client.copy_release("clean@v1", "archive"),
            lambda: client.verify_release("clean@v1", "local"),
            lambda: client.collect_garbage(dry_run=True),
            lambda: client.apply_placement(),
        ):
            with pytest.raises(errors.Invalid, match="runs in-process only"):
                call()
