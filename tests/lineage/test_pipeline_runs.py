"""Pipelines of stages on a real catalog (SQLite and PostgreSQL) through the service: each stage one run,
grouped by a pipeline run; a rerun skips the stages whose cache key is unchanged and says why the others
run; ``from_stage`` and ``force`` override it; a failed stage fails the pipeline run and the rerun
resumes after the stages that finished; each stage's OpenLineage events name the pipeline run as parent."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from openlineage.client.facet_v2 import parent_run
from openlineage.client.serde import Serde
from sqlalchemy import select

import pipelines.sources as sources
from lineage.catalog import LineageEvent, Run
from lineage.client import Client
from lineage.errors import Invalid
from lineage.service.core import Service
from operators import registry
from tests.support.api_world import BACKENDS, make_settings
from tests.support.dag_pipelines import dag_dict, write_corpus
from tests.support.helpers import write_jsonl


def _actions(result: Any) -> list[tuple[str, str]]:
    return [(st["stage"], st["action"]) for st in result.pipeline_run.stages]


def _plan(service: Service, dag: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return {st.stage: st for st in service.plan_pipeline(dag, **kw).stages}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_rerun_skips_unchanged_stages_and_runs_what_changed(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    service = Service(make_settings(tmp_path, backend, request))
    try:
        paths = write_corpus(tmp_path / "data")
        dag = dag_dict(paths)
        first = service.run_pipeline(dag)
        assert _actions(first) == [("clean-en", "run"), ("clean-zh", "run"), ("merge", "run")]
        assert first.dataset == "mixed" and first.version == 1 and first.pipeline_run.status == "succeeded"
        assert first.run.counts["mixture"]["unit"] == "words"
        stage_runs = service.list_runs().items
        assert {(r.pipeline, r.stage, r.pipeline_run_id) for r in stage_runs} == {
            (f"small-dag.{st}", st, first.pipeline_run.id) for st in ("clean-en", "clean-zh", "merge")
        }
        assert all(r.cache_key and set(r.cache_parts) >= {"inputs", "code_version"} for r in stage_runs)
        merge_run = service.get_run(first.run.id)
        assert merge_run.cache_parts["inputs"] == [
            {"kind": "dataset", "dataset": "mixed-en", "version": 1},
            {"kind": "dataset", "dataset": "mixed-zh", "version": 1},
        ]

        plan = _plan(service, dag)
        assert {st.action for st in plan.values()} == {"skip"} and plan["merge"].version == 1
        assert plan["merge"].reason == f"unchanged since run {first.run.id}" and plan["merge"].changed == []
        assert len(service.list_runs().items) == 3, "a plan runs nothing"
        again = service.run_pipeline(dag)
        assert _actions(again) == [("clean-en", "skip"), ("clean-zh", "skip"), ("merge", "skip")]
        assert again.version == 1 and again.run.id == first.run.id and again.row_count == first.row_count
        assert service.list_versions("mixed").total == 1 and len(service.list_runs().items) == 3

        # one more operator in clean-zh: it reruns (operators and params changed), and so does the merge
        changed = copy.deepcopy(dag)
        changed["stages"][1]["operators"].append({"name": "minhash_dedupe"})
        plan = _plan(service, changed)
        assert plan["clean-en"].action == "skip"
        assert plan["clean-zh"].action == "run" and plan["clean-zh"].changed == ["operators", "params"]
        assert plan["clean-zh"].reason == "changed: operators, params"
        assert plan["merge"].action == "run" and plan["merge"].reason == "upstream stage clean-zh runs"
        third = service.run_pipeline(changed)
        assert _actions(third) == [("clean-en", "skip"), ("clean-zh", "run"), ("merge", "run")]
        merge = third.pipeline_run.stages[2]
        assert merge["changed"] == ["inputs"] and merge["version"] == 2 and third.version == 2

        # a raw file's bytes change: its stage reruns for its inputs
        write_jsonl(paths["en"] / "part-0.jsonl", [{"id": "new", "text": "a new english package text"}])
        plan = _plan(service, changed)
        assert plan["clean-en"].changed == ["inputs"] and plan["clean-zh"].action == "skip"
        assert plan["merge"].reason == "upstream stage clean-en runs"

        # --from and --force
        from_zh = _plan(service, changed, from_stage="clean-zh")
        assert [(s, p.action, p.reason) for s, p in from_zh.items()] == [
            ("clean-en", "run", "changed: inputs"),
            ("clean-zh", "run", "forced"),
            ("merge", "run", "forced"),
        ]
        forced = service.run_pipeline(changed, force=True)
        assert _actions(forced) == [("clean-en", "run"), ("clean-zh", "run"), ("merge", "run")]
        assert {st["reason"] for st in forced.pipeline_run.stages} == {"forced"}
        with pytest.raises(Invalid, match="has no stage 'clean-fr'"):
            service.plan_pipeline(changed, from_stage="clean-fr")

        # the pipeline runs on the SDK (in-process here; the HTTP surface is the same service method)
        with Client(settings=service.settings) as client:
            found = client.list_pipeline_runs(pipeline="small-dag")
            assert found.total == 4 and found.items[0].id == forced.pipeline_run.id
            assert client.get_pipeline_run(first.pipeline_run.id).stages == first.pipeline_run.stages
    finally:
        service.close()


def test_a_failed_stage_fails_the_pipeline_run_and_the_rerun_resumes_after_the_finished_stages(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    registry.register("explode", "tests.support.failing_operators:Explode")
    service = Service(make_settings(tmp_path, "sqlite", request))
    try:
        paths = write_corpus(tmp_path / "data")
        dag = dag_dict(paths)
        dag["stages"][2]["operators"].append({"name": "explode"})
        write_jsonl(paths["zh"] / "part-9.jsonl", [{"id": "boom", "text": "中文 EXPLODE 软件包说明说明说明"}])
        with pytest.raises(Exception, match="explode: found the trigger text"):
            service.run_pipeline(dag)
        (failed,) = service.list_pipeline_runs().items
        assert failed.status == "failed" and "explode" in (failed.error or "")
        assert [(st["stage"], st["action"]) for st in failed.stages] == [("clean-en", "run"), ("clean-zh", "run")]
        merge_runs = service.list_runs(status="failed").items
        assert [r.stage for r in merge_runs] == ["merge"] and merge_runs[0].pipeline_run_id == failed.id

        dag["stages"][2]["operators"].pop()  # fixed
        fixed = service.run_pipeline(dag)
        assert _actions(fixed) == [("clean-en", "skip"), ("clean-zh", "skip"), ("merge", "run")]
        assert fixed.pipeline_run.status == "succeeded"
    finally:
        service.close()


def test_each_stage_is_an_openlineage_job_whose_parent_is_the_pipeline_run(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    service = Service(make_settings(tmp_path, "sqlite", request))
    try:
        result = service.run_pipeline(dag_dict(write_corpus(tmp_path / "data")))
        prun = result.pipeline_run
        ns = service.settings.openlineage_namespace
        with service.catalog.session() as s:
            events = list(s.scalars(select(LineageEvent).order_by(LineageEvent.id)))
            stage_runs = {r.id: r.stage for r in s.scalars(select(Run))}
        by_job: dict[str, list[dict[str, Any]]] = {}
        for e in events:
            by_job.setdefault(e.job_name, []).append(e.payload)
        assert set(by_job) == {"small-dag", "small-dag.clean-en", "small-dag.clean-zh", "small-dag.merge"}
        assert [p["eventType"] for p in by_job["small-dag"]] == ["START", "COMPLETE"]
        assert {p["run"]["runId"] for p in by_job["small-dag"]} == {prun.id}
        # the facet as the openlineage-python client builds it (its own classes, which check the run id is a
        # UUID, and its schema URL), without the empty ``facets`` its classes add
        theirs = Serde.to_dict(
            parent_run.ParentRunFacet(
                run=parent_run.Run(runId=prun.id), job=parent_run.Job(namespace=ns, name="small-dag")
            )
        )
        theirs = {
            k: {kk: vv for kk, vv in v.items() if vv != {}} if isinstance(v, dict) else v for k, v in theirs.items()
        }
        for job in ("small-dag.clean-en", "small-dag.clean-zh", "small-dag.merge"):
            for payload in by_job[job]:
                assert stage_runs[payload["run"]["runId"]] == job.split(".")[1]
                ours = payload["run"]["facets"]["parent"]
                parent_run.ParentRunFacet(run=parent_run.Run(**ours["run"]), job=parent_run.Job(**ours["job"]))
                assert {k: v for k, v in ours.items() if k != "_producer"} == {
                    k: v for k, v in theirs.items() if k != "_producer"
                }
        merge_out = by_job["small-dag.merge"][-1]
        assert [i["name"] for i in merge_out["inputs"]] == ["mixed-en", "mixed-zh"]
        assert [o["name"] for o in merge_out["outputs"]] == ["mixed"]
    finally:
        service.close()


def test_a_stage_that_runs_reads_its_raw_files_for_the_fingerprint_once(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deciding a stage resolves its inputs for the cache key; the run takes them over instead of
    fingerprinting again (each raw file read once, not twice: on an object store, one download)."""
    read: list[str] = []
    real = sources._raw_digest
    monkeypatch.setattr(sources, "_raw_digest", lambda tier, path: read.append(tier.uri(path)) or real(tier, path))
    service = Service(make_settings(tmp_path, "sqlite", request))
    try:
        paths = write_corpus(tmp_path / "data")
        result = service.run_pipeline(dag_dict(paths))
        assert _actions(result) == [("clean-en", "run"), ("clean-zh", "run"), ("merge", "run")]
        assert sorted(read) == sorted(set(read)) and len(read) == 4, read  # 2 files in each of 2 folders
        runs = {r.stage: r for r in service.list_runs().items}
        assert runs["clean-en"].inputs[0]["fingerprint"] == runs["clean-en"].cache_parts["inputs"][0]["fingerprint"]
    finally:
        service.close()
