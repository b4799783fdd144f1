"""The publish gate on every surface: the same conditions, the same refusal (code ``gate_failed`` and the
same list of failed conditions with measured values and limits), the same override record (who, when,
why), whether the release is created through the gate or published from a draft.

Each surface is an adapter in ``SURFACES``: raw HTTP against a real uvicorn server, the SDK over HTTP,
the SDK in-process, and the ``lineage`` command in a subprocess over the same catalog (``--json``: the
HTTP API's bodies). On SQLite and PostgreSQL (``world``).
"""

from __future__ import annotations

import getpass
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from lineage import errors
from lineage.client import Client
from operators.schema import sample_id
from tests.support.api_world import CURL, ServerThread, World
from tests.support.helpers import write_jsonl

GATE = {"min_samples": 100, "max_drop_rate_per_source": 0.0, "required_rule_sets": ["quality_c4"]}
# clean v2 (``world``): 6 input rows, 4 kept; the exact duplicate and the short text dropped (2 of 6)
FAILED = [
    {"condition": "min_samples", "measured": 4, "limit": 100, "passed": False},
    {"condition": "max_drop_rate_per_source[raw]", "measured": round(2 / 6, 6), "limit": 0.0, "passed": False},
    {"condition": "required_rule_set[quality_c4]", "measured": "not applied", "limit": "applied", "passed": False},
]
REVIEWER = "reviewer"  # the writer token's name: who an override over HTTP is recorded as


@dataclass
class Outcome:
    """What a surface answered: a refusal (its code, message and failures) or the release it shows."""

    code: str | None = None
    detail: str = ""
    failures: list[dict[str, Any]] | None = None
    release: dict[str, Any] | None = None


@dataclass
class Ctx:
    world: World
    server: ServerThread
    token: str

    def sdk(self, over_http: bool) -> Client:
        return Client(self.server.url, token=self.token) if over_http else Client(service=self.world.service)


Surface = Callable[[Ctx, str, str, dict[str, Any]], Outcome]  # (ctx, "create" | "publish", ref, body)


def via_http(ctx: Ctx, verb: str, ref: str, body: dict[str, Any]) -> Outcome:
    name, tag = ref.split("@")
    path = "/releases" if verb == "create" else f"/releases/{name}/{tag}/publish"
    body = {"name": name, "tag": tag, **body} if verb == "create" else body
    headers = {"Authorization": f"Bearer {ctx.token}"}
    answer = httpx.post(f"{ctx.server.url}/api/v1{path}", json=body, headers=headers, timeout=60)
    if answer.status_code == 409:
        refusal = answer.json()
        return Outcome(refusal["code"], refusal["detail"], refusal.get("failures"))
    assert answer.status_code in (200, 201), answer.text
    shown = httpx.get(f"{ctx.server.url}/api/v1/releases/{name}/{tag}", headers=headers, timeout=60)
    assert answer.json()["release"] == shown.json()
    return Outcome(release=shown.json())


def via_sdk(over_http: bool) -> Surface:
    def call(ctx: Ctx, verb: str, ref: str, body: dict[str, Any]) -> Outcome:
        with ctx.sdk(over_http) as client:
            try:
                if verb == "create":
                    client.create_release(ref, **body)
                else:
                    client.publish_release(ref, **body)
            except errors.GateFailed as exc:
                return Outcome(exc.code, str(exc), exc.failures)
            return Outcome(release=client.get_release(ref).model_dump(mode="json"))

    return call


def via_cli(ctx: Ctx, verb: str, ref: str, body: dict[str, Any]) -> Outcome:
    """``lineage release publish REF --gate FILE --override REASON --json`` (a recorded draft is published)."""
    settings = ctx.world.settings
    env = {**os.environ, "LINEAGE_HOME": str(settings.home), "LINEAGE_CATALOG_URL": settings.catalog_url or ""}
    env.pop("LINEAGE_CONFIG", None)

    def lineage(*args: str) -> subprocess.CompletedProcess[str]:
        root = Path(__file__).resolve().parents[2]
        return subprocess.run(
            [sys.executable, "-m", "lineage", *args], cwd=root, env=env, capture_output=True, text=True
        )

    args = ["release", "publish", ref, "--json"]
    if "gate" in body:
        config = settings.home / f"gate-{ref.replace('@', '-')}.toml"
        config.write_text("[gate]\n" + "".join(f"{k} = {_toml(v)}\n" for k, v in body["gate"].items()))
        args += ["--gate", str(config)]
    if "override_reason" in body:
        args += ["--override", body["override_reason"]]
    published = lineage(*args)
    if published.returncode == errors.BY_CODE["gate_failed"].exit_code:
        refusal = json.loads(published.stdout)
        assert "Traceback" not in published.stderr and "publish gate failed:" in published.stderr
        return Outcome(refusal["code"], refusal["detail"], refusal.get("failures"))
    assert published.returncode == 0, published.stderr
    shown = lineage("release", "show", ref, "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(published.stdout)["release"] == json.loads(shown.stdout)
    return Outcome(release=json.loads(shown.stdout))


def _toml(value: Any) -> str:
    """A gate value as TOML: JSON's scalars and arrays are TOML's; a table is written inline."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


SURFACES: dict[str, Surface] = {
    "http": via_http,
    "sdk-http": via_sdk(over_http=True),
    "sdk-local": via_sdk(over_http=False),
    "cli": via_cli,
}
ACTOR = {"http": REVIEWER, "sdk-http": REVIEWER, "sdk-local": "local", "cli": getpass.getuser()}


@pytest.fixture(scope="module")
def token(world: World) -> str:
    """A writer token: from now on this module's server needs it (single-user mode ends)."""
    return world.service.create_token(REVIEWER, "writer").token


@pytest.fixture
def ctx(world: World, server: ServerThread, token: str) -> Iterator[Ctx]:
    yield Ctx(world, server, token)


def _draft(ctx: Ctx, ref: str, gate: dict[str, Any] | None = None) -> None:
    name, tag = ref.split("@")
    body = {"name": name, "tag": tag, "draft": True, **({"gate": gate} if gate else {})}
    assert ctx.world.service.create_release(body).release.state == "draft"


@pytest.mark.parametrize("path", ["create", "publish_draft"])
@pytest.mark.parametrize("surface", SURFACES)
def test_a_failing_gate_is_refused_with_the_same_failed_conditions(ctx: Ctx, surface: str, path: str) -> None:
    ref = f"clean@gate-{surface}-{path}"
    if path == "publish_draft":
        _draft(ctx, ref)
    outcome = SURFACES[surface](ctx, "create" if path == "create" else "publish", ref, {"gate": GATE})
    assert (outcome.code, outcome.failures) == ("gate_failed", FAILED)
    assert outcome.detail.splitlines() == [
        "publish gate failed:",
        "  min_samples: measured 4 (limit 100)",
        "  max_drop_rate_per_source[raw]: measured 0.333333 (limit 0.0)",
        "  required_rule_set[quality_c4]: measured not applied (limit applied)",
    ]
    service = ctx.world.service
    if path == "create":  # nothing recorded
        with pytest.raises(errors.ReleaseNotFound):
            service.get_release(ref)
    else:  # still a draft
        assert service.get_release(ref).state == "draft"


@pytest.mark.parametrize("surface", SURFACES)
def test_an_override_is_recorded_with_who_when_and_why(ctx: Ctx, surface: str) -> None:
    ref = f"clean@override-{surface}"
    before = datetime.now(UTC)
    outcome = SURFACES[surface](ctx, "create", ref, {"gate": GATE, "override_reason": "small test corpus, reviewed"})
    after = datetime.now(UTC)
    assert outcome.code is None and outcome.release is not None
    gate = outcome.release["gate"]
    assert gate["conditions"] == {
        **GATE,
        "max_exact_duplicate_rate": None,
        "check_evalsets": None,
        "check_engine": "local",  # where the publish-time contamination check ran (the same report on each)
        "max_contaminated_items": {},
    }
    assert [r for r in gate["results"] if not r["passed"]] == FAILED
    override = gate["override"]
    assert (override["by"], override["reason"]) == (ACTOR[surface], "small test corpus, reviewed")
    assert before <= datetime.fromisoformat(override["at"]) <= after
    shown = ctx.world.service.get_release(ref)  # what every release show reads
    assert shown.state == "published" and shown.created_by == ACTOR[surface]
    assert shown.gate is not None and shown.gate.override is not None and shown.gate.override.by == ACTOR[surface]


@pytest.mark.parametrize("surface", SURFACES)
def test_a_draft_is_published_through_its_recorded_gate(ctx: Ctx, surface: str) -> None:
    """A draft records its gate's results without enforcing them; publishing it (with no gate given)
    applies the recorded conditions, and an override is recorded then, by whoever publishes."""
    ref = f"clean@draft-gate-{surface}"
    _draft(ctx, ref, GATE)
    draft = ctx.world.service.get_release(ref)
    assert draft.gate is not None and draft.gate.override is None
    assert [r.model_dump() for r in draft.gate.results if not r.passed] == FAILED
    refused = SURFACES[surface](ctx, "publish", ref, {})
    assert (refused.code, refused.failures) == ("gate_failed", FAILED)
    published = SURFACES[surface](ctx, "publish", ref, {"override_reason": "reviewed"})
    assert published.release is not None and published.release["state"] == "published"
    assert published.release["gate"]["override"]["by"] == ACTOR[surface]


def test_a_passing_gate_publishes_and_records_its_results(ctx: Ctx) -> None:
    with ctx.sdk(over_http=True) as client:
        result = client.create_release("clean@gate-ok", gate={"min_samples": 1})
    assert result.changed and result.release.gate is not None
    assert [r.model_dump() for r in result.release.gate.results] == [
        {"condition": "min_samples", "measured": 4, "limit": 1, "passed": True}
    ]
    assert result.release.gate.override is None


@pytest.fixture(scope="module")
def bench(world: World) -> str:
    """An eval set of two items: the world's curl text (in clean v2, as sample ``raw/id:curl``) and a
    sentence in no sample."""
    items = [
        {"id": "e1", "text": CURL},
        {"id": "e2", "text": "a benchmark question that no sample of the corpus holds"},
    ]
    path = write_jsonl(world.settings.home.parent / "bench.jsonl", items)
    return world.service.register_evalset("bench", str(path), id_field="id").evalset.ref


@pytest.mark.parametrize("surface", SURFACES)
def test_contaminated_items_are_a_gate_condition(ctx: Ctx, bench: str, surface: str) -> None:
    """``max_contaminated_items = {"bench:v1" = 0}`` refuses a release holding one of its items, on every
    surface, and the contamination report is in the manifest of the release published with limit 1."""
    ref = f"clean@contaminated-{surface}"
    condition = f"max_contaminated_items[{bench}]"
    refused = SURFACES[surface](ctx, "create", ref, {"gate": {"max_contaminated_items": {bench: 0}}})
    assert (refused.code, refused.failures) == (
        "gate_failed",
        [{"condition": condition, "measured": 1, "limit": 0, "passed": False}],
    )
    published = SURFACES[surface](ctx, "create", ref, {"gate": {"max_contaminated_items": {bench: 1}}})
    assert published.release is not None
    assert published.release["gate"]["results"] == [{"condition": condition, "measured": 1, "limit": 1, "passed": True}]
    report = ctx.world.service.get_manifest(ref).contamination
    assert report is not None and report.checked_samples == 4
    found = report.evalsets[bench]
    assert (found.items, found.contaminated_items, found.share, found.samples) == (2, 1, 0.5, 1)
    assert found.item_samples == {sample_id("bench", "id:e1"): [sample_id("raw", "id:curl")]}


def test_an_unchecked_eval_set_fails_its_condition(ctx: Ctx, bench: str) -> None:
    with pytest.raises(errors.Invalid, match="max_contaminated_items"):
        ctx.world.service.create_release(
            {"name": "clean", "tag": "x", "gate": {"max_contaminated_items": {"bench": 0}}}
        )
    with pytest.raises(errors.NotFound):
        ctx.world.service.create_release(
            {"name": "clean", "tag": "y", "gate": {"max_contaminated_items": {"nope:v1": 0}}}
        )
