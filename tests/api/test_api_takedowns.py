"""Takedown requests and plans through the SDK, over a real uvicorn server and in-process, on SQLite and
PostgreSQL: every form of request, answered from the sample columns, with the files, replicas, readers and
downstream versions of each release that holds the samples, and nothing changed by planning."""

from __future__ import annotations

import pytest

from lineage import errors
from lineage.client import Client
from tests.support.api_world import World


@pytest.fixture(scope="module", autouse=True)
def mixed(world: World) -> str:
    """mix v1, built from clean v1 through a dataset input, released as mix@v1 (a downstream version)."""
    spec = {
        "name": "mix",
        "inputs": [{"dataset": "clean", "version": 1}],
        "operators": [],
        "output": {"dataset": "mix"},
    }
    world.service.run_pipeline(spec)
    world.service.create_release({"name": "mix", "tag": "v1"})
    world.service.record_read("clean@v1", {"job": "pretrain-7", "world_size": 2, "rank": 1})
    return "mix@v1"


def _plan(client: Client, selector: dict) -> dict[str, object]:
    request = client.create_takedown(selector, kind="opt_out", reason="the author asked")
    plan = client.plan_takedown(request.id)
    assert plan.request == request and plan.releases_checked == 3  # clean@v1, clean@v2, mix@v1
    return {r.release: r for r in plan.releases} | {"_plan": plan}


def test_a_source_glob_finds_the_releases_files_replicas_readers_and_downstream(client: Client, world: World) -> None:
    found = _plan(client, {"source": {"dataset": "raw", "path": "sub/*"}})
    plan = found.pop("_plan")
    assert sorted(found) == ["clean@v1", "clean@v2", "mix@v1"]  # curl (sub/b.jsonl) is in all three
    v1 = found["clean@v1"]
    assert (v1.samples, v1.state, v1.dataset, v1.version) == (1, "published", "clean", 1)
    manifest = {f.path: f for f in client.get_manifest("clean@v1").files}
    (only,) = v1.files
    assert only.path in manifest and (only.rows, only.bytes, only.affected) == (
        manifest[only.path].rows,
        manifest[only.path].size,
        1,
    )
    assert [(r.tier, r.state, r.primary) for r in v1.replicas] == [("local", "verified", True)]
    assert [(j.job, j.ranks, j.world_size) for j in v1.jobs] == [("pretrain-7", 1, 2)]
    assert found["clean@v2"].jobs == []
    assert [(d.dataset, d.version, d.built_from) for d in plan.downstream] == [("mix", 1, "clean:v1")]
    assert plan.read_text is False


def test_every_form_of_request(client: Client, world: World) -> None:
    by_id = _plan(client, {"sample_ids": [world.kept]})
    assert {k for k in by_id if k != "_plan"} == {"clean@v1", "clean@v2", "mix@v1"}
    assert by_id["clean@v2"].sample_ids == [world.kept]
    content_hash = client.sample_lineage(world.kept).sample["content_hash"]
    assert by_id["clean@v1"].files == _plan(client, {"content_hashes": [content_hash]})["clean@v1"].files
    added_uri = client.sample_lineage(world.added).source.uri
    assert {k for k in _plan(client, {"source": {"dataset": "raw", "uri": added_uri}}) if k != "_plan"} == {"clean@v2"}
    folder = added_uri.rsplit("/", 1)[0] + "/"
    assert _plan(client, {"source": {"dataset": "raw", "uri": folder}})["clean@v2"].samples == 4  # the whole corpus
    lang = _plan(client, {"where": {"field": "meta.lang", "op": "eq", "value": "en"}})
    assert lang["clean@v1"].sample_ids == [world.kept] and lang["_plan"].read_text is True
    many = _plan(client, {"where": {"field": "meta.lang", "op": "in", "value": ["fr", "en"]}})
    assert many["clean@v1"].samples == 1
    regex = _plan(client, {"where": {"field": "source_path", "op": "regex", "value": "c\\.json.*"}})
    assert {k for k in regex if k != "_plan"} == {"clean@v2"}
    nothing = _plan(client, {"source": {"dataset": "elsewhere"}})
    assert nothing["_plan"].releases == [] and nothing["_plan"].downstream == []


def test_planning_changes_nothing_and_requests_are_recorded(client: Client, world: World) -> None:
    before = [(r.ref, r.state, r.content_digest) for r in client.iter_all(client.list_releases)]
    request = client.create_takedown({"sample_ids": [world.kept]}, kind="privacy", reason="a phone number")
    client.plan_takedown(request.id, sample_limit=0)
    assert [(r.ref, r.state, r.content_digest) for r in client.iter_all(client.list_releases)] == before
    got = client.get_takedown(request.id)
    assert (got.state, got.kind, got.requested_by, got.selector.sample_ids) == (
        "planned",
        "privacy",
        "local",
        [world.kept],
    )
    assert request.id in {r.id for r in client.iter_all(client.list_takedowns, state="planned")}
    assert client.list_takedowns(state="purged").total == 0
    assert client.plan_takedown(request.id, sample_limit=0).releases[0].sample_ids == []


@pytest.mark.parametrize(
    "selector",
    [
        {},
        {"sample_ids": ["a"], "content_hashes": ["0" * 32]},
        {"source": {"dataset": "raw", "glob": "*"}},
        {"where": {"field": "text", "value": "x"}},  # never the text
        {"where": {"field": "meta.url", "op": "in", "value": "x"}},
        {"content_hashes": ["not-a-hash"]},
        {"where": {"field": "meta.url", "op": "regex", "value": "(unclosed"}},  # refused when recorded
    ],
)
def test_a_request_that_names_nothing_clearly_is_refused(client: Client, selector: dict) -> None:
    with pytest.raises(errors.Invalid):
        client.create_takedown(selector, kind="opt_out", reason="x")


def test_unknown_requests_and_kinds_are_refused(client: Client) -> None:
    with pytest.raises(errors.NotFound):
        client.plan_takedown(10**9)
    with pytest.raises(errors.Invalid if not client.local else errors.NotFound):  # past the id column's range
        client.get_takedown(2**62)
    with pytest.raises(errors.Invalid):
        client.create_takedown({"sample_ids": ["a"]}, kind="because", reason="x")
    with pytest.raises(errors.Invalid):
        client.create_takedown({"sample_ids": ["a"]}, kind="other", reason="")


def test_a_state_filter_takes_every_state_its_column_holds_and_refuses_any_other(client: Client) -> None:
    """Listing withdrawn releases was a 422 over HTTP (the parameter left ``withdrawn`` out), and a misspelt
    state answered an empty list through the SDK and the CLI, as if there were none."""
    assert client.list_releases(state="withdrawn").total == 0  # none yet in this world
    assert {r.ref for r in client.list_releases(state="published").items} >= {"clean@v1", "clean@v2"}
    assert client.list_takedowns(state="purged").total == 0
    assert client.list_evalsets(state="deprecated").total == 0
    assert [r.state for r in client.list_replicas("clean@v1", state="verified")] == ["verified"]
    for listing in (
        lambda: client.list_releases(state="retracted"),
        lambda: client.list_takedowns(state="done"),
        lambda: client.list_evalsets(state="archived"),
        lambda: client.list_replicas("clean@v1", state="ok"),
    ):
        with pytest.raises(errors.Invalid, match="state"):
            listing()
