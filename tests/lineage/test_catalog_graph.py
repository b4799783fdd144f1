"""The catalog's entities in the one lineage graph (``GET /lineage``): a pipeline run, two releases, an
eval set checked at publish, a recorded read, a training export, a deprecation and a takedown's withdrawn
release give their typed nodes and edges, with the right counts, hidden "as of" before they existed, and
seen by the cached graph as soon as they are recorded. In-process on SQLite and PostgreSQL, and over
HTTP."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import httpx
import pytest

from api.app import create_app
from lineage.errors import NotFound
from lineage.runs import Runner
from lineage.service import schemas as S
from lineage.service.core import Service
from operators.schema import sample_id
from tests.support.api_world import BACKENDS, ServerThread, build_corpus, make_settings, spec
from tests.support.evalset_items import items_v1, write_items
from tests.support.helpers import write_jsonl
from tests.support.training_export import train_tokenizer

NS = "lineage-ledger"


@dataclass
class World:
    service: Service
    runs: list[str]
    between: datetime  # after clean@v1 was published, before the eval set and the second run
    before_read: S.Graph  # the release's neighbourhood, asked before its read was recorded
    deprecated: S.Graph  # clean@v1 asked after its deprecation (the takedown then withdraws it)
    export_id: str
    successor: str


def _pause() -> datetime:
    """A moment strictly between what came before and what comes next (timestamps are microseconds)."""
    time.sleep(0.02)
    at = datetime.now(UTC)
    time.sleep(0.02)
    return at


@pytest.fixture(scope="module", params=BACKENDS)
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp(f"catalog-graph-{request.param}")
    settings = make_settings(tmp, request.param, request)
    service = Service(settings)
    corpus = build_corpus(tmp / "raw")
    runner = Runner(settings, service.catalog)
    runs = [runner.run(spec(corpus)).run_id]
    service.create_release({"name": "clean", "tag": "v1"})
    between = _pause()
    items = write_items(tmp / "items.jsonl", items_v1())
    service.register_evalset("mmlu", str(items), text_fields=["question", "choices"], id_field="id")
    write_jsonl(corpus / "c.jsonl", [{"id": "added", "text": "a brand new document about compilers and linkers"}])
    runs.append(runner.run(spec(corpus)).run_id)
    service.create_release({"name": "clean", "tag": "v2"})
    before_read = service.lineage_graph(f"release:{NS}:clean@v2", depth=1)  # fills the graph cache
    for rank in range(2):
        service.record_read("clean@v2", {"job": "train-1", "world_size": 2, "rank": rank})
    tokenizer = train_tokenizer(tmp / "tokenizer.json")
    exported = service.export_release("clean@v2", tmp / "out", "megatron", tokenizer=tokenizer, shard_size=16 << 10)
    service.deprecate_release("clean@v1", "superseded by v2")
    deprecated = service.lineage_graph(f"release:{NS}:clean@v1", depth=0)
    selector = {"sample_ids": [sample_id("raw", "id:libc6")]}
    request_ = service.create_takedown({"selector": selector, "kind": "privacy", "reason": "a phone number"})
    applied = service.apply_takedown(request_.id)
    (successor,) = {r.successor for r in applied.successors if r.release == "clean@v2"}
    yield World(service, runs, between, before_read, deprecated, exported.export_id or "", successor)
    service.close()


def ids(graph: S.Graph) -> set[str]:
    return {n.id for n in graph.graph}


def node(graph: S.Graph, nid: str) -> S.GraphNode:
    (found,) = [n for n in graph.graph if n.id == nid]
    return found


def test_a_release_neighbourhood_has_its_version_eval_set_readers_and_exports(world: World) -> None:
    release = f"release:{NS}:clean@v2"
    graph = world.service.lineage_graph(release, depth=1)
    assert ids(graph) == {
        release,
        f"version:{NS}:clean:v2",
        f"evalset_version:{NS}:mmlu:v1",
        f"model:{NS}:train-1",
        f"export:{NS}:{world.export_id}",
    }
    me = node(graph, release)
    assert (me.type, me.upstream, me.downstream) == ("RELEASE", 2, 2)
    assert me.data["facets"]["state"] == "withdrawn" and me.data["facets"]["successor"] == world.successor
    reader = node(graph, f"model:{NS}:train-1")
    assert (reader.type, reader.upstream, reader.downstream, reader.data["facets"]["reads"]) == ("MODEL", 1, 0, 2)
    export = node(graph, f"export:{NS}:{world.export_id}")
    assert export.data["facets"]["format"] == "megatron"
    # and on to the dataset the export's OpenLineage event wrote, one node
    assert {e.destination for e in export.outEdges} == set() and export.downstream == 1
    wider = world.service.lineage_graph(f"export:{NS}:{world.export_id}", depth=1)
    written = f"dataset:{NS}:clean@v2/megatron/{world.export_id}"
    assert (f"export:{NS}:{world.export_id}", written) in {
        (e.origin, e.destination) for e in node(wider, written).inEdges
    }
    edges = {(e.origin, e.destination) for e in me.inEdges + me.outEdges}
    assert edges == {
        (f"version:{NS}:clean:v2", release),
        (f"evalset_version:{NS}:mmlu:v1", release),
        (release, f"model:{NS}:train-1"),
        (release, f"export:{NS}:{world.export_id}"),
    }


def test_the_cached_graph_sees_entities_recorded_after_it_was_built(world: World) -> None:
    assert f"model:{NS}:train-1" not in ids(world.before_read)  # asked before the read was recorded
    assert node(world.before_read, f"release:{NS}:clean@v2").data["facets"]["state"] == "published"
    assert node(world.deprecated, f"release:{NS}:clean@v1").data["facets"]["state"] == "deprecated"
    now = world.service.lineage_graph(f"release:{NS}:clean@v1", depth=0)
    assert node(now, f"release:{NS}:clean@v1").data["facets"]["state"] == "withdrawn"


def test_a_dataset_leads_to_its_versions_their_runs_and_releases(world: World) -> None:
    graph = world.service.lineage_graph(f"dataset:{NS}:clean", depth=2)
    versions = {n.id for n in graph.graph if n.type == "VERSION"}
    assert versions == {f"version:{NS}:clean:v{k}" for k in (1, 2, 3, 4)}  # v3, v4: the takedown's successors
    dataset = node(graph, f"dataset:{NS}:clean")
    # its versions and the export's OpenLineage job; the OpenLineage job that wrote it: one node for both
    assert {e.destination for e in dataset.outEdges} == versions | {f"job:{NS}:export clean@v2"}
    assert (dataset.downstream, dataset.upstream) == (5, 1)
    assert f"job:{NS}:api-test" in ids(graph)  # one node with the OpenLineage dataset, not a second one
    v1 = node(graph, f"version:{NS}:clean:v1")
    assert (v1.upstream, v1.downstream) == (2, 2)  # dataset and its run; release clean@v1, the takedown's run
    takedown_run = next(
        n
        for n in graph.graph
        if n.type == "RUN"
        and n.id != f"run:{NS}:{world.runs[0]}"
        and (f"version:{NS}:clean:v1", n.id) in {(e.origin, e.destination) for e in n.inEdges}
    )
    assert takedown_run.downstream == 1  # the successor's version, made from v1
    assert f"run:{NS}:{world.runs[0]}" in ids(graph) and f"release:{NS}:clean@v1" in ids(graph)
    run = node(graph, f"run:{NS}:{world.runs[0]}")
    assert run.type == "RUN" and run.data["latestRunId"] == world.runs[0]
    assert {e.origin for e in run.inEdges} == {f"job:{NS}:api-test"}  # the run's OpenLineage job
    job = node(graph, f"job:{NS}:api-test")
    assert {e.destination for e in job.outEdges} >= {f"dataset:{NS}:clean", f"run:{NS}:{world.runs[0]}"}
    assert run.data["facets"]["pipeline"] == "api-test"


def test_the_successor_of_a_withdrawn_release_is_in_the_graph(world: World) -> None:
    graph = world.service.lineage_graph(f"release:{NS}:{world.successor}", depth=1)
    me = node(graph, f"release:{NS}:{world.successor}")
    assert me.data["facets"]["state"] == "published" and me.upstream == 2  # its version; the eval set checked
    assert f"evalset_version:{NS}:mmlu:v1" in ids(graph)
    (version,) = [n for n in graph.graph if n.type == "VERSION"]
    assert version.id.startswith(f"version:{NS}:clean:v")


def test_as_of_hides_what_was_created_later(world: World) -> None:
    then = world.service.lineage_graph(f"dataset:{NS}:clean", depth=3, as_of=world.between)
    assert ids(then) >= {f"version:{NS}:clean:v1", f"release:{NS}:clean@v1", f"run:{NS}:{world.runs[0]}"}
    assert not {n.id for n in then.graph if n.type in ("EVALSET_VERSION", "MODEL", "EXPORT")}
    assert f"version:{NS}:clean:v2" not in ids(then) and f"release:{NS}:clean@v2" not in ids(then)
    assert node(then, f"dataset:{NS}:clean").downstream == 1
    with pytest.raises(NotFound, match="not in the lineage graph yet"):
        world.service.lineage_graph(f"release:{NS}:clean@v2", depth=1, as_of=world.between)


def test_over_http_the_one_endpoint_answers_the_same(world: World) -> None:
    service = world.service
    with ServerThread(create_app(service.settings, service)) as srv:
        url = f"{srv.url}/api/v1/lineage"
        got = httpx.get(url, params={"nodeId": f"release:{NS}:clean@v2", "depth": 1}, timeout=30)
        assert got.status_code == 200, got.text
        assert S.Graph.model_validate(got.json()) == service.lineage_graph(f"release:{NS}:clean@v2", depth=1)
        then = {"nodeId": f"release:{NS}:clean@v2", "depth": 1, "asOf": world.between.isoformat()}
        assert httpx.get(url, params=then, timeout=30).status_code == 404
        bad = httpx.get(url, params={"nodeId": "sample:x:y"}, timeout=30)
        assert bad.status_code == 422


def test_a_catalog_change_reloads_only_the_catalog_part_and_an_event_only_the_events(world: World) -> None:
    """Runs last: it adds a reader and an event to the module's world."""
    service, cache = world.service, world.service.graph_cache
    with service.catalog.session() as s:
        first = cache.get(s)
        assert cache.get(s) is first  # nothing changed: the same index
    service.record_read(world.successor, {"job": "train-2", "world_size": 1, "rank": 0})
    with service.catalog.session() as s:
        second = cache.get(s)
    assert second is not first and second.base is first.base  # the OpenLineage part kept as it was
    assert second.resolve(f"model:{NS}:train-2") is not None and first.resolve(f"model:{NS}:train-2") is None
    event = {
        "eventType": "COMPLETE",
        "eventTime": datetime.now(UTC).isoformat(),
        "run": {"runId": "0190aaaa-0000-7000-8000-000000000042"},
        "job": {"namespace": "trainer", "name": "train-2"},
        "inputs": [{"namespace": NS, "name": "clean"}],
    }
    service.ingest_event(event)
    with service.catalog.session() as s:
        third = cache.get(s)
    assert third.base is not second.base and third.overlay is second.overlay  # the catalog part kept
    graph = service.lineage_graph(f"release:{NS}:{world.successor}", depth=1)
    assert node(graph, f"release:{NS}:{world.successor}").downstream == 1
    assert node(service.lineage_graph(f"dataset:{NS}:clean", depth=1), f"dataset:{NS}:clean").downstream == 6
