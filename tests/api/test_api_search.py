"""``search`` (the web view's search box) and the graph "as of" a date with neighbour counts, on every
surface: the SDK over HTTP and in-process (SQLite and PostgreSQL), and the CLI."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import pytest

from lineage.client import BadRequest, Client, NotFound
from tests.support.api_world import World
from tests.support.cli import lineage


def event(when: str, job: str, inputs: list[str], outputs: list[str], ns: str) -> dict:
    """An outside job's RunEvent; ``ns`` keeps each test's nodes apart in the module's shared world."""
    return {
        "eventType": "COMPLETE",
        "eventTime": when,
        "producer": "https://example.org/etl",
        "run": {"runId": str(uuid.uuid4())},
        "job": {"namespace": f"etl-{ns}", "name": job},
        "inputs": [{"namespace": f"s3://lake-{ns}", "name": n} for n in inputs],
        "outputs": [{"namespace": f"warehouse-{ns}", "name": n} for n in outputs],
    }


def kinds(found) -> dict[str, set[str]]:
    return {g.kind: {h.id for h in g.hits} for g in found.groups}


def test_search_finds_each_kind_and_groups_them(client: Client, world: World) -> None:
    assert kinds(client.search("clean")) == {"dataset": {"clean"}, "release": {"clean@v1", "clean@v2"}}
    assert kinds(client.search("CLEAN@V2")) == {"release": {"clean@v2"}}  # case-insensitive
    assert kinds(client.search(world.duplicate)) == {"sample": {world.duplicate}}
    run = world.service.list_runs().items[0].id
    assert kinds(client.search(run[:8])) == {"run": {run}}
    assert "source" in kinds(client.search(world.corpus.name))  # the folder the runs read, a graph node
    inside = str(world.corpus / "sub" / "b.jsonl")  # a file in that folder: found in the releases' tables
    hit = next(g for g in client.search(inside).groups if g.kind == "source").hits[0]
    assert (hit.id, hit.detail) == (inside, "samples in clean@v1 (1), clean@v2 (1)")
    assert client.search("0" * 32).groups == []  # a well-formed sample id that no version has


def test_search_takes_wildcards_literally_and_refuses_empty_text(client: Client) -> None:
    assert client.search("%").groups == [] and client.search("_").groups == []
    with pytest.raises(BadRequest):
        client.search("   ")


def test_search_limits_each_kind_and_says_how_many_it_found(client: Client) -> None:
    found = {g.kind: g for g in client.search("clean", limit=1).groups}
    assert found["release"].total == 2 and len(found["release"].hits) == 1


def test_the_cli_searches(world: World) -> None:
    out = lineage(
        world.settings.home, "search", "clean", "--json", LINEAGE_CATALOG_URL=world.settings.catalog_url or ""
    )
    assert {g["kind"] for g in json.loads(out.stdout)["groups"]} == {"dataset", "release"}


def test_the_graph_as_of_a_date_and_neighbour_counts(client: Client, world: World) -> None:
    svc, ns = world.service, uuid.uuid4().hex[:8]
    svc.ingest_event(event("2020-01-01T00:00:00Z", "nightly", ["raw"], ["events"], ns))
    svc.ingest_event(event("2024-06-01T00:00:00Z", "nightly", ["raw", "extra"], ["events"], ns))
    node, job_id, lake = f"dataset:warehouse-{ns}:events", f"job:etl-{ns}:nightly", f"dataset:s3://lake-{ns}"
    now = client.lineage_graph(node, depth=2)
    assert {n.id for n in now.graph} == {node, job_id, f"{lake}:raw", f"{lake}:extra"}
    job = next(n for n in now.graph if n.type == "JOB")
    assert (job.upstream, job.downstream) == (2, 1)
    one_hop = client.lineage_graph(node, depth=0)
    assert [(n.id, n.upstream, n.downstream, n.inEdges) for n in one_hop.graph] == [(node, 1, 0, [])]
    then = client.lineage_graph(node, depth=2, as_of=datetime(2022, 1, 1, tzinfo=UTC))
    assert {n.id for n in then.graph} == {node, job_id, f"{lake}:raw"}
    assert next(n for n in then.graph if n.type == "JOB").upstream == 1
    naive = client.lineage_graph(node, depth=2, as_of=datetime(2022, 1, 1))  # no zone: UTC
    assert naive == then
    with pytest.raises(NotFound, match="was not in the lineage graph yet"):
        client.lineage_graph(node, as_of=datetime(2019, 12, 31, tzinfo=UTC))
    # an event that arrives later but happened earlier changes the past: the times are read again
    svc.ingest_event(event("2021-03-01T00:00:00Z", "backfill", ["old"], ["events"], ns))
    again = client.lineage_graph(node, depth=2, as_of=datetime(2022, 1, 1, tzinfo=UTC))
    assert f"job:etl-{ns}:backfill" in {n.id for n in again.graph}
