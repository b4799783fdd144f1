"""Eval results traced to data (issue #19, item 3) on SQLite and a real PostgreSQL, over a real uvicorn
server and in-process: for an eval run, the releases its model trained on and the eval items they held;
for a release, the models trained on it and their results."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from lineage.client import Client
from lineage.errors import Invalid, NotFound
from lineage.service.core import Service
from lineage.settings import Settings
from operators.schema import sample_id
from tests.support.api_world import BACKENDS, make_settings
from tests.support.cli import lineage
from tests.support.evalset_items import LONG_EN, items_v1, write_items
from tests.support.helpers import write_jsonl


@dataclass
class World:
    settings: Settings
    service: Service
    run_id: int
    unchecked_run_id: int


def _publish(service: Service, root: Path, name: str, texts: list[str]) -> None:
    write_jsonl(root / name / "data.jsonl", [{"id": f"{name}{i}", "text": t} for i, t in enumerate(texts)])
    inputs = [{"dataset": name, "path": str(root / name), "id_field": "id"}]
    service.run_pipeline({"name": name, "inputs": inputs, "output": {"dataset": f"{name}-out"}})
    service.create_release({"name": f"{name}-out", "tag": "v1"})


@pytest.fixture(scope="module", params=BACKENDS)
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp(f"evalruns-{request.param}")
    settings = make_settings(tmp, request.param, request)
    service = Service(settings)
    _publish(service, tmp, "early", ["a document published before any eval set was registered, about compilers"])
    items = write_items(tmp / "items.jsonl", items_v1())
    service.register_evalset("mmlu", str(items), text_fields=["question", "choices"], id_field="id")
    _publish(service, tmp, "web", [f"notes: {LONG_EN} Mars Venus Jupiter Saturn", "an unrelated page about linkers"])
    for rank in range(2):
        service.record_read("web-out@v1", {"job": "train-7", "world_size": 2, "rank": rank})
    service.record_read("early-out@v1", {"job": "train-8", "world_size": 1, "rank": 0})
    body = {"model": "m1", "checkpoint": "step-1000", "evalset": "mmlu:v1", "metrics": {"acc": 0.71}}
    run = service.record_eval_run({**body, "training_jobs": ["train-7"]})
    unchecked = service.record_eval_run({**body, "checkpoint": "step-2000", "training_jobs": ["train-7", "train-8"]})
    yield World(settings, service, run.id, unchecked.id)
    service.close()


def test_an_eval_run_leads_to_the_releases_and_the_items_they_held(world: World, client: Client) -> None:
    found = client.get_eval_run(world.run_id)
    assert (found.eval_run.model, found.eval_run.checkpoint, found.eval_run.evalset) == ("m1", "step-1000", "mmlu:v1")
    assert found.eval_run.metrics == {"acc": 0.71}
    (trained,) = found.releases
    assert (trained.release, trained.jobs) == ("web-out@v1", ["train-7"])
    (state,) = trained.contamination
    assert (state.evalset, state.checked, state.contaminated_items) == ("mmlu:v1", True, 1)
    assert state.items == [sample_id("mmlu", "id:q1")]
    assert found.contaminated is True


def test_a_release_never_checked_is_unknown_not_clean(world: World, client: Client) -> None:
    found = client.get_eval_run(world.unchecked_run_id)
    states = {t.release: t.contamination[0] for t in found.releases}
    assert set(states) == {"early-out@v1", "web-out@v1"}
    assert states["early-out@v1"].checked is False and states["early-out@v1"].contaminated_items is None
    assert found.contaminated is True  # web-out@v1 held an item, whatever early-out holds


def test_a_release_leads_to_the_models_trained_on_it(world: World, client: Client) -> None:
    found = client.release_evals("web-out@v1")
    assert found.jobs == ["train-7"]
    assert [(e.job, e.eval_run.checkpoint) for e in found.evals] == [("train-7", "step-1000"), ("train-7", "step-2000")]
    early = client.release_evals("early-out@v1")
    assert [(e.job, e.eval_run.checkpoint) for e in early.evals] == [("train-8", "step-2000")]


def test_bad_eval_runs_are_refused(client: Client) -> None:
    with pytest.raises(NotFound):
        client.record_eval_run("m", "c", "nope:v1")
    with pytest.raises(NotFound):
        client.get_eval_run(999_999)
    with pytest.raises(Invalid):
        client.record_eval_run("m", "c", "mmlu@v1")


def test_cli_eval_verbs(world: World) -> None:
    env = {"LINEAGE_CATALOG_URL": world.settings.catalog_url or ""}
    home = world.settings.home
    out = lineage(home, "eval", "record", "--model", "m2", "--checkpoint", "final", "--evalset", "mmlu:v1",
                  "--metric", "acc=0.5", "--job", "train-7", "--json", **env)  # fmt: skip
    recorded = json.loads(out.stdout)
    shown = json.loads(lineage(home, "eval", "show", str(recorded["id"]), "--json", **env).stdout)
    assert shown["contaminated"] is True and shown["releases"][0]["release"] == "web-out@v1"
    evals = json.loads(lineage(home, "release", "evals", "web-out@v1", "--json", **env).stdout)
    assert "final" in {e["eval_run"]["checkpoint"] for e in evals["evals"]}


def test_models_and_eval_sets_are_lineage_graph_nodes(world: World, client: Client) -> None:
    """training data -> training job -> model -> eval job <- eval set, in the dataset-level graph."""
    ns = world.settings.openlineage_namespace
    graph = client.lineage_graph(f"dataset:{ns}.models:m1@step-1000", depth=4)
    ids = {node.id for node in graph.graph}
    assert {
        f"job:{ns}:train-7",
        f"dataset:{ns}:web-out",
        f"job:{ns}:eval/m1@step-1000/mmlu:v1",
        f"dataset:{ns}.evalsets:mmlu:v1",
    } <= ids
    # and on to the catalog's nodes (lineage.catalog_graph): the reader of the release, the eval set version
    assert {f"model:{ns}:train-7", f"release:{ns}:web-out@v1", f"evalset_version:{ns}:mmlu:v1"} <= ids


def test_an_openlineage_event_with_a_model_and_an_eval_set_is_an_eval_run(world: World, client: Client) -> None:
    ns = world.settings.openlineage_namespace
    checkpoint = f"ol-{client._http is None}"  # one per client: the world is shared
    event = {
        "eventType": "COMPLETE",
        "eventTime": "2026-12-01T12:00:00Z",
        "producer": "https://example.org/evaluator",
        "run": {
            "runId": f"ev-{checkpoint}",
            "facets": {"metrics": {"metrics": {"acc": 0.5}}, "trainingJobs": {"jobs": ["train-7"]}},
        },
        "job": {"namespace": "evals", "name": "mmlu-harness"},
        "inputs": [
            {"namespace": f"{ns}.models", "name": f"m3@{checkpoint}"},
            {"namespace": f"{ns}.evalsets", "name": "mmlu:v1"},
        ],
    }
    client.post_lineage_event(event)
    (run,) = [e.eval_run for e in client.release_evals("web-out@v1").evals if e.eval_run.checkpoint == checkpoint]
    assert (run.model, run.evalset, run.metrics, run.recorded_by) == ("m3", "mmlu:v1", {"acc": 0.5}, event["producer"])
    assert client.get_eval_run(run.id).contaminated is True
    client.post_lineage_event({**event, "inputs": event["inputs"][:1], "run": {"runId": "not-an-eval"}})  # lineage only
    evals = client.release_evals("web-out@v1").evals
    assert len([e for e in evals if e.eval_run.checkpoint == checkpoint]) == 1
