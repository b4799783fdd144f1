"""OpenLineage: the real openlineage-python client reports to a real uvicorn server; graph queries
answer in Marquez's shape, including for namespaces that contain ':'."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.facet_v2 import schema_dataset
from openlineage.client.transport.http import ApiKeyTokenProvider, HttpConfig, HttpTransport

from api.app import create_app
from lineage.service.core import Service
from tests.support.api_world import BACKENDS, ServerThread, make_settings

PRODUCER = "https://example.com/tests"


@pytest.fixture(params=BACKENDS)
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Service, ServerThread]]:
    service = Service(make_settings(tmp_path, request.param, request))
    with ServerThread(create_app(service.settings, service)) as srv:
        yield service, srv
    service.close()


def ol_client(url: str, token: str | None = None) -> OpenLineageClient:
    config = HttpConfig(url=url, timeout=10, retry={"total": 0})
    if token:
        config = HttpConfig(url=url, timeout=10, retry={"total": 0}, auth=ApiKeyTokenProvider({"apiKey": token}))
    return OpenLineageClient(transport=HttpTransport(config))


def emit(
    client: OpenLineageClient, job: tuple[str, str], inputs: list[tuple[str, str]], outputs: list[tuple[str, str]]
):
    run = Run(runId=str(uuid.uuid4()))
    now = datetime.now(UTC).isoformat()
    fields = schema_dataset.SchemaDatasetFacet(fields=[schema_dataset.SchemaDatasetFacetFields(name="id", type="int")])
    for state in (RunState.START, RunState.COMPLETE):
        client.emit(
            RunEvent(
                eventType=state,
                eventTime=now,
                run=run,
                job=Job(namespace=job[0], name=job[1]),
                producer=PRODUCER,
                inputs=[InputDataset(namespace=ns, name=n) for ns, n in inputs],
                outputs=[OutputDataset(namespace=ns, name=n, facets={"schema": fields}) for ns, n in outputs],
            )
        )
    return run.runId


def test_openlineage_python_client_reports_and_graph_answers(served: tuple[Service, ServerThread]) -> None:
    service, srv = served
    client = ol_client(srv.url)
    s3, pg = "s3://raw-bucket", "postgres://db.example:5432"
    emit(client, ("airflow", "extract"), [(s3, "dumps/2026/part-0.json")], [(pg, "warehouse.public.docs")])
    emit(client, ("spark", "clean"), [(pg, "warehouse.public.docs")], [("lineage-ledger", "clean-docs")])
    emit(client, ("spark", "stats"), [("lineage-ledger", "clean-docs")], [("lineage-ledger", "doc-stats")])

    with httpx.Client(base_url=srv.url) as http:
        full = http.get("/api/v1/lineage", params={"nodeId": f"dataset:{pg}:warehouse.public.docs", "depth": 10})
        assert full.status_code == 200, full.text
        nodes = {n["id"]: n for n in full.json()["graph"]}
        assert set(nodes) == {
            f"dataset:{s3}:dumps/2026/part-0.json",
            "job:airflow:extract",
            f"dataset:{pg}:warehouse.public.docs",
            "job:spark:clean",
            "dataset:lineage-ledger:clean-docs",
            "job:spark:stats",
            "dataset:lineage-ledger:doc-stats",
        }
        docs = nodes[f"dataset:{pg}:warehouse.public.docs"]
        assert docs["type"] == "DATASET" and docs["data"]["id"] == {"namespace": pg, "name": "warehouse.public.docs"}
        assert docs["inEdges"] == [{"origin": "job:airflow:extract", "destination": docs["id"]}]
        assert docs["outEdges"] == [{"origin": docs["id"], "destination": "job:spark:clean"}]
        (field,) = docs["data"]["facets"]["schema"]["fields"]
        assert (field["name"], field["type"]) == ("id", "int")
        assert nodes["job:spark:clean"]["type"] == "JOB"

        near = http.get("/api/v1/lineage", params={"nodeId": f"dataset:{pg}:warehouse.public.docs", "depth": 1})
        assert {n["id"] for n in near.json()["graph"]} == {
            f"dataset:{pg}:warehouse.public.docs",
            "job:airflow:extract",
            "job:spark:clean",
        }
        job = http.get("/api/v1/lineage", params={"nodeId": "job:spark:stats", "depth": 1}).json()["graph"]
        assert {n["id"] for n in job} == {
            "job:spark:stats",
            "dataset:lineage-ledger:clean-docs",
            "dataset:lineage-ledger:doc-stats",
        }
        missing = http.get("/api/v1/lineage", params={"nodeId": "dataset:nope:nothing"})
        assert missing.status_code == 404 and "not in the lineage graph" in missing.json()["detail"]
    assert (
        service.lineage_graph("dataset:lineage-ledger:doc-stats", 2).graph[-1].id == "dataset:lineage-ledger:clean-docs"
    )


def test_openlineage_client_with_a_token(served: tuple[Service, ServerThread]) -> None:
    service, srv = served
    token = service.create_token("spark", "writer").token
    emit(ol_client(srv.url, token), ("spark", "job"), [], [("ns", "out")])
    with pytest.raises(Exception, match="401"):  # no token once auth is on: the client sees the refusal
        emit(ol_client(srv.url), ("spark", "job2"), [], [("ns", "out2")])
    assert [n.id for n in service.lineage_graph("dataset:ns:out", 1).graph] == ["dataset:ns:out", "job:spark:job"]


def test_malformed_events_are_4xx(served: tuple[Service, ServerThread]) -> None:
    _service, srv = served
    with httpx.Client(base_url=srv.url) as http:
        assert (
            http.post("/api/v1/lineage", content=b"{not json", headers={"content-type": "application/json"}).status_code
            == 422
        )
        no_run = http.post(
            "/api/v1/lineage", json={"eventTime": "2026-01-01T00:00:00Z", "job": {"namespace": "a", "name": "b"}}
        )
        assert no_run.status_code == 422 and "run" in no_run.text
        bad_time = {
            "eventTime": "yesterday",
            "run": {"runId": "x"},
            "job": {"namespace": "a", "name": "b"},
        }
        assert http.post("/api/v1/lineage", json=bad_time).status_code == 422
        assert http.post("/api/v1/lineage", json=[1, 2]).status_code == 422


def test_event_time_must_be_an_rfc3339_date_time(served: tuple[Service, ServerThread]) -> None:
    """OpenLineage's eventTime is a date-time string with a zone; pydantic alone took 0 (or "0") as a
    Unix time."""
    _service, srv = served
    event = {"run": {"runId": "x"}, "job": {"namespace": "a", "name": "b"}}
    with httpx.Client(base_url=srv.url) as http:
        naive, no_time, no_such_month = "2026-01-01T00:00:00", "2026-01-01", "2026-13-01T00:00:00Z"
        for bad in [0, 1767225600, "0", "1767225600", naive, no_time, no_such_month, None]:
            refused = http.post("/api/v1/lineage", json={**event, "eventTime": bad})
            assert refused.status_code == 422 and "eventTime" in refused.text, bad
        for good in ["2026-01-01T00:00:00Z", "2026-01-01t10:30:00.123456+02:00", "2026-06-30T23:59:59-07:00"]:
            assert http.post("/api/v1/lineage", json={**event, "eventTime": good}).status_code == 201, good


def test_a_dataset_named_many_times_in_an_event_is_one_node(served: tuple[Service, ServerThread]) -> None:
    """10,000 outputs naming one dataset (the schema's limit) fold into one node and one edge, with the
    facets merged in order, in well under the time a client waits (this took 20 s)."""
    service, _srv = served
    outputs = [{"namespace": "ns", "name": "same", "facets": {f"f{i % 3}": {"i": i}}} for i in range(10_000)]
    started = time.monotonic()
    job = {"namespace": "ns", "name": "fan"}
    accepted = service.ingest_event(
        {"eventTime": "2026-01-01T00:00:00Z", "run": {"runId": "r"}, "job": job, "outputs": outputs}
    )
    took = time.monotonic() - started
    assert accepted.outputs == 10_000 and took < 5, took
    graph = {n.id: n for n in service.lineage_graph("job:ns:fan", 1).graph}
    assert set(graph) == {"job:ns:fan", "dataset:ns:same"}
    assert graph["dataset:ns:same"].data["facets"] == {"f0": {"i": 9999}, "f1": {"i": 9997}, "f2": {"i": 9998}}
    assert len(graph["job:ns:fan"].outEdges) == 1


def test_graph_after_new_events_equals_a_full_reload(served: tuple[Service, ServerThread]) -> None:
    """The cached graph is refreshed with only what new events changed; the answer must be the
    same as loading everything again."""
    from lineage.openlineage import GraphCache

    service, _srv = served

    def event(job: str, ins: list[str], outs: list[str], facets: dict | None = None) -> dict:
        return {
            "eventType": "COMPLETE",
            "eventTime": "2026-01-01T00:00:00Z",
            "run": {"runId": str(uuid.uuid4())},
            "job": {"namespace": "ns", "name": job},
            "inputs": [{"namespace": "ns", "name": n} for n in ins],
            "outputs": [{"namespace": "ns", "name": n, "facets": facets or {}} for n in outs],
        }

    service.ingest_event(event("j1", ["a"], ["b"]))
    before = service.lineage_graph("dataset:ns:a", 10)
    assert {n.id for n in before.graph} == {"dataset:ns:a", "job:ns:j1", "dataset:ns:b"}
    service.ingest_event(event("j2", ["b"], ["c"], {"documentation": {"description": "new"}}))
    service.ingest_event(event("j1", ["a", "z"], ["b"], {"documentation": {"description": "b again"}}))
    refreshed = service.lineage_graph_json("dataset:ns:a", 10)
    with service.catalog.session() as s:
        reloaded = GraphCache().get(s).subgraph_json(GraphCache().get(s).resolve("dataset:ns:a"), 10)
    assert refreshed == reloaded
    nodes = {n.id: n for n in service.lineage_graph("dataset:ns:a", 10).graph}
    assert set(nodes) == {"dataset:ns:a", "dataset:ns:z", "job:ns:j1", "dataset:ns:b", "job:ns:j2", "dataset:ns:c"}
    assert nodes["dataset:ns:b"].data["facets"]["documentation"]["description"] == "b again"
